import { createRequire } from 'node:module'
import type * as PerfHooks from 'node:perf_hooks'
import t from 'tap'
import { mountStatusName } from '../../../src/server/grpc-status.js'
import {
  EVENT_LOOP_SAMPLE_MS,
  ProviderMetrics,
  STATUS_LABELS,
  statusLabel,
} from '../../../src/observability/metrics.js'

/** Node's perf_hooks module object, the one prom-client requires (an ES import's namespace is frozen). */
const perfHooks = createRequire(import.meta.url)('node:perf_hooks') as {
  -readonly [K in keyof typeof PerfHooks]: (typeof PerfHooks)[K]
}

async function sample(
  m: ProviderMetrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const metric = await m.registry.getSingleMetric(name)?.get()
  const v = metric?.values.find(
    (x) =>
      Object.entries(labels).every(([k, val]) => String((x.labels as Record<string, unknown>)[k]) === val) &&
      (x as { metricName?: string }).metricName === undefined,
  )
  return v?.value
}

t.test('Mount outcome, duration and in-flight', async (t) => {
  // The status names come from the gRPC adapter's mapping, wired in as the composition root does.
  const m = new ProviderMetrics({ processMetrics: false, grpcCodeOf: mountStatusName })
  m.mountStarted()
  m.mountStarted()
  t.equal(await sample(m, 'vault_csi_provider_mounts_in_flight'), 2)
  m.mountFinished('success', undefined, 12)
  m.mountFinished('failure', 'VAULT_PERMISSION_DENIED', 30)
  t.equal(await sample(m, 'vault_csi_provider_mounts_in_flight'), 0)
  t.equal(
    await sample(m, 'vault_csi_provider_mounts_total', { outcome: 'success', grpc_code: 'OK', error_code: '' }),
    1,
  )
  t.equal(
    await sample(m, 'vault_csi_provider_mounts_total', {
      outcome: 'failure',
      grpc_code: 'PERMISSION_DENIED',
      error_code: 'VAULT_PERMISSION_DENIED',
    }),
    1,
  )
  const text = await m.render()
  t.match(text, /vault_csi_provider_mount_duration_seconds_sum\{outcome="success"\} 0\.012/)
  t.match(text, /vault_csi_provider_mount_duration_seconds_count\{outcome="failure"\} 1/)
  t.notMatch(text, /process_resident_memory_bytes/, 'default metrics off when asked')
})

t.test('Vault calls: requests, logins, token renewals', async (t) => {
  const m = new ProviderMetrics({ processMetrics: false })
  m.vaultCall({ operation: 'login', ok: true, status: undefined, durationMs: 5, description: 'POST auth/jwt/login' })
  m.vaultCall({ operation: 'login', ok: false, status: 400, durationMs: 5, description: 'POST auth/jwt/login' })
  m.vaultCall({ operation: 'read', ok: false, status: undefined, durationMs: 5, description: 'GET secret/data/x' })
  m.vaultCall({
    operation: 'renew',
    ok: true,
    status: undefined,
    durationMs: 5,
    description: 'POST auth/token/renew-self',
  })
  m.vaultCall({ operation: 'renew', ok: true, status: undefined, durationMs: 5, description: 'PUT sys/leases/renew' })
  t.equal(await sample(m, 'vault_csi_provider_vault_logins_total', { outcome: 'success' }), 1)
  t.equal(await sample(m, 'vault_csi_provider_vault_logins_total', { outcome: 'failure' }), 1)
  t.equal(await sample(m, 'vault_csi_provider_vault_requests_total', { operation: 'login', status: '400' }), 1)
  t.equal(await sample(m, 'vault_csi_provider_vault_requests_total', { operation: 'read', status: 'none' }), 1)
  t.equal(
    await sample(m, 'vault_csi_provider_vault_token_renewals_total', { outcome: 'success' }),
    1,
    'lease renewals are not token renewals',
  )
  t.equal(await sample(m, 'vault_csi_provider_vault_requests_total', { operation: 'renew', status: '2xx' }), 2)
  const text = await m.render()
  t.notMatch(text, /secret\/data\/x|auth\/jwt/, 'the request description never becomes a label')
})

