// One identity's conversation with Vault, against a fake transport and on injected time:
// one login at a time, renewal at two thirds of the TTL, a re-login when a cached token is
// refused, and callers that each give up on their own deadline. Nothing here sleeps.
import { Writable } from 'node:stream'
import t from 'tap'
import type { ProviderError } from '../../../../src/errors.js'
import { createLogger } from '../../../../src/observability/logger.js'
import { Deadline } from '../../../../src/util/deadline.js'
import { SETTLE_GRACE_MS } from '../../../../src/util/shared-call.js'
import type { VaultRequest } from '../../../../src/vault/paths.js'
import { VaultSession, type VaultIdentity } from '../../../../src/vault/sessions/session.js'
import { planRequests } from '../../../../src/mount/plan.js'
import { parseObjects } from '../../../../src/request/objects.js'
import { FakeVault, NO_BREAKER, denied, gate, kvAnswer, loginAnswer } from '../../../support/fake-vault.js'
import type { VaultAnswer } from '../../../../src/vault/transport/transport.js'
import { VaultHttpError, VaultRedirect } from '../../../../src/vault/transport/call-errors.js'
import { ManualTime } from '../../../support/manual-time.js'

const logger = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }))
const identity: VaultIdentity = {
  connection: { address: 'https://vault.test:8200', namespace: 'team-a', tls: { skipVerify: false } },
  authMount: 'kubernetes',
  role: 'web',
  audience: 'vault',
  pod: { name: 'web-0', namespace: 'shop', uid: 'uid-1', serviceAccount: 'web' },
}
const read: VaultRequest = { method: 'GET', path: 'secret/data/app', query: [] }
const jwt = async (): Promise<string> => 'pod-jwt'

function setup(
  vault: FakeVault,
  id: VaultIdentity = identity,
  staticFreshnessMs = 0,
): {
  session: VaultSession
  time: ManualTime
  deadline(ms?: number, signal?: AbortSignal): Deadline
} {
  const time = new ManualTime()
  const session = new VaultSession(id, vault, {
    logger,
    breakers: NO_BREAKER,
    staticFreshnessMs,
    shareDynamic: false,
    time,
  })
  return { session, time, deadline: (ms = 30_000, signal?: AbortSignal) => Deadline.in(ms, signal, time) }
}

t.test('concurrent requests share one login; each call carries exactly its token and namespace', async (t) => {
  const vault = new FakeVault()
  const login = gate()
  let tokens = 0
  vault.on(/^POST auth\/kubernetes\/login$/, async () => {
    await login.wait
    return loginAnswer(`hvs.token-${++tokens}`)
  })
  vault.on(/^GET secret\/data\/app$/, () => kvAnswer('v'))
  const { session, deadline } = setup(vault)
  const all = Promise.all(Array.from({ length: 5 }, () => session.request(read, jwt, deadline(), 'object "a"')))
  login.open()
  await all
  t.equal(vault.count(/login$/), 1, 'one login for five concurrent requests')
  t.equal(vault.count(/^GET/), 5)
  const loginCall = vault.calls.find((c) => c.path.endsWith('login'))!
  t.equal(loginCall.token, undefined, 'a login sends no token')
  t.same(loginCall.body, { jwt: 'pod-jwt', role: 'web' })
  for (const c of vault.calls) t.equal(c.namespace, 'team-a', "the identity's namespace, nothing else")
  for (const c of vault.calls.filter((c) => c.method === 'GET')) t.equal(c.token, 'hvs.token-1')
})

