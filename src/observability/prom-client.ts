/**
 * prom-client's metric classes, loaded one file each instead of through its
 * index. The index also loads its Pushgateway (http, https, url), cluster
 * aggregation (cluster, child_process, dgram), Summary (a t-digest) and the
 * default process metrics (perf_hooks, v8) — none of which the provider uses
 * before its socket serves. Loading only these cuts ~20 ms of CPU and ~3 MiB
 * from every start-up (npm run bench, footprint; docs/architecture.md).
 * The types still come from the package's own declarations.
 */
import { createRequire } from 'node:module'
import type * as Prom from 'prom-client'
import { deferOtelApi } from './otel-api.js'

const load = createRequire(import.meta.url)

export const Registry = load('prom-client/lib/registry') as typeof Prom.Registry
export const Counter = load('prom-client/lib/counter') as typeof Prom.Counter
export const Gauge = load('prom-client/lib/gauge') as typeof Prom.Gauge
export const Histogram = load('prom-client/lib/histogram') as typeof Prom.Histogram
// The same names as types, so that callers write `Counter<'label'>` as with the index.
export type Registry = Prom.Registry
export type Counter<T extends string = string> = Prom.Counter<T>
export type Gauge<T extends string = string> = Prom.Gauge<T>
export type Histogram<T extends string = string> = Prom.Histogram<T>

/**
 * Process and Node.js metrics (RSS, fds, event-loop lag, GC…), loaded when first asked for; the
 * OpenTelemetry API their CPU metric requires loads only if it is used (./otel-api.ts).
 */
export function collectDefaultMetrics(
  config: Prom.DefaultMetricsCollectorConfiguration<Prom.RegistryContentType>,
): void {
  deferOtelApi()
  ;(load('prom-client/lib/defaultMetrics') as typeof Prom.collectDefaultMetrics)(config)
}
