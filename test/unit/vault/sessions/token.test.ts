// One identity's token on its own (src/vault/sessions/token.ts), against a fake transport and on
// injected time: held until two thirds of its TTL, renewed then (or replaced by a login when it
// cannot be renewed enough), one login for concurrent callers, a login answer not issued for the
// pod's token revoked and refused, revoked when the identity goes (not after a handover), and handed
// over with its lifetime. session.test.ts tests the same through the session's reads.
import { Writable } from 'node:stream'
import t from 'tap'
import type { ProviderError } from '../../../../src/errors.js'
import { createLogger } from '../../../../src/observability/logger.js'
import { Deadline } from '../../../../src/util/deadline.js'
import { IdentityClient, type VaultIdentity } from '../../../../src/vault/sessions/identity-client.js'
import { IdentityToken, MIN_TOKEN_RENEWED_SHARE, TOKEN_RENEW_FRACTION } from '../../../../src/vault/sessions/token.js'
import type { VaultAnswer } from '../../../../src/vault/transport/transport.js'
import { FakeVault, NO_BREAKER, denied, gate, loginAnswer } from '../../../support/fake-vault.js'
import { ManualTime } from '../../../support/manual-time.js'

const logger = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }))
const identity: VaultIdentity = {
  connection: { address: 'https://vault.test:8200', namespace: 'team-a', tls: { skipVerify: false } },
  authMount: 'kubernetes',
  role: 'web',
  audience: 'vault',
  pod: { name: 'web-0', namespace: 'shop', uid: 'uid-1', serviceAccount: 'web' },
}
const jwt = async (): Promise<string> => 'pod-jwt'

/** A token of `identity` on `vault`, on time of its own. */
function setup(vault: FakeVault) {
  const time = new ManualTime()
  const client = new IdentityClient(identity, vault, { logger, breakers: NO_BREAKER, time })
  // A login and a renewal are the identity's own writes: their index is noted (session.ts keeps it).
  const token = new IdentityToken(client, { onIndex: () => undefined })
  const deadline = (ms = 30_000, signal?: AbortSignal): Deadline => Deadline.in(ms, signal, time)
  return { token, client, time, deadline }
}

/** A Vault whose logins hand out hvs.token-1, -2, … for `ttlSec`; `renew` answers renew-self. */
function vaultOf(ttlSec: number, renew?: (token: string | undefined) => VaultAnswer): FakeVault {
  const vault = new FakeVault()
  let logins = 0
  vault.on(/login$/, () => loginAnswer(`hvs.token-${++logins}`, ttlSec))
  if (renew) vault.on(/^POST auth\/token\/renew-self$/, (c) => renew(c.token))
  vault.on(/revoke-self$/, () => ({ status: 204, body: '' }))
  return vault
}

const renewedFor =
  (ttlSec: number, renewable = true) =>
  (): VaultAnswer => ({
    status: 200,
    body: { auth: { lease_duration: ttlSec, renewable } },
  })

t.test('a token is held until two thirds of its TTL; concurrent callers share one login', async (t) => {
  const vault = vaultOf(60)
  const login = gate()
  vault.on(/login$/, async () => {
    await login.wait
    return loginAnswer('hvs.token-1', 60)
  })
  const { token, client, time, deadline } = setup(vault)
  const t0 = time.now()
  t.equal(token.current, 0, 'none before the first caller')
  const callers = Promise.all([token.held(jwt, deadline()), token.held(jwt, deadline()), token.held(jwt, deadline())])
  await time.advance(0)
  login.open()
  t.same(await callers, [
    { generation: 1, cached: false },
    { generation: 1, cached: false },
    { generation: 1, cached: false },
  ])
  t.equal(vault.count(/login$/), 1, 'one login for all three')
  t.equal(client.vault.token, 'hvs.token-1', "node-vault's client holds it")
  t.match(vault.calls[0], { path: 'auth/kubernetes/login', namespace: 'team-a', body: { role: 'web', jwt: 'pod-jwt' } })

  await time.advance(60_000 * TOKEN_RENEW_FRACTION - 1)
  t.same(await token.held(jwt, deadline()), { generation: 1, cached: true }, 'held, without a call')
  t.equal(vault.calls.length, 1)
  t.same([...token.expiries], [[1, t0 + 60_000]], 'it expires 60 s after the login')
})