t.test("the login and the token's own calls go to the auth namespace, reads to theirs", async (t) => {
  const vault = new FakeVault()
  vault.on(/login$/, () => loginAnswer('hvs.ns-token'))
  vault.on(/^GET secret\/data\/app$/, () => kvAnswer('v'))
  vault.on(/revoke-self$/, () => ({ status: 204, body: '' }))
  const split: VaultIdentity = { ...identity, connection: { ...identity.connection, authNamespace: 'admin' } }
  const { session, deadline } = setup(vault, split)
  await session.request(read, jwt, deadline(), 'object "a"')
  await session.request({ ...read, namespace: 'team-b' }, jwt, deadline(), 'object "b"')
  await session.request({ ...read, namespace: '' }, jwt, deadline(), 'object "c"')
  await session.revoke()
  t.same(
    vault.calls.map((c) => [`${c.method} ${c.path}`, c.namespace]),
    [
      ['POST auth/kubernetes/login', 'admin'],
      ['GET secret/data/app', 'team-a'],
      ['GET secret/data/app', 'team-b'],
      ['GET secret/data/app', undefined],
      ['POST auth/token/revoke-self', 'admin'],
    ],
    "the connection's namespace for a read naming none, the root namespace for ''",
  )
})

t.test('the same path in two namespaces: two reads, two kept answers, each served only its own', async (t) => {
  const vault = new FakeVault()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret\/data\/app$/, (c) => kvAnswer(`value of ${c.namespace}`))
  const { session, deadline } = setup(vault, identity, 60_000)
  const objects = parseObjects(
    [
      '- {objectName: a, secretPath: secret/data/app, namespace: tenant-a}',
      '- {objectName: b, secretPath: secret/data/app, namespace: tenant-b}',
      '- {objectName: c, secretPath: secret/data/app}',
    ].join('\n'),
  )
  const plan = planRequests(objects, identity.connection.namespace)
  t.equal(plan.length, 3, 'three requests: no namespace shares another one')
  const fetchAll = (): Promise<unknown[]> =>
    Promise.all(
      plan.map(async (p) => {
        const o = await session.fetch(p.request, p.key, 'uid-1', jwt, deadline(), 'x')
        return [(o.body as { data: { data: { value: string } } }).data.data.value, o.source]
      }),
    )
  t.same(
    await fetchAll(),
    [
      ['value of tenant-a', 'vault'],
      ['value of tenant-b', 'vault'],
      ['value of team-a', 'vault'],
    ],
    'read concurrently, not coalesced across namespaces',
  )
  t.same(
    await fetchAll(),
    [
      ['value of tenant-a', 'cache'],
      ['value of tenant-b', 'cache'],
      ['value of team-a', 'cache'],
    ],
    "each namespace's own kept answer",
  )
  t.equal(vault.count(/^GET/), 3, 'three reads in all')
})

t.test('the token is renewed at two thirds of its TTL, not before; a failed renewal logs in again', async (t) => {
  const vault = new FakeVault()
  let tokens = 0
  let renewOk = true
  vault.on(/login$/, () => loginAnswer(`hvs.token-${++tokens}`, 60))
  vault.on(/^POST auth\/token\/renew-self$/, (c) => {
    if (!renewOk) denied()
    return { status: 200, body: { auth: { client_token: c.token, lease_duration: 60, renewable: true } } }
  })
  vault.on(/^GET secret/, () => kvAnswer('v'))
  const { session, time, deadline } = setup(vault)
  await session.request(read, jwt, deadline(), 'a')
  await time.advance(39_999)
  await session.request(read, jwt, deadline(), 'a')
  t.equal(vault.count(/renew-self/), 0, 'not renewed before 2/3 of 60 s')
  await time.advance(1)
  await session.request(read, jwt, deadline(), 'a')
  t.equal(vault.count(/renew-self/), 1, 'renewed at 40 s')
  t.equal(vault.calls.find((c) => c.path.endsWith('renew-self'))?.token, 'hvs.token-1', 'with the token itself')
  t.equal(vault.count(/login$/), 1, 'no new login')
  await time.advance(39_999)
  await session.request(read, jwt, deadline(), 'a')
  t.equal(vault.count(/renew-self/), 1, 'the renewal restarted the clock')
  renewOk = false
  await time.advance(1)
  await session.request(read, jwt, deadline(), 'a')
  t.equal(vault.count(/renew-self/), 2)
  t.equal(vault.count(/login$/), 2, 'a refused renewal: logged in again')
  t.equal(vault.calls.at(-1)?.token, 'hvs.token-2')
})

