// The operations HTTP server's process metrics: started a while after its port binds, or by the
// first scrape when that comes sooner (src/server/http-server.ts, PROCESS_METRICS_DELAY_MS).
import t, { type Test } from 'tap'
import { createLogger } from '../../../src/observability/logger.js'
import { ProviderMetrics } from '../../../src/observability/metrics.js'
import { OpsHttpServer } from '../../../src/server/http-server.js'

const PROCESS_METRIC = /^process_resident_memory_bytes \d+/m
const HOUR_MS = 3_600_000

async function started(
  t: Test,
  processMetricsDelayMs: number,
): Promise<{ metrics: ProviderMetrics; port: number; server: OpsHttpServer }> {
  const metrics = new ProviderMetrics({ defaultMetrics: false })
  const server = new OpsHttpServer({
    address: '127.0.0.1:0',
    socketPath: '/nonexistent/vault.sock',
    metrics,
    logger: createLogger('error'),
    processMetricsDelayMs,
  })
  t.teardown(() => server.stop())
  const port = await server.start()
  if (port === undefined) throw new Error('the server did not start')
  return { metrics, port, server }
}

t.test('binding the port does not start process metrics; the first scrape does', async (t) => {
  const { metrics, port } = await started(t, HOUR_MS)
  t.notMatch(await metrics.render(), PROCESS_METRIC, 'none right after the port binds')
  const res = await fetch(`http://127.0.0.1:${port}/metrics`)
  t.equal(res.status, 200)
  t.match(await res.text(), PROCESS_METRIC, 'the first scrape has them')
})

t.test('without a scrape, process metrics start once the delay has passed', async (t) => {
  const { metrics } = await started(t, 0)
  t.notMatch(await metrics.render(), PROCESS_METRIC, 'none before the timer ran')
  // A 0 ms timer set after the server's runs after it.
  await new Promise((resolve) => setTimeout(resolve, 0))
  t.match(await metrics.render(), PROCESS_METRIC)
})

t.test('a server stopped before the delay never starts them', async (t) => {
  const { metrics, server } = await started(t, 0)
  await server.stop()
  await new Promise((resolve) => setTimeout(resolve, 0))
  t.notMatch(await metrics.render(), PROCESS_METRIC)
})