t.test('renewed at two thirds of its TTL: the same token and generation, its lifetime restarted', async (t) => {
  const vault = vaultOf(60, renewedFor(60))
  const { token, time, deadline } = setup(vault)
  await token.held(jwt, deadline())
  await time.advance(40_000)
  t.same(await token.held(jwt, deadline()), { generation: 1, cached: true }, 'still the token the caller came with')
  t.equal(vault.count(/renew-self$/), 1)
  t.equal(vault.calls.at(-1)?.token, 'hvs.token-1', 'renewed with the token itself')
  t.equal(vault.calls.at(-1)?.namespace, 'team-a', "in the token's namespace")
  t.equal(vault.count(/login$/), 1, 'no new login')
  t.equal(token.expiries.get(1), time.now() + 60_000, 'it now expires 60 s after the renewal')
  await time.advance(39_999)
  await token.held(jwt, deadline())
  t.equal(vault.count(/renew-self$/), 1, 'the renewal restarted the clock')
})

t.test('a renewal refused, too short or not renewable: a login replaces the token', async (t) => {
  const cases: Array<[string, FakeVault]> = [
    ['a refused renewal', vaultOf(60, denied)],
    [`a renewal for less than ${MIN_TOKEN_RENEWED_SHARE} of the TTL`, vaultOf(60, renewedFor(14))],
    ['a token that is not renewable', vaultOf(60)],
  ]
  const notRenewable = cases[2]![1]
  notRenewable.on(/login$/, () => loginAnswer('hvs.token-x', 60, false))
  for (const [what, vault] of cases) {
    const { token, time, deadline } = setup(vault)
    await token.held(jwt, deadline())
    await time.advance(40_000)
    t.same(await token.held(jwt, deadline()), { generation: 2, cached: false }, what)
    t.equal(vault.count(/login$/), 2, `${what}: logged in again`)
    t.equal(token.current, 2)
  }
  t.equal(notRenewable.count(/renew-self$/), 0, 'a token that is not renewable is not sent to renew-self')
})

t.test('a token that never expires is never renewed', async (t) => {
  const vault = vaultOf(0, renewedFor(60))
  const { token, time, deadline } = setup(vault)
  await token.held(jwt, deadline())
  await time.advance(365 * 24 * 3_600_000)
  t.same(await token.held(jwt, deadline()), { generation: 1, cached: true })
  t.equal(vault.calls.length, 1, 'one login, nothing more')
  t.equal(token.expiries.get(1), Number.POSITIVE_INFINITY)
})

t.test('invalidate(): the refused generation goes; a later one is kept', async (t) => {
  const vault = vaultOf(3600)
  const { token, deadline } = setup(vault)
  await token.held(jwt, deadline())
  token.invalidate(1)
  t.same(await token.held(jwt, deadline()), { generation: 2, cached: false }, 'the next caller logs in')
  token.invalidate(1)
  t.same(await token.held(jwt, deadline()), { generation: 2, cached: true }, 'someone already logged in again')
  t.equal(vault.count(/login$/), 2)
  t.same([...token.expiries.keys()], [1, 2], 'the previous token’s expiry is kept: its leases die with it')
  token.invalidate(2)
  await token.held(jwt, deadline())
  t.same([...token.expiries.keys()], [2, 3], 'only the current and the previous token are tracked')
})

t.test("a login answer not issued for the pod's token is revoked and refused", async (t) => {
  const answers: Array<[string, Record<string, unknown>, RegExp]> = [
    ['cert auth', { cert_name: 'provider' }, /Vault answered for a certificate identity/],
    ['no role', {}, /the answer names no role/],
    ['another role', { role: 'admin' }, /the answer is for role "admin"/],
    ['another namespace', { role: 'web', service_account_namespace: 'bank' }, /for namespace "bank"/],
    ['another service account', { role: 'web', service_account_name: 'db' }, /for service account "db"/],
  ]
  for (const [what, metadata, reason] of answers) {
    const vault = vaultOf(60)
    vault.on(/login$/, () => ({
      status: 200,
      body: { auth: { client_token: 'hvs.not-the-pods', lease_duration: 60, renewable: true, metadata } },
    }))
    const { token, client, deadline } = setup(vault)
    const err = (await token.held(jwt, deadline()).catch((e: unknown) => e)) as ProviderError
    t.equal(err.code, 'LOGIN_IDENTITY_MISMATCH', what)
    t.match(err.message, reason, what)
    t.notMatch(err.message, /hvs\.not-the-pods/, `${what}: the token is not in the message`)
    const revoke = vault.calls.find((c) => c.path.endsWith('revoke-self'))
    t.equal(revoke?.token, 'hvs.not-the-pods', `${what}: revoked with itself`)
    t.equal(client.vault.token, '', `${what}: not held`)
    t.equal(token.current, 0)
  }
})

