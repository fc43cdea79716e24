// Production Vault as it runs: a 3-node OpenBao Raft cluster (test/support/openbao-cluster.ts), the
// built daemon pointed at the active node, at a standby and at a round-robin proxy over all three (a
// Service), through the driver's client code (grpc-client.ts: its service config, without a process
// per Mount). Then failover by kill -9 of the active node under continuous Mounts, and a restarted
// node left sealed behind the Service. Figures that do not hold yet (issue 46 parts 2-4) are reported
// with t.comment, not asserted.
import { randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import { stringify } from 'yaml'
import { connectProvider, type ProviderGrpcClient } from '../support/grpc-client.js'
import { signServiceAccountJwt } from '../support/jwt.js'
import { findLeaks } from '../support/leaks.js'
import { startOpenBaoCluster, type ClusterNode, type OpenBaoCluster } from '../support/openbao-cluster.js'
import { startProvider, type ProviderProcess } from '../support/provider.js'
import { startRoundRobinProxy, type RoundRobinProxy } from '../support/round-robin-proxy.js'

const SECRET = 'ha-secret-Vq7'
const MOUNTS_PER_CASE = 30
const CONCURRENCY = 3

let cluster: OpenBaoCluster
let proxy: RoundRobinProxy
let provider: ProviderProcess
let client: ProviderGrpcClient
const jwts: string[] = []

t.before(async () => {
  cluster = await startOpenBaoCluster()
  const admin = await cluster.admin()
  const put = await admin.api('POST', '/v1/secret/data/app', { data: { password: SECRET } })
  if (put.status !== 200) throw new Error(`kv put: ${put.status}`)
  proxy = await startRoundRobinProxy(cluster.nodes.map((n) => n.apiPort))
  provider = await startProvider({ logLevel: 'info' })
  client = connectProvider(provider.socketPath)
})

t.teardown(async () => {
  client?.close()
  await provider?.stop()
  await proxy?.close()
  await cluster?.stop()
})

interface Outcome {
  ok: boolean
  code: string
  message: string
  at: number
}

/** One Mount of a new pod (its own uid: its own login) reading secret/data/app at `address`. */
async function mountNewPod(address: string): Promise<Outcome> {
  const uid = randomUUID()
  const jwt = signServiceAccountJwt({
    namespace: 'default',
    serviceAccount: 'app',
    podName: 'app-0',
    podUid: uid,
    audience: 'vault',
    expiresInSec: 600,
  })
  jwts.push(jwt)
  const attributes = {
    roleName: 'app',
    vaultAuthMountPath: 'jwt',
    vaultAddress: address,
    secretProviderClass: 'ha',
    objects: stringify([{ objectName: 'password', secretPath: 'secret/data/app', secretKey: 'password' }]),
    'csi.storage.k8s.io/pod.name': 'app-0',
    'csi.storage.k8s.io/pod.namespace': 'default',
    'csi.storage.k8s.io/pod.uid': uid,
    'csi.storage.k8s.io/serviceAccount.name': 'app',
    'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({
      vault: { token: jwt, expirationTimestamp: new Date(Date.now() + 600_000).toISOString() },
    }),
  }
  const r = await client.mount({ attributes: JSON.stringify(attributes) }, 20_000)
  const ok = r.ok && r.files.some((f) => f.path === 'password' && Buffer.from(f.contents).toString() === SECRET)
  return { ok, code: r.grpcCode, message: r.message, at: Date.now() }
}

