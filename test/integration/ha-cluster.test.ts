// Production Vault as it runs: a 3-node OpenBao Raft cluster (test/support/openbao-cluster.ts), the
// built daemon pointed at the active node, at a standby and at a round-robin proxy over all three (a
// Service), through the driver's client code (grpc-client.ts: its service config, without a process
// per Mount). Then what issue 46 asks of it:
// - write-then-Mount: a new version written on the active node, then at once a Mount through a
//   standby with a cached token: 0 stale in the consistent mode (the default, and
//   `vaultReadConsistency: strong`), the stale count reported in the standby-read mode
//   (`vaultReadConsistency: eventual`, or `-vault-read-consistency=eventual`);
// - failover by kill -9 of the active node under continuous Mounts: a Mount that fails during the
//   election fails UNAVAILABLE saying the cluster is electing (or sealed), none fails after it, one
//   login per new pod;
// - a restarted node left sealed behind the Service: 0 failed Mounts while 2 of 3 nodes are healthy,
//   counted where the provider answers (its `mount` log lines), since the driver's client retries an
//   UNAVAILABLE Mount and would hide them from the pod.
// Each case prints (t.comment) the figures the issue's closing note needs: failed Mounts and their
// codes, logins per new pod, stale reads, the election time.
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
/** Writes, each followed at once by a Mount through a standby, per write-then-Mount case. */
const WRITES_PER_CASE = 10
/** What a Mount that failed during an election must say (issue 46 part 3), instead of a configuration error. */
const ELECTING_OR_SEALED = /\b(electing|sealed)\b/i

let cluster: OpenBaoCluster
let proxy: RoundRobinProxy
let provider: ProviderProcess
let client: ProviderGrpcClient
/** Every provider started here, for the log-leak check at the end. */
const providers: ProviderProcess[] = []
const jwts: string[] = []

t.before(async () => {
  cluster = await startOpenBaoCluster()
  const admin = await cluster.admin()
  const put = await admin.api('POST', '/v1/secret/data/app', { data: { password: SECRET } })
  if (put.status !== 200) throw new Error(`kv put: ${put.status}`)
  proxy = await startRoundRobinProxy(cluster.nodes.map((n) => n.apiPort))
  provider = await startProvider({ logLevel: 'info' })
  providers.push(provider)
  client = connectProvider(provider.socketPath)
})

t.teardown(async () => {
  client?.close()
  for (const p of providers) await p.stop()
  await proxy?.close()
  await cluster?.stop()
})

interface Pod {
  uid: string
  jwt: string
}

interface Outcome {
  ok: boolean
  code: string
  message: string
  /** The contents of the file `password` ('' when the Mount failed). */
  password: string
  at: number
  pod: Pod
}

function newPod(): Pod {
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
  return { uid, jwt }
}

/**
 * One Mount of `pod` reading `secretPath` at `address`, through `via` (default: the shared provider);
 * `params` are further SecretProviderClass parameters.
 */
async function mountPod(
  pod: Pod,
  address: string,
  o: { secretPath?: string; params?: Record<string, string>; via?: ProviderGrpcClient } = {},
): Promise<Outcome> {
  const attributes = {
    roleName: 'app',
    vaultAuthMountPath: 'jwt',
    vaultAddress: address,
    secretProviderClass: 'ha',
    ...(o.params ?? {}),
    objects: stringify([
      { objectName: 'password', secretPath: o.secretPath ?? 'secret/data/app', secretKey: 'password' },
    ]),
    'csi.storage.k8s.io/pod.name': 'app-0',
    'csi.storage.k8s.io/pod.namespace': 'default',
    'csi.storage.k8s.io/pod.uid': pod.uid,
    'csi.storage.k8s.io/serviceAccount.name': 'app',
    'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({
      vault: { token: pod.jwt, expirationTimestamp: new Date(Date.now() + 600_000).toISOString() },
    }),
  }
  const r = await (o.via ?? client).mount({ attributes: JSON.stringify(attributes) }, 20_000)
  const file = r.files.find((f) => f.path === 'password')
  const password = r.ok && file ? Buffer.from(file.contents).toString() : ''
  return { ok: r.ok && file !== undefined, code: r.grpcCode, message: r.message, password, at: Date.now(), pod }
}

/** One Mount of a new pod (its own uid: its own login) reading secret/data/app at `address`. */
async function mountNewPod(address: string, via?: ProviderGrpcClient): Promise<Outcome> {
  const out = await mountPod(newPod(), address, { via })
  return { ...out, ok: out.ok && out.password === SECRET }
}

