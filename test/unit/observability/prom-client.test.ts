import { createRequire } from 'node:module'
import t from 'tap'
import { ProviderMetrics } from '../../../src/observability/metrics.js'
import { Counter, Registry } from '../../../src/observability/prom-client.js'

// This file imports nothing else of prom-client: what is in require's cache was loaded by the daemon's path.
const loaded = (): string[] =>
  Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('/prom-client/'))

t.test('the daemon loads prom-client file by file, without its index, push gateway or cluster code', async (t) => {
  const files = loaded().map((f) => f.replace(/^.*\/prom-client\//, ''))
  t.ok(files.includes('lib/registry.js'), 'the registry is loaded')
  t.notOk(files.includes('index.js'), 'not the index')
  t.notOk(files.includes('lib/pushgateway.js'), 'not the push gateway (http, https)')
  t.notOk(files.includes('lib/cluster.js'), 'not the cluster aggregator (cluster, child_process)')
  t.notOk(files.includes('lib/defaultMetrics.js'), 'process metrics load only when asked for')
  // The classes work as the index's do.
  const registry = new Registry()
  new Counter({ name: 'x_total', help: 'x', registers: [registry] }).inc(2)
  t.match(await registry.metrics(), /^x_total 2$/m)
})

t.test('process metrics: none until collectProcessMetrics(), which may be called again', async (t) => {
  const m = new ProviderMetrics({ defaultMetrics: false })
  t.notMatch(await m.render(), /process_resident_memory_bytes/)
  t.notOk(
    loaded().some((f) => f.endsWith('/lib/defaultMetrics.js')),
    'not loaded by a registry without them',
  )
  m.collectProcessMetrics()
  m.collectProcessMetrics()
  const text = await m.render()
  t.match(text, /process_resident_memory_bytes \d+/)
  t.match(text, /nodejs_eventloop_lag_seconds /)
  t.equal(text.match(/^# TYPE process_resident_memory_bytes /gm)?.length, 1, 'registered once')
})
