// The operations port: cheap (Vault probed at most once per interval, whatever the request rate)
// and discreet (no socket path, Vault address or version but for a request on a loopback address).
import t from 'tap'
import { createLogger } from '../../../src/observability/logger.js'
import { HealthCache } from '../../../src/server/health-cache.js'
import {
  METRICS_MIN_RENDER_INTERVAL_MS,
  METRICS_RENDER_INTERVAL_MS,
  OpsHttpServer,
  isLoopback,
} from '../../../src/server/http-server.js'
import { ProviderMetrics } from '../../../src/observability/metrics.js'
import type { VaultHealth } from '../../../src/vault/resilience/health-probe.js'

const HEALTHY: VaultHealth = {
  reachable: true,
  healthy: true,
  status: 200,
  version: '2.7.2',
  detail: 'initialized, unsealed and active',
  durationMs: 1,
}

function server(probe: () => Promise<VaultHealth>, clock: () => number): OpsHttpServer {
  return new OpsHttpServer({
    address: 'off',
    socketPath: '/var/run/secrets-store-csi-providers/vault.sock',
    logger: createLogger('error'),
    vaultHealth: new HealthCache(probe, { now: clock }, 10_000),
    vaultAddress: 'https://vault.internal:8200',
    time: { now: clock },
  })
}

t.test('which requests are local', async (t) => {
  for (const a of ['127.0.0.1', '127.3.4.5', '::1', '::ffff:127.0.0.1']) t.equal(isLoopback(a), true, a)
  for (const a of ['10.0.0.5', '192.168.1.2', '::ffff:10.1.2.3', 'fe80::1', undefined])
    t.equal(isLoopback(a), false, String(a))
})

t.test('/health/vault probes Vault at most once per interval, whatever the request rate', async (t) => {
  let probes = 0
  let now = 0
  const ops = server(
    async () => {
      probes++
      return HEALTHY
    },
    () => now,
  )
  await Promise.all(Array.from({ length: 500 }, () => ops.answer('GET', '/health/vault', false)))
  t.equal(probes, 1, '500 requests at once: one probe')
  now = 9_999
  await ops.answer('GET', '/health/vault', false)
  t.equal(probes, 1, 'within the interval: none')
  now = 10_000
  await ops.answer('GET', '/health/vault', false)
  t.equal(probes, 2, 'the next interval: one more')
})

t.test('answers name no socket path, Vault address or version but on a loopback address', async (t) => {
  const ops = server(
    async () => HEALTHY,
    () => 0,
  )
  const remote = await ops.answer('GET', '/health/vault', false)
  t.equal(remote.status, 200)
  t.same(JSON.parse(remote.body), { status: 'ok' })
  const local = await ops.answer('GET', '/health/vault', true)
  t.match(JSON.parse(local.body), { status: 'ok', address: 'https://vault.internal:8200', version: '2.7.2' })
  const ready = await ops.answer('GET', '/health/ready', false)
  t.equal(ready.status, 503, 'no socket here')
  t.same(JSON.parse(ready.body), { status: 'unavailable' })
  t.notMatch(ready.body, 'vault.sock')
  t.match(JSON.parse((await ops.answer('GET', '/health/ready', true)).body), { socket: /vault\.sock$/ })
})

t.test('/metrics renders the registry at most once per interval, whatever the request rate', async (t) => {
  let renders = 0
  let now = 0
  const metrics = new ProviderMetrics({ processMetrics: false })
  const render = metrics.render.bind(metrics)
  metrics.render = () => {
    renders++
    return render()
  }
  const ops = new OpsHttpServer({
    address: 'off',
    socketPath: '/nonexistent.sock',
    logger: createLogger('error'),
    metrics,
    time: { now: () => now },
  })
  const answers = await Promise.all(Array.from({ length: 200 }, () => ops.answer('GET', '/metrics', false)))
  t.equal(renders, 1, '200 scrapes at once: one rendering')
  t.match(answers[0]!.body, /vault_csi_provider_mounts_in_flight 0/)
  now = METRICS_RENDER_INTERVAL_MS
  await ops.answer('GET', '/metrics', false)
  t.equal(renders, 2, 'the next interval: one more')
})

t.test("/metrics renders anew once the provider's own series changed, at most every 100 ms", async (t) => {
  let now = 0
  const metrics = new ProviderMetrics({ processMetrics: false })
  const ops = new OpsHttpServer({
    address: 'off',
    socketPath: '/nonexistent.sock',
    logger: createLogger('error'),
    metrics,
    time: { now: () => now },
  })
  t.match((await ops.answer('GET', '/metrics', false)).body, /vault_csi_provider_mounts_in_flight 0/)
  metrics.mountStarted()
  t.match((await ops.answer('GET', '/metrics', false)).body, /mounts_in_flight 0/, 'not within 100 ms of the last')
  now = METRICS_MIN_RENDER_INTERVAL_MS
  t.match((await ops.answer('GET', '/metrics', false)).body, /vault_csi_provider_mounts_in_flight 1/)
})