t.test('a cached token that Vault refuses (403) is replaced once; a fresh one refused is an error', async (t) => {
  const vault = new FakeVault()
  let tokens = 0
  vault.on(/login$/, () => loginAnswer(`hvs.token-${++tokens}`))
  vault.on(/^GET secret/, (c) => (c.token === 'hvs.token-1' && tokens > 0 && revoked ? denied() : kvAnswer('v')))
  let revoked = false
  const { session, deadline } = setup(vault)
  await session.request(read, jwt, deadline(), 'a')
  revoked = true
  t.same(await session.request(read, jwt, deadline(), 'a'), kvAnswer('v').body, 'answered after one re-login')
  t.equal(vault.count(/login$/), 2)

  const strict = new FakeVault()
  strict.on(/login$/, () => loginAnswer('hvs.only'))
  strict.on(/^GET secret/, () => denied())
  const fresh = setup(strict)
  const err = (await fresh.session.request(read, jwt, fresh.deadline(), 'object "a"').catch((e) => e)) as ProviderError
  t.equal(err.code, 'VAULT_PERMISSION_DENIED')
  t.match(
    err.message,
    /^object "a": GET secret\/data\/app in namespace "team-a" \(role "web", auth mount "kubernetes"\): Vault answered 403: permission denied$/,
  )
  t.equal(strict.count(/login$/), 1, 'a token just obtained is not replaced')
})

t.test('a shared login: each caller gives up on its own deadline, the login goes on for the others', async (t) => {
  const vault = new FakeVault()
  const login = gate()
  let loginSignal: AbortSignal | undefined
  vault.on(/login$/, async (c) => {
    loginSignal = c.signal
    await login.wait
    return loginAnswer('hvs.shared')
  })
  vault.on(/^GET secret/, () => kvAnswer('v'))
  const { session, time, deadline } = setup(vault)
  const hasty = session.request(read, jwt, deadline(1_000), 'object "a"').catch((e: ProviderError) => e)
  const patient = session.request(read, jwt, deadline(20_000), 'object "b"')
  await time.advance(1_000 + SETTLE_GRACE_MS)
  const err = (await hasty) as ProviderError
  t.equal(err.code, 'DEADLINE_EXCEEDED')
  t.match(
    err.message,
    /^login to Vault at https:\/\/vault\.test:8200 in namespace "team-a" \(role "web", auth mount "kubernetes"\): Vault did not answer before the Mount's deadline$/,
  )
  t.equal(loginSignal?.aborted, false, 'the login was not aborted: someone still waits')
  login.open()
  t.same(await patient, kvAnswer('v').body, 'the patient caller got its answer with the shared login')
  t.equal(vault.count(/login$/), 1)
})

t.test('when every caller of a shared login has left, the login is aborted', async (t) => {
  const vault = new FakeVault()
  let loginSignal: AbortSignal | undefined
  vault.on(/login$/, (c) => {
    loginSignal = c.signal
    return new Promise(() => undefined)
  })
  const { session, time, deadline } = setup(vault)
  const one = new AbortController()
  const two = new AbortController()
  const a = session.request(read, jwt, deadline(30_000, one.signal), 'a').catch((e: ProviderError) => e)
  const b = session.request(read, jwt, deadline(30_000, two.signal), 'b').catch((e: ProviderError) => e)
  await time.advance(0)
  one.abort()
  t.match(await a, { code: 'CANCELLED', message: /the driver cancelled the Mount before Vault answered/ })
  t.equal(loginSignal?.aborted, false)
  two.abort()
  await b
  t.equal(loginSignal?.aborted, true, 'nobody waits: the login call is aborted')
  t.equal(vault.inFlight, 0)
})

