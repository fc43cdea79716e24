/**
 * @opentelemetry/api, loaded when something first uses it rather than when
 * prom-client's process metrics start. prom-client's process CPU metric
 * (lib/metrics/processCpuTotal.js) requires the package at the top of its file
 * but calls it only for exemplars, which the provider never turns on. Loading
 * it anyway meant 51 more files resolved, read and compiled a second after
 * every start (16–24 ms of CPU, measured on a busy machine) and 0.6–1.0 MiB
 * more idle RSS (Node 26 / 20, daemon started with the image's flags,
 * 2026-12-02; docs/architecture.md).
 *
 * So, before prom-client's default metrics are first loaded, the file that
 * `require('@opentelemetry/api')` resolves to from prom-client is entered in
 * Node's module cache (require.cache, documented for adding entries) as an
 * on-demand stand-in: its first use of any kind (a property read, `in`,
 * `Object.keys`) loads the real package in its place, and from then on every
 * use of the stand-in goes to the real exports. Nothing that uses the package
 * sees a difference but when it was loaded. A package already loaded is left
 * as it is.
 */
import { createRequire } from 'node:module'
import { enterStandIn } from '../util/module-cache.js'

const require = createRequire(import.meta.url)

/** The file prom-client's process CPU metric gets for `require('@opentelemetry/api')`. */
export function otelApiPathForPromClient(): string {
  const cpuMetric = require.resolve('prom-client/lib/metrics/processCpuTotal.js')
  return createRequire(cpuMetric).resolve('@opentelemetry/api')
}

/** Enters the on-demand stand-in in the module cache, unless the package is loaded already; idempotent. */
export function deferOtelApi(): void {
  const file = otelApiPathForPromClient()
  let real: object | undefined
  const load = (): object => {
    if (real === undefined) {
      // Out of the cache first, so that require() loads the package's own file into it.
      delete require.cache[file]
      real = require(file) as object
    }
    return real
  }
  enterStandIn(
    file,
    new Proxy(
      {},
      {
        get: (_target, key) => Reflect.get(load(), key) as unknown,
        set: (_target, key, value) => Reflect.set(load(), key, value),
        has: (_target, key) => Reflect.has(load(), key),
        ownKeys: () => Reflect.ownKeys(load()),
        // The stand-in's target has none of these keys: a proxy may only report them as configurable.
        getOwnPropertyDescriptor: (_target, key) => {
          const descriptor = Reflect.getOwnPropertyDescriptor(load(), key)
          return descriptor && { ...descriptor, configurable: true }
        },
        getPrototypeOf: () => Reflect.getPrototypeOf(load()),
      },
    ),
  )
}
