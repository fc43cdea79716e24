// The metrics endpoint of the daemon: after a few Mounts (one of them failing)
// every listed series is there, the text parses with an independent
// Prometheus text-format parser, and no label carries a pod, object, path or
// role name.
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import t from 'tap'
import { Fixture } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'
import { healthPort } from '../support/provider.js'

interface Sample {
  value?: string
  labels?: Record<string, string>
  buckets?: Record<string, string>
  count?: string
  sum?: string
}
interface Family {
  name: string
  help: string
  type: string
  metrics: Sample[]
}

const SECRET_VALUE = 'metrics-s3cr3t-Qz7'
const POD_NAME = 'metrics-pod-7f9c'
const OBJECT_NAME = 'metrics-object-name'
const SECRET_PATH = 'secret/data/metrics-only-path'

t.test('metrics after successful and failed Mounts', async (t) => {
  const fx = await Fixture.start({ args: ['-health-addr=127.0.0.1:0'] })
  t.teardown(() => fx.stop())
  await fx.kvPut('metrics-only-path', { password: SECRET_VALUE })
  const port = await healthPort(fx.provider)

  const pod = { name: POD_NAME, uid: 'b1d7c1a4-0000-4000-8000-000000000001' }
  const ok = { objects: [{ objectName: OBJECT_NAME, secretPath: SECRET_PATH, secretKey: 'password' }] }
  const first = await fx.mount({ pod, params: ok })
  t.ok(first.result.ok, first.result.message)
  const second = await fx.mount({ pod, params: ok })
  t.ok(second.result.ok, second.result.message)
  const missing = await fx.mount({
    pod,
    params: { objects: [{ objectName: 'gone', secretPath: 'secret/data/does-not-exist', secretKey: 'x' }] },
  })
  t.notOk(missing.result.ok, 'a Mount of a missing secret fails')
  t.equal(missing.result.grpcCode, 'NotFound')
  const invalid = await fx.mount({
    pod,
    params: { objects: [{ objectName: '../escape', secretPath: 'secret/data/x' }] },
  })
  t.notOk(invalid.result.ok)

  const res = await fetch(`http://127.0.0.1:${port}/metrics`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type') ?? '', /^text\/plain/)
  const text = await res.text()
  // Pass 1: families with their TYPE and HELP (the parser throws on a malformed line).
  const families = parsePrometheusTextFormat(text) as Family[]
  const byName = new Map(families.map((f) => [f.name, f]))
  // Pass 2: every sample line with its labels. This parser merges a labelled histogram's
  // series into one, so its _bucket/_sum/_count samples are read untyped.
  const samples = parsePrometheusTextFormat(
    text
      .split('\n')
      .filter((l) => !l.startsWith('# TYPE'))
      .join('\n'),
  ) as Family[]
  const sampleValue = (name: string, labels: Record<string, string>): number | undefined => {
    // Untyped, a name reappears as a new family each time other lines come between.
    const s = samples
      .filter((f) => f.name === name)
      .flatMap((f) => f.metrics)
      .find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    return s?.value === undefined ? undefined : Number(s.value)
  }
  const family = (name: string): Family => {
    const f = byName.get(name)
    if (!f) throw new Error(`series ${name} missing; have ${[...byName.keys()].join(', ')}`)
    return f
  }
  const value = (name: string, labels: Record<string, string>): number | undefined => {
    const s = family(name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    return s?.value === undefined ? undefined : Number(s.value)
  }

  const P = 'vault_csi_provider_'
  t.equal(family(`${P}mounts_total`).type, 'COUNTER')
  t.equal(value(`${P}mounts_total`, { outcome: 'success', grpc_code: 'OK' }), 2, 'two successful Mounts')
  t.equal(
    value(`${P}mounts_total`, { outcome: 'failure', grpc_code: 'NOT_FOUND', error_code: 'VAULT_NOT_FOUND' }),
    1,
    'the missing secret, by gRPC code and catalogue code',
  )
  t.equal(value(`${P}mounts_total`, { outcome: 'failure', grpc_code: 'INVALID_ARGUMENT' }), 1, 'the bad objectName')

  const duration = family(`${P}mount_duration_seconds`)
  t.equal(duration.type, 'HISTOGRAM')
  t.ok(Object.keys(duration.metrics[0]?.buckets ?? {}).includes('+Inf'), 'histogram buckets parse')
  t.equal(sampleValue(`${P}mount_duration_seconds_count`, { outcome: 'success' }), 2)
  t.equal(sampleValue(`${P}mount_duration_seconds_bucket`, { outcome: 'success', le: '+Inf' }), 2)
  t.equal(sampleValue(`${P}mount_duration_seconds_count`, { outcome: 'failure' }), 2)
  t.ok((sampleValue(`${P}mount_duration_seconds_sum`, { outcome: 'success' }) ?? 0) > 0)

  t.equal(family(`${P}mounts_in_flight`).type, 'GAUGE')
  t.equal(value(`${P}mounts_in_flight`, {}), 0, 'nothing in flight after the Mounts')

  t.equal(
    value(`${P}vault_requests_total`, { operation: 'login', status: '2xx' }),
    1,
    'one login: the second Mount reused the token',
  )
  t.ok((value(`${P}vault_requests_total`, { operation: 'read', status: '2xx' }) ?? 0) >= 1, 'reads that succeeded')
  t.ok(
    (value(`${P}vault_requests_total`, { operation: 'read', status: '404' }) ?? 0) >= 1,
    'the read that found nothing',
  )
  const vaultHist = family(`${P}vault_request_duration_seconds`)
  t.equal(vaultHist.type, 'HISTOGRAM')
  t.equal(sampleValue(`${P}vault_request_duration_seconds_count`, { operation: 'login', status: '2xx' }), 1)

  t.equal(value(`${P}vault_logins_total`, { outcome: 'success' }), 1)
  t.equal(value(`${P}vault_logins_total`, { outcome: 'failure' }), 0)
  t.equal(family(`${P}vault_token_renewals_total`).type, 'COUNTER')
  t.ok(value(`${P}vault_token_renewals_total`, { outcome: 'success' }) !== undefined)
  t.equal(value(`${P}cache_lookups_total`, { cache: 'token', result: 'miss' }), 1, "the pod's first Mount")
  t.equal(
    value(`${P}cache_lookups_total`, { cache: 'token', result: 'hit' }),
    2,
    'its next two Mounts that reached Vault',
  )
  for (const cache of ['token', 'response']) {
    for (const result of ['hit', 'miss']) {
      t.ok(
        value(`${P}cache_lookups_total`, { cache, result }) !== undefined,
        `cache_lookups_total{cache=${cache},result=${result}}`,
      )
    }
  }
  t.ok(value(`${P}lease_reuse_total`, { result: 'hit' }) !== undefined)
  t.ok(value(`${P}lease_reuse_total`, { result: 'miss' }) !== undefined)

  // Process metrics from prom-client's defaults.
  t.ok((value('process_resident_memory_bytes', {}) ?? 0) > 0, 'RSS')
  t.ok((value('process_open_fds', {}) ?? 0) > 0, 'open fds')
  t.ok(byName.has('nodejs_eventloop_lag_seconds'), 'event-loop lag')

  // Low cardinality: no label value names a pod, object, path, role or namespace.
  const forbidden = [POD_NAME, OBJECT_NAME, 'metrics-only-path', 'does-not-exist', 'escape', 'test-spc', '"app"']
  for (const f of samples) {
    if (!f.name.startsWith(P)) continue
    for (const m of f.metrics) {
      for (const [k, v] of Object.entries(m.labels ?? {})) {
        t.notOk(
          forbidden.some((bad) => v.includes(bad.replace(/"/g, ''))) || v === 'default' || v === 'app',
          `${f.name} label ${k}=${v} names no pod, object, path, role or namespace`,
        )
      }
    }
  }
  t.same(findLeaks(text, [SECRET_VALUE]), [], 'no secret in the metrics')
  t.same(findLeaks(await fx.provider.logs(), [SECRET_VALUE]), [], 'no secret, JWT or token in the provider log')
})

t.test('an unknown path is 404, a POST is 405', async (t) => {
  const fx = await Fixture.start({ args: ['-health-addr=127.0.0.1:0'] })
  t.teardown(() => fx.stop())
  const port = await healthPort(fx.provider)
  t.equal((await fetch(`http://127.0.0.1:${port}/nope`)).status, 404)
  t.equal((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status, 405)
  t.same(findLeaks(await fx.provider.logs(), []), [], 'log-leak check')
})