t.test('an answer without a client token is a bad response, and nothing is held', async (t) => {
  const vault = vaultOf(60)
  vault.on(/login$/, () => ({ status: 200, body: { auth: { lease_duration: 60 } } }))
  const { token, client, deadline } = setup(vault)
  const err = (await token.held(jwt, deadline()).catch((e: unknown) => e)) as ProviderError
  t.equal(err.code, 'VAULT_BAD_RESPONSE')
  t.equal(client.vault.token, '')
  t.equal(token.current, 0)
})

t.test('a login and a renewal note their index: the identity reads its own writes', async (t) => {
  const vault = vaultOf(60, renewedFor(60))
  const { token, time, deadline } = setup(vault)
  await token.held(jwt, deadline())
  await time.advance(40_000)
  await token.held(jwt, deadline())
  const noted = vault.calls.map((c) => [c.path, c.consistency?.onIndex !== undefined])
  t.same(noted, [
    ['auth/kubernetes/login', true],
    ['auth/token/renew-self', true],
  ])
})

t.test('revoke(): with the token itself, then forgotten; never an expired one', async (t) => {
  const vault = vaultOf(60)
  const { token, client, time, deadline } = setup(vault)
  await token.held(jwt, deadline())
  await token.revoke()
  t.match(vault.calls.at(-1), {
    method: 'POST',
    path: 'auth/token/revoke-self',
    token: 'hvs.token-1',
    namespace: 'team-a',
  })
  t.equal(client.vault.token, '')
  t.equal(token.current, 0)
  t.same(await token.held(jwt, deadline()), { generation: 2, cached: false }, 'a revoked identity logs in again')

  await time.advance(60_000)
  await token.revoke()
  t.equal(vault.count(/revoke-self$/), 1, 'an expired token is not sent to Vault')
  t.equal(client.vault.token, '', 'but it is forgotten')
})

t.test('forget(): dropped without telling Vault (pods may still use its leases)', async (t) => {
  const vault = vaultOf(60)
  const { token, client, deadline } = setup(vault)
  await token.held(jwt, deadline())
  token.forget()
  t.equal(client.vault.token, '')
  t.equal(vault.count(/revoke-self$/), 0)
})

t.test('handover: the token and its lifetime go to a successor, which goes on with them', async (t) => {
  const vault = vaultOf(3600)
  const old = setup(vault)
  t.equal(old.token.export(old.time.now()), undefined, 'nothing to hand over without a token')
  await old.token.held(jwt, old.deadline())
  old.token.invalidate(1)
  await old.token.held(jwt, old.deadline())
  const obtainedAt = old.time.now()
  t.equal(old.token.export(obtainedAt + 3_600_000), undefined, 'an expired token is not handed over')
  const exported = old.token.export(obtainedAt)
  t.same(exported, {
    token: {
      value: 'hvs.token-2',
      generation: 2,
      obtainedAt,
      ttlMs: 3_600_000,
      renewable: true,
      renewAt: obtainedAt + 3_600_000 * TOKEN_RENEW_FRACTION,
      expiresAt: obtainedAt + 3_600_000,
    },
    earlierTokens: [{ generation: 1, expiresAt: obtainedAt + 3_600_000 }],
  })
  await old.token.revoke()
  t.equal(vault.count(/revoke-self$/), 0, 'handed over: this process never revokes it')

  const next = setup(vault)
  t.ok(next.token.import(exported!))
  t.equal(next.client.vault.token, 'hvs.token-2')
  t.same(await next.token.held(jwt, next.deadline()), { generation: 2, cached: true }, 'no login of its own')
  t.same([...next.token.expiries.keys()].sort(), [1, 2], "the earlier token's expiry came along")
  t.notOk(next.token.import(exported!), 'an identity that already has a token keeps it')
})

t.test('a caller that leaves a shared login gives up alone; the last to leave aborts it', async (t) => {
  const vault = vaultOf(60)
  let loginSignal: AbortSignal | undefined
  vault.on(/login$/, (c) => {
    loginSignal = c.signal
    return new Promise<VaultAnswer>(() => undefined)
  })
  const { token, time, deadline } = setup(vault)
  const one = new AbortController()
  const two = new AbortController()
  const a = token.held(jwt, deadline(30_000, one.signal)).catch((e: ProviderError) => e)
  const b = token.held(jwt, deadline(30_000, two.signal)).catch((e: ProviderError) => e)
  await time.advance(0)
  one.abort()
  t.match(await a, {
    code: 'CANCELLED',
    message: /^login to Vault at https:\/\/vault\.test:8200 in namespace "team-a"/,
  })
  t.equal(loginSignal?.aborted, false, 'the login goes on for the other')
  two.abort()
  t.match(await b, { code: 'CANCELLED' })
  t.equal(loginSignal?.aborted, true, 'nobody waits: the login is aborted')
  t.equal(vault.inFlight, 0)
})
