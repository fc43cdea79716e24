// prom-client's process metrics as the daemon starts them: the OpenTelemetry API their CPU metric
// requires stays a stand-in until something uses it, and then is the real package in every way.
import { createRequire } from 'node:module'
import { types } from 'node:util'
import t from 'tap'
import { deferOtelApi, otelApiPathForPromClient } from '../../../src/observability/otel-api.js'
import { collectDefaultMetrics, Registry } from '../../../src/observability/prom-client.js'

const require = createRequire(import.meta.url)
const otelFiles = (): string[] => Object.keys(require.cache).filter((f) => f.includes('/@opentelemetry/api/'))

t.test('process metrics start and report CPU without loading the OpenTelemetry API', async (t) => {
  const file = otelApiPathForPromClient()
  t.same(otelFiles(), [], 'nothing in this test process loaded the package before the process metrics')
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  t.ok(
    Object.keys(require.cache).some((f) => f.endsWith('/prom-client/lib/metrics/processCpuTotal.js')),
    "prom-client's CPU metric, which requires the package, was loaded",
  )
  t.match(await registry.metrics(), /^process_cpu_user_seconds_total \d/m, 'CPU time is reported')
  t.same(otelFiles(), [file], 'only the stand-in is in the module cache')
  t.ok(types.isProxy(require.cache[file]?.exports), 'and it is the stand-in')
})

t.test('the first use loads the real package; from then on the stand-in is the real exports', async (t) => {
  const file = otelApiPathForPromClient()
  const standIn = require(file) as Record<string, unknown>
  t.ok(types.isProxy(standIn), 'what a require() gets before any use')
  t.equal(otelFiles().length, 1, 'not loaded by being required')

  const trace = standIn['trace'] as { getSpan: unknown }
  t.type(trace.getSpan, 'function', 'a property of the real package')
  t.ok(otelFiles().length > 10, `the real package's files are loaded (${otelFiles().length})`)
  const real = require.cache[file]?.exports as Record<string, unknown>
  t.notOk(types.isProxy(real), 'the module cache holds the real exports now')
  t.equal(standIn['trace'], real['trace'], 'the stand-in reads through to them')
  t.same(Object.keys(standIn), Object.keys(real), 'and lists the same keys')
  t.ok('context' in standIn, '`in` answers for the real exports')
  t.equal(Object.getPrototypeOf(standIn), Object.getPrototypeOf(real), 'and the same prototype')

  deferOtelApi()
  t.equal(require.cache[file]?.exports, real, 'a package already loaded is left as it is')
})