t.test('a caller that has left sends nothing more', async (t) => {
  const vault = new FakeVault()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret/, () => kvAnswer('v'))
  const { session, deadline } = setup(vault)
  await session.request(read, jwt, deadline(), 'a')
  const before = vault.calls.length
  const gone = new AbortController()
  gone.abort()
  const err = (await session
    .request(read, jwt, deadline(30_000, gone.signal), 'object "a"')
    .catch((e) => e)) as ProviderError
  t.equal(err.code, 'CANCELLED')
  t.equal(vault.calls.length, before, 'no Vault call was made')
})

t.test('revoke() revokes the token with the token itself, then forgets it', async (t) => {
  const vault = new FakeVault()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret/, () => kvAnswer('v'))
  vault.on(/revoke-self$/, () => ({ status: 204, body: '' }))
  const { session, deadline } = setup(vault)
  await session.request(read, jwt, deadline(), 'a')
  await session.revoke()
  const revoke = vault.calls.find((c) => c.path.endsWith('revoke-self'))
  t.equal(revoke?.token, 'hvs.t')
  t.equal(revoke?.method, 'POST')
  await session.request(read, jwt, deadline(), 'a')
  t.equal(vault.count(/login$/), 2, 'a revoked identity logs in again')
})

// Reads through the identity's cache (fetch): coalesced while in flight, kept as their lifetime
// says, renewed when due. The cache's own rules are in secret-cache.test.ts.

let issued = 0
/** A database credential, a new one per call. */
const credsAnswer = (ttlSec = 60) => ({
  status: 200,
  body: {
    lease_id: `database/creds/app/${++issued}`,
    lease_duration: ttlSec,
    renewable: true,
    data: { username: `u${issued}` },
  },
})
const creds: VaultRequest = { method: 'GET', path: 'database/creds/app', query: [] }
const username = (o: { body: unknown }): string => (o.body as { data: { username: string } }).data.username

/** A Vault whose logins answer at once and whose answers to `route` wait until the test opens `held`. */
function holding(route: RegExp, answer: () => VaultAnswer): { vault: FakeVault; held: ReturnType<typeof gate> } {
  const vault = new FakeVault()
  const held = gate()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(route, async () => {
    await held.wait
    return answer()
  })
  return { vault, held }
}

t.test('identical reads in flight share one Vault call; with freshness 0 the next Mount reads again', async (t) => {
  const { vault, held } = holding(/^GET secret/, () => kvAnswer('v'))
  const { session, deadline, time } = setup(vault)
  const all = Promise.all(['p1', 'p2', 'p3'].map((pod) => session.fetch(read, 'k', pod, jwt, deadline(), 'a')))
  await time.advance(0)
  held.open()
  t.same(
    (await all).map((o) => o.source),
    ['vault', 'coalesced', 'coalesced'],
  )
  t.equal(vault.count(/^GET/), 1)
  t.equal((await session.fetch(read, 'k', 'p1', jwt, deadline(), 'a')).source, 'vault')
  t.equal(vault.count(/^GET/), 2, 'the next Mount reads again')
})

t.test("leased answers are each pod's own: two pods in flight get two credentials, kept per pod", async (t) => {
  const { vault, held } = holding(/^GET database/, () => credsAnswer())
  const { session, deadline, time } = setup(vault)
  const racing = Promise.all(['p1', 'p2'].map((pod) => session.fetch(creds, 'c', pod, jwt, deadline(), 'a')))
  await time.advance(0)
  held.open()
  const [one, two] = await racing
  t.not(username(one!), username(two!), 'two pods, two credentials')
  t.same([one!.source, two!.source], ['vault', 'vault'])
  t.equal(vault.count(/^GET database/), 2)
  const again = await session.fetch(creds, 'c', 'p1', jwt, deadline(), 'a')
  t.equal(again.source, 'cache')
  t.equal(username(again), username(one!), 'the pod keeps its credential')
})