/** `n` Mounts of new pods, `concurrency` at a time. */
async function mounts(address: string, n: number, concurrency = CONCURRENCY, via?: ProviderGrpcClient) {
  const out: Outcome[] = []
  let started = 0
  const worker = async (): Promise<void> => {
    while (started < n) {
      started += 1
      out.push(await mountNewPod(address, via))
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return out
}

function codes(outcomes: Outcome[]): Record<string, number> {
  const c: Record<string, number> = {}
  for (const o of outcomes.filter((o) => !o.ok)) c[o.code] = (c[o.code] ?? 0) + 1
  return c
}

/**
 * Requests of `path` that one node's audit entries show it answered itself: a standby that tries a
 * request and then forwards it (a token it does not know yet) audits its own attempt with an `error`.
 */
function responses(entries: Array<Record<string, any>>, path: string): number {
  return entries.filter((e) => e.type === 'response' && e.request?.path === path && !e.error).length
}

/**
 * Logins since `before` (entries per node), per pod: the tokens issued for its JWT (keyed by the JWT's
 * HMAC, the same on every node of the cluster). Only the active node issues a token; a standby that is
 * handed a login first tries it itself and audits that attempt as a response with an error ("invalid
 * request"), then forwards it, so an audited login response without `auth` is no login.
 */
function loginsPerPod(before: number[]): number[] {
  return [...loginsByJwtHash(before).values()]
}

function loginsByJwtHash(before: number[] = cluster.nodes.map(() => 0)): Map<string, number> {
  const perJwt = new Map<string, number>()
  cluster.nodes.forEach((node, i) => {
    for (const e of node.auditEntries().slice(before[i])) {
      if (e.type !== 'response' || e.request?.path !== 'auth/jwt/login' || !e.response?.auth) continue
      const key = String(e.request?.data?.jwt)
      perJwt.set(key, (perJwt.get(key) ?? 0) + 1)
    }
  })
  return perJwt
}

/** The logins the audit log shows for each of `pods` (their JWTs hashed by the audit device's own HMAC). */
async function loginsOf(pods: Pod[]): Promise<number[]> {
  const active = await cluster.activeNode()
  const byHash = loginsByJwtHash()
  const out: number[] = []
  for (const pod of pods) {
    const h = await active.api('POST', '/v1/sys/audit-hash/stdout', { input: pod.jwt })
    if (h.status !== 200) throw new Error(`audit-hash: ${h.status}`)
    out.push(byHash.get(String(h.body.hash)) ?? 0)
  }
  return out
}

/**
 * The Mounts `p` answered with an error since `since` (its `mount` log lines), whatever the client did next:
 * the driver's client retries an UNAVAILABLE Mount (3 attempts, 1 s apart), which hides from the pod what
 * the provider failed.
 */
async function providerFailures(
  p: ProviderProcess,
  since = 0,
): Promise<{ codes: Record<string, number>; first: string }> {
  const lines = (await p.logLines()).filter(
    (l) => l.msg === 'mount' && l.outcome === 'failure' && Date.parse(String(l.time)) >= since,
  )
  const c: Record<string, number> = {}
  for (const l of lines) c[String(l.code)] = (c[String(l.code)] ?? 0) + 1
  return { codes: c, first: lines[0] ? String(lines[0].reason).slice(0, 300) : '' }
}

function total(c: Record<string, number>): number {
  return Object.values(c).reduce((a, b) => a + b, 0)
}

/** How many pods logged in how many times: {"1": 28, "0": 2}. */
function histogram(counts: number[]): Record<string, number> {
  const h: Record<string, number> = {}
  for (const n of counts) h[String(n)] = (h[String(n)] ?? 0) + 1
  return h
}

async function steadyCase(t: Test, name: string, address: string, reader?: ClusterNode): Promise<void> {
  const auditBefore = cluster.nodes.map((n) => n.auditEntries().length)
  const readsBefore = reader ? responses(reader.auditEntries(), 'secret/data/app') : 0
  const active = await cluster.activeNode()
  const activeReadsBefore = responses(active.auditEntries(), 'secret/data/app')
  const outcomes = await mounts(address, MOUNTS_PER_CASE)
  const failed = outcomes.filter((o) => !o.ok)
  t.equal(failed.length, 0, `${name}: 0 of ${MOUNTS_PER_CASE} Mounts failed ${JSON.stringify(codes(outcomes))}`)
  const logins = loginsPerPod(auditBefore)
  t.comment(`${name}: ${logins.length} pods logged in, ${logins.reduce((a, b) => a + b, 0)} logins`)
  t.same(logins, Array<number>(MOUNTS_PER_CASE).fill(1), `${name}: one login per new pod`)
  if (reader) {
    const served = responses(reader.auditEntries(), 'secret/data/app') - readsBefore
    const atActive = responses(active.auditEntries(), 'secret/data/app') - activeReadsBefore
    t.comment(`${name}: reads audited by ${reader.id}: ${served}, by the active ${active.id}: ${atActive}`)
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

/**
 * Write-then-Mount: one pod mounts `secret/data/fresh` through `standby` (its login; the token is
 * cached from then on), then WRITES_PER_CASE times a new version is written on the active node and
 * acknowledged, and the pod mounts through the standby at once. Returns how many Mounts returned an
 * older version than the one just acknowledged, and how many reads the standby answered itself.
 */
async function writeThenMount(
  t: Test,
  name: string,
  standby: ClusterNode,
  o: { params?: Record<string, string>; via?: ProviderGrpcClient } = {},
): Promise<{ stale: number; standbyServed: number }> {
  const pod = newPod()
  const secretPath = 'secret/data/fresh'
  const active = await cluster.activeNode()
  const mountOpts = { secretPath, ...o }
  const write = async (value: string): Promise<void> => {
    const res = await active.api('POST', `/v1/${secretPath}`, { data: { password: value } })
    if (res.status !== 200) throw new Error(`kv put: ${res.status}`)
  }
  await write(`${name}-0`)
  const first = await mountPod(pod, standby.addr, mountOpts)
  t.ok(first.ok, `${name}: the pod's first Mount through ${standby.id} succeeded ${first.code} ${first.message}`)
  const servedBefore = responses(standby.auditEntries(), secretPath)
  const outcomes: Outcome[] = []
  const stale: string[] = []
  for (let i = 1; i <= WRITES_PER_CASE; i++) {
    const value = `${name}-${i}`
    await write(value)
    const out = await mountPod(pod, standby.addr, mountOpts)
    outcomes.push(out)
    if (out.ok && out.password !== value) stale.push(`${out.password} for ${value}`)
  }
  const standbyServed = responses(standby.auditEntries(), secretPath) - servedBefore
  const [logins] = await loginsOf([pod])
  t.same(codes(outcomes), {}, `${name}: every Mount after a write succeeded`)
  t.equal(logins, 1, `${name}: the pod logged in once; its later Mounts used the cached token`)
  t.comment(
    `${name}: ${stale.length} of ${WRITES_PER_CASE} Mounts through ${standby.id} right after a write read an older ` +
      `version${stale[0] ? ` (e.g. ${stale[0]})` : ''}; reads answered by ${standby.id} itself: ${standbyServed}`,
  )
  return { stale: stale.length, standbyServed }
}

t.test('write, then Mount at once through a standby with a cached token', async (t) => {
  const active = await cluster.activeNode()
  const standby = cluster.nodes.find((n) => n !== active)!

  const strong = await writeThenMount(t, 'default (consistent)', standby)
  t.equal(strong.stale, 0, 'default: no Mount reads a version older than an acknowledged write')

  const explicit = await writeThenMount(t, 'vaultReadConsistency: strong', standby, {
    params: { vaultReadConsistency: 'strong' },
  })
  t.equal(explicit.stale, 0, 'vaultReadConsistency: strong: no Mount reads an older version')

  // Standby reads: the standby answers reads itself, so a read right after a write may be stale; the
  // figure is reported, not bounded (it depends on the cluster's replication, not on the provider).
  const eventual = await writeThenMount(t, 'vaultReadConsistency: eventual', standby, {
    params: { vaultReadConsistency: 'eventual' },
  })
  t.ok(eventual.standbyServed > 0, 'vaultReadConsistency: eventual: the standby answered reads itself')
})

t.test('-vault-read-consistency=eventual, and a SecretProviderClass that asks for strong', async (t) => {
  const eventualProvider = await startProvider({ logLevel: 'info', args: ['-vault-read-consistency=eventual'] })
  providers.push(eventualProvider)
  const via = connectProvider(eventualProvider.socketPath)
  t.teardown(() => via.close())
  const active = await cluster.activeNode()
  const standby = cluster.nodes.find((n) => n !== active)!
  const eventual = await writeThenMount(t, '-vault-read-consistency=eventual', standby, { via })
  t.ok(eventual.standbyServed > 0, '-vault-read-consistency=eventual: the standby answered reads itself')
  const strong = await writeThenMount(t, '-vault-read-consistency=eventual, vaultReadConsistency: strong', standby, {
    via,
    params: { vaultReadConsistency: 'strong' },
  })
  t.equal(strong.stale, 0, 'the SecretProviderClass asking for strong reads gets them: no older version')
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
  const tailStart = outcomes.length
  await new Promise((r) => setTimeout(r, 3000))
  mounting = false
  await load
  const tail = outcomes.slice(tailStart)
  const failed = outcomes.filter((o) => !o.ok)
  const during = outcomes.filter((o) => o.at >= killedAt && o.at < electedAt + 10_000)
  const firstOk = outcomes.find((o) => o.ok && o.at > killedAt)
  t.comment(
    `failover: election took ${electedAt - killedAt} ms (kill -9 to sys/health 200 on a node); first Mount ` +
      `succeeding after the kill ended ${firstOk ? firstOk.at - killedAt : '-'} ms after it; ${outcomes.length} ` +
      `Mounts in all, ${failed.length} failed ${JSON.stringify(codes(outcomes))}; between the kill and 10 s after ` +
      `the election: ${during.filter((o) => !o.ok).length} of ${during.length} failed`,
  )
  const answered = await providerFailures(provider, killedAt)
  t.comment(
    `failover: the provider answered ${total(answered.codes)} Mounts with an error since the kill ` +
      `${JSON.stringify(answered.codes)} (the driver's client retried the UNAVAILABLE ones)`,
  )
  const texts = new Set(failed.map((o) => `${o.code}: ${o.message.slice(0, 300)}`))
  for (const text of [...texts].slice(0, 5)) t.comment(`  failed: ${text}`)
  const logins = await loginsOf(outcomes.map((o) => o.pod))
  t.comment(
    `failover: logins per new pod (pods per count): succeeded ${JSON.stringify(
      histogram(logins.filter((_, i) => outcomes[i]!.ok)),
    )}, failed ${JSON.stringify(histogram(logins.filter((_, i) => !outcomes[i]!.ok)))}`,
  )

  const wrongCode = failed.filter((o) => o.code !== 'Unavailable')
  t.equal(
    wrongCode.length,
    0,
    `every Mount that failed during the election failed UNAVAILABLE ${JSON.stringify(codes(outcomes))}`,
  )
  const wrongText = failed.filter((o) => !ELECTING_OR_SEALED.test(o.message) || o.message.includes('set vaultAddress'))
  t.equal(
    wrongText.length,
    0,
    'every failed Mount says the cluster is electing (or sealed), not that vaultAddress is misconfigured' +
      (wrongText[0] ? `; ${wrongText.length} did not, e.g. ${wrongText[0].message.slice(0, 300)}` : ''),
  )
  t.ok(tail.length > 0, 'Mounts ran after the settling time')
  t.same(
    tail.filter((o) => !o.ok).map((o) => o.code),
    [],
    'no Mount fails 10 s after the new leader was elected',
  )
  t.equal(
    logins.filter((n, i) => outcomes[i]!.ok && n !== 1).length,
    0,
    'every pod whose Mount succeeded logged in once',
  )
  t.equal(provider.child.exitCode, null, 'the same provider process went on')
})

t.test('a restarted node left sealed behind the Service', async (t) => {
  const down = cluster.nodes.find((n) => !n.running())!
  await cluster.restartSealed(down)
  // A provider whose connections are all new, as after any idle time (-vault-idle-connection-timeout)
  // or on a new node: the Service hands every third new connection to the sealed node.
  const fresh = await startProvider({ logLevel: 'info' })
  providers.push(fresh)
  const via = connectProvider(fresh.socketPath)
  t.teardown(() => via.close())
  const toSealedBefore = proxy.connections.get(down.apiPort) ?? 0
  const auditBefore = cluster.nodes.map((n) => n.auditEntries().length)
  const n = MOUNTS_PER_CASE * 2
  const outcomes = await mounts(proxy.addr, n, CONCURRENCY * 2, via)
  const failed = outcomes.filter((o) => !o.ok)
  const toSealed = (proxy.connections.get(down.apiPort) ?? 0) - toSealedBefore
  const logins = loginsPerPod(auditBefore)
  const answered = await providerFailures(fresh)
  t.comment(
    `sealed node: the provider answered ${total(answered.codes)} Mount calls for the ${n} pods with an error ` +
      `${JSON.stringify(answered.codes)}${answered.first ? ` (e.g. ${answered.first})` : ''}; after the driver's ` +
      `retries ${failed.length} failed ${JSON.stringify(codes(outcomes))}; connections to the sealed ${down.id}: ` +
      `${toSealed}; logins per new pod (pods per count): ${JSON.stringify(histogram(logins))}`,
  )
  t.ok(toSealed > 0, `the Service handed connections to the sealed ${down.id}`)
  t.equal(failed.length, 0, `0 of ${n} Mounts failed while 2 of 3 nodes were healthy`)
  t.same(answered.codes, {}, 'the provider itself failed none of them (no retry by the driver needed)')
  t.same(histogram(logins), { 1: n }, `one login per new pod: all ${n} pods once`)
  await cluster.unseal(down)
})

t.test('no pod token reached the provider log', async (t) => {
  for (const p of providers) t.same(findLeaks(await p.logs(), [SECRET, cluster.rootToken, ...jwts]), [])
})