/** `n` Mounts of new pods, `CONCURRENCY` at a time. */
async function mounts(address: string, n: number): Promise<Outcome[]> {
  const out: Outcome[] = []
  let started = 0
  const worker = async (): Promise<void> => {
    while (started < n) {
      started += 1
      out.push(await mountNewPod(address))
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return out
}

function codes(outcomes: Outcome[]): Record<string, number> {
  const c: Record<string, number> = {}
  for (const o of outcomes.filter((o) => !o.ok)) c[o.code] = (c[o.code] ?? 0) + 1
  return c
}

/** Answered requests of `path` in one node's audit entries. */
function responses(entries: Array<Record<string, any>>, path: string): number {
  return entries.filter((e) => e.type === 'response' && e.request?.path === path).length
}

/**
 * Logins since `before` (entries per node), per pod: a standby that forwards a login audits it as the active
 * node does, under another request id, so a pod's logins are the most that any one node saw for its JWT
 * (its HMAC, the same on every node of the cluster).
 */
function loginsPerPod(before: number[]): number[] {
  const perJwt = new Map<string, number>()
  cluster.nodes.forEach((node, i) => {
    const seen = new Map<string, number>()
    for (const e of node.auditEntries().slice(before[i])) {
      if (e.type !== 'response' || e.request?.path !== 'auth/jwt/login') continue
      const key = String(e.request?.data?.jwt ?? e.request?.id)
      seen.set(key, (seen.get(key) ?? 0) + 1)
    }
    for (const [k, n] of seen) perJwt.set(k, Math.max(perJwt.get(k) ?? 0, n))
  })
  return [...perJwt.values()]
}

async function steadyCase(t: Test, name: string, address: string, reader?: ClusterNode): Promise<void> {
  const addr = address
  const auditBefore = cluster.nodes.map((n) => n.auditEntries().length)
  const node = reader
  const readsBefore = node ? responses(node.auditEntries(), 'secret/data/app') : 0
  const active = await cluster.activeNode()
  const activeReadsBefore = responses(active.auditEntries(), 'secret/data/app')
  const outcomes = await mounts(addr, MOUNTS_PER_CASE)
  const failed = outcomes.filter((o) => !o.ok)
  t.equal(failed.length, 0, `${name}: 0 of ${MOUNTS_PER_CASE} Mounts failed ${JSON.stringify(codes(outcomes))}`)
  const logins = loginsPerPod(auditBefore)
  t.comment(`${name}: ${logins.length} pods logged in, ${logins.reduce((a, b) => a + b, 0)} logins`)
  t.same(logins, Array<number>(MOUNTS_PER_CASE).fill(1), `${name}: one login per new pod`)
  if (node) {
    const served = responses(node.auditEntries(), 'secret/data/app') - readsBefore
    const atActive = responses(active.auditEntries(), 'secret/data/app') - activeReadsBefore
    t.comment(`${name}: reads audited by ${node.id}: ${served}, by the active ${active.id}: ${atActive}`)
    t.ok(served > 0, `${name}: the standby served reads itself`)
  }
}

t.test('steady state: active node, a standby, the Service', async (t) => {
  const active = await cluster.activeNode()
  const standby = cluster.nodes.find((n) => n !== active)!
  await steadyCase(t, 'active node', active.addr)
  await steadyCase(t, 'standby', standby.addr, standby)
  await steadyCase(t, 'Service (round robin)', proxy.addr)
  t.ok(
    [...proxy.connections.values()].every((n) => n > 0),
    'the proxy spread connections over every node',
  )
})

t.test('failover: kill -9 of the active node under continuous Mounts through the Service', async (t) => {
  const old = await cluster.activeNode()
  const outcomes: Outcome[] = []
  let mounting = true
  const load = Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (mounting) {
        outcomes.push(await mountNewPod(proxy.addr))
        // A pod every 200 ms per worker, as a rollout creates them, not a tight loop of failures.
        await new Promise((r) => setTimeout(r, 200))
      }
    }),
  )
  // Some Mounts before the kill, so the provider holds connections to every node.
  while (outcomes.length < 6) await new Promise((r) => setTimeout(r, 50))
  const killedAt = Date.now()
  await cluster.kill(old)
  // A new leader: polled, at most 600 times 100 ms apart (the test fails if none comes).
  const leader = await cluster.activeNode({ except: old, attempts: 600 })
  const electedAt = Date.now()
  t.not(leader, old, 'a new leader was elected among the two left')
  // Mounts go on for a while after the election, then the last ones must all succeed.
  const stopAt = electedAt + 10_000
  while (Date.now() < stopAt) await new Promise((r) => setTimeout(r, 100))
  const tail: Outcome[] = []
  const tailStart = outcomes.length
  await new Promise((r) => setTimeout(r, 3000))
  mounting = false
  await load
  tail.push(...outcomes.slice(tailStart))
  const during = outcomes.filter((o) => o.at >= killedAt && o.at < electedAt + 10_000)
  t.comment(
    `failover: election took ${electedAt - killedAt} ms; ${outcomes.length} Mounts in all, ` +
      `${outcomes.filter((o) => !o.ok).length} failed ${JSON.stringify(codes(outcomes))}; ` +
      `between the kill and 10 s after the election: ${during.filter((o) => !o.ok).length} of ${during.length} failed`,
  )
  const texts = new Set(outcomes.filter((o) => !o.ok).map((o) => `${o.code}: ${o.message.slice(0, 200)}`))
  for (const text of [...texts].slice(0, 5)) t.comment(`  failed: ${text}`)
  t.ok(tail.length > 0, 'Mounts ran after the settling time')
  t.same(
    tail.filter((o) => !o.ok).map((o) => o.code),
    [],
    'no Mount fails 10 s after the new leader was elected',
  )
  t.equal(provider.child.exitCode, null, 'the same provider process went on')
})

t.test('a restarted node left sealed behind the Service', async (t) => {
  const down = cluster.nodes.find((n) => !n.running())!
  await cluster.restartSealed(down)
  const outcomes = await mounts(proxy.addr, MOUNTS_PER_CASE * 2)
  const failed = outcomes.filter((o) => !o.ok)
  // Issue 46 part 4 wants 0 here; today's figure is reported, not asserted.
  t.comment(
    `sealed node: ${failed.length} of ${outcomes.length} Mounts failed ${JSON.stringify(codes(outcomes))}` +
      (failed[0] ? `; e.g. ${failed[0].message.slice(0, 200)}` : ''),
  )
  t.ok(
    outcomes.some((o) => o.ok),
    'Mounts succeed through the two healthy nodes',
  )
  await cluster.unseal(down)
})

t.test('no pod token reached the provider log', async (t) => {
  t.same(findLeaks(await provider.logs(), [SECRET, cluster.rootToken, ...jwts]), [])
})