t.test('a failed read reaches every waiter and is not kept', async (t) => {
  let fail = true
  const { vault, held } = holding(/^GET secret/, () => (fail ? denied() : kvAnswer('v')))
  const { session, deadline, time } = setup(vault, identity, 60_000)
  const both = Promise.all(
    ['p1', 'p2'].map((pod) => session.fetch(read, 'k', pod, jwt, deadline(), 'a').catch((e) => e)),
  )
  await time.advance(0)
  held.open()
  t.same(
    (await both).map((e: ProviderError) => e.code),
    ['VAULT_PERMISSION_DENIED', 'VAULT_PERMISSION_DENIED'],
  )
  t.equal(vault.count(/^GET/), 1)
  fail = false
  t.equal((await session.fetch(read, 'k', 'p1', jwt, deadline(), 'a')).source, 'vault')
})

t.test('a due lease is renewed and served again; one renewed for a sliver is replaced', async (t) => {
  const vault = new FakeVault()
  let granted = 60
  vault.on(/login$/, () => loginAnswer('hvs.t', 3600))
  vault.on(/^GET database/, () => credsAnswer(30))
  vault.on(/^PUT sys\/leases\/renew$/, () => ({ status: 200, body: { lease_duration: granted, renewable: true } }))
  const { session, deadline, time } = setup(vault)
  const first = await session.fetch(creds, 'c', 'p1', jwt, deadline(), 'a')
  await time.advance(19_000)
  t.equal((await session.fetch(creds, 'c', 'p1', jwt, deadline(), 'a')).source, 'cache', 'before two thirds')
  await time.advance(2_000)
  const renewed = await session.fetch(creds, 'c', 'p1', jwt, deadline(), 'a')
  t.equal(renewed.source, 'renewed', 'past it: renewed (60 s granted)')
  t.equal(username(renewed), username(first))
  const renewal = vault.calls.find((c) => c.path === 'sys/leases/renew')
  t.same(renewal?.body, { lease_id: (first.body as { lease_id: string }).lease_id }, 'the lease itself')
  t.equal(renewal?.token, 'hvs.t')
  granted = 5
  await time.advance(40_000)
  const replaced = await session.fetch(creds, 'c', 'p1', jwt, deadline(), 'a')
  t.equal(vault.count(/renew$/), 2, 'tried to renew')
  t.equal(replaced.source, 'vault', 'then read a new one')
  t.not(username(replaced), username(first))
})

t.test('a shared read: each waiter gives up on its own deadline; the read goes on for the others', async (t) => {
  const vault = new FakeVault()
  const held = gate()
  let readSignal: AbortSignal | undefined
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret/, async (c) => {
    readSignal = c.signal
    await held.wait
    return kvAnswer('v')
  })
  const { session, deadline, time } = setup(vault)
  const leader = session.fetch(read, 'k', 'p1', jwt, deadline(1_000), 'object "a"').catch((e: ProviderError) => e)
  const follower = session.fetch(read, 'k', 'p2', jwt, deadline(10_000), 'object "b"')
  await time.advance(1_000 + SETTLE_GRACE_MS)
  const err = (await leader) as ProviderError
  t.equal(err.code, 'DEADLINE_EXCEEDED')
  t.equal(
    err.message,
    'object "a": GET secret/data/app in namespace "team-a" (role "web", auth mount "kubernetes"): ' +
      "Vault did not answer before the Mount's deadline",
  )
  t.equal(readSignal?.aborted, false, 'the read goes on for the follower')
  held.open()
  t.equal((await follower).source, 'coalesced', 'the follower got the answer')
  t.equal(vault.count(/^GET/), 1)
})

