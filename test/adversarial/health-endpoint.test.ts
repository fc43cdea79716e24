// Issue 37, class 3: the operations port (-health-addr) answers whoever reaches it, and on
// 3964ba9 every GET /health/vault built a transport of its own and opened a new Vault connection:
// anyone who could reach the pod's port made the provider open as many Vault connections as they
// liked. Now /health/vault probes -vault-addr at most once per interval through the provider's
// shared pool, whatever the request rate. A counting proxy (test/support/fault-proxy.ts, no fault
// set) sits between the daemon's -vault-addr and OpenBao and counts what reaches OpenBao; the
// victim names OpenBao's own address, so the proxy sees only the provider's own calls.
//
// That a caller on another address gets the status alone is shown on the unit level
// (test/unit/server/http-server.test.ts, `answer(method, path, local)`): these suites keep all
// traffic on 127.0.0.0/8, where the details are shown by design.
import t, { type Test } from 'tap'
import { VAULT_HEALTH_INTERVAL_MS } from '../../src/server/health-cache.js'
import { checkIsolation, exclusiveSuite, runAttackConfirmed } from '../support/adversary.js'
import { finishSuite, startWorld } from '../support/adversary-world.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import type { GrpcMountResult } from '../support/grpc-client.js'
import { healthPort } from '../support/provider.js'

t.setTimeout(20 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

/** One GET of the operations port, as an attack attempt's answer (its status as the code). */
async function get(url: string): Promise<GrpcMountResult> {
  const res = await fetch(url)
  const body = await res.text()
  return { ok: res.ok, grpcCode: String(res.status), message: body, files: [], objectVersions: [] }
}

t.test('the operations port under a flood', async (t) => {
  const front: { proxy?: FaultProxy } = {}
  const w = await startWorld({
    vaultAddr: async (bao) => {
      front.proxy = await startFaultProxy(bao.port)
      return front.proxy.addr
    },
    victimParams: (bao) => ({ vaultAddress: bao.addr }),
  })
  t.teardown(async () => {
    await w.stop()
    await front.proxy?.close()
  })
  const proxy = front.proxy!
  const base = `http://127.0.0.1:${await healthPort(w.daemon.provider)}`
  const healthCalls = (): number => proxy.stats.byPath.get('GET /v1/sys/health') ?? 0

  await t.test('GET /health/vault, 32 at once, thousands of times', async (t: Test) => {
    const calls = healthCalls()
    const connections = proxy.stats.connections
    const out = await runAttackConfirmed(t, w.daemon, w.victim, {
      klass: '37.3',
      name: 'GET /health/vault, 32 at once',
      attempt: () => get(`${base}/health/vault`),
      concurrency: 32,
      maxAttempts: 4000,
      minDurationMs: 4000,
    })
    checkIsolation(t, w.daemon, out)
    t.same([...new Set(out.answers.map((a) => a.grpcCode))], ['200'], 'every request was answered 200')
    const probes = healthCalls() - calls
    // Probes start at most once per interval: the attack's whole span bounds them, not its requests.
    const bound = 1 + Math.ceil(out.durationMs / VAULT_HEALTH_INTERVAL_MS)
    t.ok(
      probes <= bound,
      `${probes} sys/health calls reached OpenBao for ${out.answers.length} requests in ${(out.durationMs / 1000).toFixed(1)} s (at most ${bound})`,
    )
    t.ok(
      proxy.stats.connections - connections <= bound,
      `${proxy.stats.connections - connections} new connections to OpenBao (at most ${bound}): the shared pool's`,
    )
    // A person on the node (loopback) sees what the answer is about.
    t.match(JSON.parse(out.answer.message), { status: 'ok', address: proxy.addr, version: /\d/ })
  })

  await t.test('GET /health/ready and /health/live, 32 at once', async (t: Test) => {
    const calls = healthCalls()
    const paths = ['/health/ready', '/health/live']
    const out = await runAttackConfirmed(t, w.daemon, w.victim, {
      klass: 'own',
      name: 'GET /health/ready and /health/live, 32 at once',
      attempt: (i) => get(`${base}${paths[i % paths.length]!}`),
      concurrency: 32,
      maxAttempts: 3000,
    })
    checkIsolation(t, w.daemon, out)
    t.same([...new Set(out.answers.map((a) => a.grpcCode))], ['200'], 'every request was answered 200')
    t.equal(healthCalls(), calls, 'none of them reached Vault')
  })

  await t.test('GET /metrics, 32 at once', async (t: Test) => {
    const out = await runAttackConfirmed(t, w.daemon, w.victim, {
      klass: 'own',
      name: 'GET /metrics, 32 at once',
      attempt: () => get(`${base}/metrics`),
      concurrency: 32,
      maxAttempts: 3000,
    })
    t.same([...new Set(out.answers.map((a) => a.grpcCode))], ['200'], 'every request was answered 200')
    // /metrics renders at most every 100 ms (1 s while nothing changed): a flood reads the last text.
    checkIsolation(t, w.daemon, out)
  })

  await finishSuite(t, w, 'health-endpoint')
})
