// One identity's conversation with Vault, against a fake transport and on injected time:
// one login at a time, renewal at two thirds of the TTL, a re-login when a cached token is
// refused, and callers that each give up on their own deadline. Nothing here sleeps.
import { Writable } from 'node:stream'
import t from 'tap'
import type { ProviderError } from '../../../../src/errors.js'
import { createLogger } from '../../../../src/observability/logger.js'
import type { CancelSignal } from '../../../../src/util/cancellation.js'
import { Deadline } from '../../../../src/util/deadline.js'
import type { VaultRequest } from '../../../../src/vault/paths.js'
import { VaultSession, type VaultIdentity } from '../../../../src/vault/sessions/session.js'
import { planRequests } from '../../../../src/mount/plan.js'
import { parseObjects } from '../../../../src/request/objects.js'
import { FakeVault, NO_BREAKER, denied, gate, kvAnswer, loginAnswer } from '../../../support/fake-vault.js'
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
    clock: time.clock,
    timers: time,
    sleep: async () => undefined,
  })
  return { session, time, deadline: (ms = 30_000, signal?: AbortSignal) => Deadline.in(ms, signal, time.clock) }
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
  let loginSignal: CancelSignal | undefined
  vault.on(/login$/, async (c) => {
    loginSignal = c.cancel
    await login.wait
    return loginAnswer('hvs.shared')
  })
  vault.on(/^GET secret/, () => kvAnswer('v'))
  const { session, time, deadline } = setup(vault)
  const hasty = session.request(read, jwt, deadline(1_000), 'object "a"').catch((e: ProviderError) => e)
  const patient = session.request(read, jwt, deadline(20_000), 'object "b"')
  await time.advance(1_000)
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
  let loginSignal: CancelSignal | undefined
  vault.on(/login$/, (c) => {
    loginSignal = c.cancel
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
  t.equal(revoke?.operation, 'revoke')
  await session.request(read, jwt, deadline(), 'a')
  t.equal(vault.count(/login$/), 2, 'a revoked identity logs in again')
})