t.test('when every waiter of a shared read has left, the read is aborted; the next one starts anew', async (t) => {
  const vault = new FakeVault()
  let readSignal: AbortSignal | undefined
  let hang = true
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret/, (c) => {
    readSignal = c.signal
    return hang ? new Promise(() => undefined) : kvAnswer('v')
  })
  const { session, deadline, time } = setup(vault)
  const one = new AbortController()
  const two = new AbortController()
  const a = session.fetch(read, 'k', 'p1', jwt, deadline(10_000, one.signal), 'a').catch((e: ProviderError) => e.code)
  const b = session.fetch(read, 'k', 'p2', jwt, deadline(10_000, two.signal), 'b').catch((e: ProviderError) => e.code)
  await time.advance(0)
  one.abort()
  t.equal(await a, 'CANCELLED')
  t.equal(readSignal?.aborted, false, 'still read for the other')
  two.abort()
  t.equal(await b, 'CANCELLED')
  t.equal(readSignal?.aborted, true, 'nobody waits: the read is aborted')
  hang = false
  t.equal((await session.fetch(read, 'k', 'p3', jwt, deadline(), 'c')).source, 'vault', 'not joined: a new read')
  t.equal(vault.count(/^GET/), 2)
})

t.test('a cold read takes the token first, on the caller’s deadline: the shared read holds no login', async (t) => {
  const vault = new FakeVault()
  const login = gate()
  vault.on(/login$/, async () => {
    await login.wait
    return loginAnswer('hvs.t')
  })
  vault.on(/^GET secret/, () => kvAnswer('v'))
  const { session, deadline, time } = setup(vault)
  const hasty = session.fetch(read, 'k', 'p1', jwt, deadline(1_000), 'object "a"').catch((e: ProviderError) => e)
  const patient = session.fetch(read, 'k', 'p2', jwt, deadline(10_000), 'object "b"')
  await time.advance(1_000 + SETTLE_GRACE_MS)
  const err = (await hasty) as ProviderError
  t.equal(err.code, 'DEADLINE_EXCEEDED')
  t.match(err.message, /^login to Vault at https:\/\/vault\.test:8200 /, 'it gave up waiting for the login')
  t.equal(vault.count(/^GET/), 0, 'no read has started yet')
  login.open()
  t.equal((await patient).source, 'vault', 'the patient caller leads the read once it has the token')
  t.equal(vault.count(/login$/), 1)
})

t.test(
  "each read states its consistency; eventual ones carry the index of the identity's own login or write",
  async (t) => {
    const vault = new FakeVault()
    // The transport tells the caller the index a successful answer carried (transport/consistency.ts).
    vault.on(/login$/, (c) => {
      c.consistency?.onIndex?.('index-of-login')
      return loginAnswer('hvs.t')
    })
    vault.on(/^GET secret\/data\/app$/, (c) => {
      c.consistency?.onIndex?.('index-of-a-standby')
      return kvAnswer('v')
    })
    vault.on(/^PUT pki\/issue\/web$/, (c) => {
      c.consistency?.onIndex?.('index-of-write')
      return { status: 200, body: { data: {} } }
    })
    const { session, deadline } = setup(vault)
    const eventual: VaultRequest = { ...read, consistency: 'eventual' }
    await session.request(read, jwt, deadline(), 'strong')
    await session.request(eventual, jwt, deadline(), 'eventual')
    await session.request(
      { method: 'PUT', path: 'pki/issue/web', query: [], body: {}, consistency: 'eventual' },
      jwt,
      deadline(),
      'write',
    )
    await session.request(eventual, jwt, deadline(), 'eventual after a write')
    const stated = vault.calls.map((c) => [`${c.method} ${c.path}`, c.consistency?.mode, c.consistency?.after])
    t.same(stated, [
      ['POST auth/kubernetes/login', undefined, undefined],
      ['GET secret/data/app', 'strong', undefined],
      ['GET secret/data/app', 'eventual', 'index-of-login'],
      ['PUT pki/issue/web', 'eventual', 'index-of-login'],
      ['GET secret/data/app', 'eventual', 'index-of-write'],
    ])
    t.ok(vault.calls[0]!.consistency?.onIndex, "the login's index is noted")
    t.equal(vault.calls[1]!.consistency?.onIndex, undefined, "a read's index is a standby's, not this identity's write")
    t.same(vault.calls.at(-1)!.consistency?.after, 'index-of-write', 'the latest of its own, not a read’s')
  },
)