t.test('cache and lease reuse counters exist from the start', async (t) => {
  const m = new ProviderMetrics({ processMetrics: false })
  t.equal(await sample(m, 'vault_csi_provider_cache_lookups_total', { cache: 'token', result: 'hit' }), 0)
  m.cacheLookup('response', true)
  m.leaseReuse(false)
  t.equal(await sample(m, 'vault_csi_provider_cache_lookups_total', { cache: 'response', result: 'hit' }), 1)
  t.equal(await sample(m, 'vault_csi_provider_lease_reuse_total', { result: 'miss' }), 1)
})

t.test('what a state handover took over: every series from the start, counted once', async (t) => {
  const m = new ProviderMetrics({ processMetrics: false })
  const name = 'vault_csi_provider_handover_total'
  for (const item of ['identity', 'lease']) {
    for (const outcome of ['taken_over', 'refused', 'expired']) t.equal(await sample(m, name, { item, outcome }), 0)
  }
  m.handover('identity', 'taken_over', 110)
  m.handover('lease', 'expired', 2)
  t.equal(await sample(m, name, { item: 'identity', outcome: 'taken_over' }), 110)
  t.equal(await sample(m, name, { item: 'lease', outcome: 'expired' }), 2)
  t.equal(await sample(m, name, { item: 'lease', outcome: 'taken_over' }), 0)
})

t.test('default metrics: RSS, fds, event-loop lag; two registries side by side', async (t) => {
  const a = new ProviderMetrics()
  const b = new ProviderMetrics()
  const text = await a.render()
  t.match(text, /process_resident_memory_bytes \d+/)
  t.match(text, /process_open_fds \d+/)
  t.match(text, /nodejs_eventloop_lag_seconds /)
  t.match(await b.render(), /vault_csi_provider_mounts_in_flight 0/)
  t.match(a.contentType, /^text\/plain/)
})

t.test("the event-loop delay is sampled every EVENT_LOOP_SAMPLE_MS, not at prom-client's 10 ms", async (t) => {
  // prom-client looks monitorEventLoopDelay up on Node's perf_hooks module when the process metrics
  // start: record the resolution it asks for.
  const resolutions: Array<number | undefined> = []
  const original = perfHooks.monitorEventLoopDelay
  t.teardown(() => {
    perfHooks.monitorEventLoopDelay = original
  })
  perfHooks.monitorEventLoopDelay = (opts) => {
    resolutions.push(opts?.resolution)
    return original(opts)
  }
  const m = new ProviderMetrics()
  t.same(resolutions, [EVENT_LOOP_SAMPLE_MS])
  t.ok(EVENT_LOOP_SAMPLE_MS >= 100, 'at most 10 wake-ups a second')
  t.match(await m.render(), /nodejs_eventloop_lag_p99_seconds /)
})

t.test('labels', async (t) => {
  t.equal(statusLabel({ ok: true, status: undefined }), '2xx')
  t.equal(statusLabel({ ok: false, status: 503 }), '503')
  t.equal(statusLabel({ ok: false, status: undefined }), 'none')
})

t.test('status labels are bucketed to a fixed set, whatever a server answers', async (t) => {
  const cases: Array<[number | undefined, string]> = [
    [undefined, 'none'],
    [200, '2xx'],
    [204, '2xx'],
    [301, '3xx'],
    [307, '3xx'],
    [400, '400'],
    [401, '401'],
    [403, '403'],
    [404, '404'],
    [405, '4xx'],
    [412, '412'],
    [418, '4xx'],
    [429, '429'],
    [499, '4xx'],
    [500, '500'],
    [501, '5xx'],
    [502, '502'],
    [503, '503'],
    [504, '504'],
    [599, '5xx'],
    [99, 'none'],
    [150, 'none'],
    [600, 'none'],
    [999, 'none'],
    [-1, 'none'],
    [404.5, 'none'],
  ]
  for (const [status, label] of cases) t.equal(statusLabel({ ok: false, status }), label, String(status))
  const m = new ProviderMetrics({ processMetrics: false })
  for (let status = 100; status < 1000; status++) {
    m.vaultCall({ operation: 'read', ok: false, status, durationMs: 1, description: 'GET x' })
  }
  const values = (await m.registry.getSingleMetric('vault_csi_provider_vault_requests_total')!.get()).values
  const seen = new Set(values.map((v) => String(v.labels.status)))
  t.ok(
    [...seen].every((s) => (STATUS_LABELS as readonly string[]).includes(s)),
    [...seen].join(','),
  )
  t.ok(seen.size <= STATUS_LABELS.length)
  t.ok(values.length <= STATUS_LABELS.length, `${values.length} series for 900 statuses`)
})