t.test("after one node's answer, the retry goes over a connection of its own", async (t) => {
  const vault = new FakeVault()
  let logins = 0
  vault.on(/login$/, () => {
    if (++logins === 1) throw new VaultHttpError(503, ['Vault is sealed'], undefined, { kind: 'errors', entries: 1 })
    return loginAnswer('hvs.t')
  })
  let reads = 0
  vault.on(/^GET secret\/data\/app$/, () => {
    if (++reads === 1) {
      throw new VaultRedirect(307, 'http://10.0.0.1:8200', '"http://10.0.0.1:8200"')
    }
    return kvAnswer('v')
  })
  const { session, deadline, time } = setup(vault)
  const answered = session.request(read, jwt, deadline(), 'object "a"')
  // Each retry after one node's answer waits at most nodeMaxDelayMs (1 s).
  await time.advance(2_000)
  await answered
  t.same(
    vault.calls.map((c) => [`${c.method} ${c.path}`, c.freshConnection === true]),
    [
      ['POST auth/kubernetes/login', false],
      ['POST auth/kubernetes/login', true],
      ['GET secret/data/app', false],
      ['GET secret/data/app', true],
    ],
  )
})

t.test('an eventual read joins only an identical one carrying the same index', async (t) => {
  const vault = new FakeVault()
  vault.on(/login$/, (c) => {
    c.consistency?.onIndex?.('index-of-login')
    return loginAnswer('hvs.t')
  })
  const reading = gate()
  vault.on(/^GET secret\/data\/app$/, async () => {
    await reading.wait
    return kvAnswer('v')
  })
  vault.on(/^PUT pki\/issue\/web$/, (c) => {
    c.consistency?.onIndex?.('index-of-write')
    return { status: 200, body: { data: {} } }
  })
  const { session, deadline } = setup(vault)
  const [planned] = planRequests(parseObjects('- {objectName: a, secretPath: secret/data/app}'), undefined, 'eventual')
  const first = session.fetch(planned!.request, planned!.key, 'uid-1', jwt, deadline(), 'a')
  const joined = session.fetch(planned!.request, planned!.key, 'uid-1', jwt, deadline(), 'a')
  while (vault.count(/^GET/) < 1) await new Promise((r) => setImmediate(r))
  await session.request({ method: 'PUT', path: 'pki/issue/web', query: [], body: {} }, jwt, deadline(), 'write')
  const after = session.fetch(planned!.request, planned!.key, 'uid-1', jwt, deadline(), 'a')
  while (vault.count(/^GET/) < 2) await new Promise((r) => setImmediate(r))
  reading.open()
  t.same(
    (await Promise.all([first, joined, after])).map((o) => o.source),
    ['vault', 'coalesced', 'vault'],
  )
  t.same(
    vault.calls.filter((c) => c.method === 'GET').map((c) => c.consistency?.after),
    ['index-of-login', 'index-of-write'],
    'the read after the write did not join the one before it',
  )
})

t.test("each call of a Mount is due at the Mount's deadline (tenant-slots.ts orders by it)", async (t) => {
  const vault = new FakeVault()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret/, () => kvAnswer('v'))
  const { session, deadline } = setup(vault)
  const mount = deadline(5_000)
  await session.fetch(read, 'k', 'p1', jwt, mount, 'object "a"')
  t.same(
    vault.calls.map((c) => [c.method, c.dueAt]),
    [
      ['POST', mount.expiresAt],
      ['GET', mount.expiresAt],
    ],
  )
})
