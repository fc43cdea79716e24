// What a pool hands to a successor and takes from a predecessor (src/handover/ carries it between
// processes): the successor goes on with the token and the leases as if it had made them, the
// predecessor never revokes them, and what ended in transit is dropped. On injected time.
import { Writable } from 'node:stream'
import t from 'tap'
import { createLogger } from '../../../../src/observability/logger.js'
import { Deadline } from '../../../../src/util/deadline.js'
import { SessionPool } from '../../../../src/vault/sessions/pool.js'
import type { VaultIdentity } from '../../../../src/vault/sessions/session.js'
import { FakeVault, fakePoolOptions, gate, kvAnswer, loginAnswer } from '../../../support/fake-vault.js'
import { ManualTime } from '../../../support/manual-time.js'

const logger = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }))
const id = (uid: string): VaultIdentity => ({
  connection: { address: 'https://vault.test:8200', tls: { skipVerify: false } },
  authMount: 'kubernetes',
  role: 'web',
  audience: 'vault',
  pod: { name: `p-${uid}`, namespace: 'shop', uid, serviceAccount: 'web' },
})
const creds = { method: 'GET' as const, path: 'database/creds/app', query: [] }
const kv = { method: 'GET' as const, path: 'secret/data/app', query: [] }
const jwt = async (): Promise<string> => 'jwt'

function world(time: ManualTime, vault: FakeVault, idleRevokeMs = 0): SessionPool {
  const pool = new SessionPool(
    fakePoolOptions(logger, { get: async () => vault }, time, { idleRevokeMs, autoSweep: false }),
  )
  t.teardown(() => pool.close())
  return pool
}

function vaultWithLeases(): FakeVault {
  const vault = new FakeVault()
  let logins = 0
  let users = 0
  vault.on(/login$/, () => loginAnswer(`hvs.token-${++logins}`, 3600))
  vault.on(/^GET database\/creds/, () => ({
    status: 200,
    body: {
      lease_id: `database/creds/app/l${++users}`,
      lease_duration: 600,
      renewable: true,
      data: { username: `u${users}` },
    },
  }))
  vault.on(/^GET secret/, () => kvAnswer('v'))
  vault.on(/revoke-self$/, () => ({ status: 204, body: '' }))
  vault.on(/leases\/renew$/, (c) => ({
    status: 200,
    body: { lease_id: (c.body as { lease_id: string }).lease_id, lease_duration: 600, renewable: true },
  }))
  return vault
}

async function read(pool: SessionPool, time: ManualTime, uid: string, req = creds): Promise<unknown> {
  const s = await pool.session(id(uid))
  const d = Deadline.in(10_000, undefined, time)
  return (await s.fetch(req, `key:${req.path}`, uid, jwt, d, 'test')).body
}

t.test('the successor serves the same lease with the same token, and the predecessor revokes nothing', async (t) => {
  const time = new ManualTime()
  const vault = vaultWithLeases()
  const old = world(time, vault, 60_000)
  const first = await read(old, time, 'a')
  await read(old, time, 'b')
  t.equal(vault.count(/login$/), 2)

  await time.advance(1_000)
  const state = old.exportState()
  t.equal(state.length, 2, 'both identities')
  t.equal(state[0]?.entries.length, 1, 'with its lease')

  const next = world(time, vault, 60_000)
  for (const s of state) t.same((await next.importState(s)).outcome, 'taken_over')
  const calls = vault.calls.length
  t.same(await read(next, time, 'a'), first, 'the same credential, from the cache')
  t.equal(vault.calls.length, calls, 'no Vault call for it')
  await read(next, time, 'a', kv)
  t.equal(vault.calls.at(-1)?.token, 'hvs.token-1', "a new read carries the predecessor's token of that identity")

  // Past two thirds of the lease (600 s), the successor renews it with the same token.
  await time.advance(400_000)
  await read(next, time, 'a')
  t.equal(vault.count(/leases\/renew$/), 1, 'the successor renews the lease it took over')
  t.equal(vault.count(/login$/), 2, 'and logs in nowhere')

  // Idle: the predecessor no longer revokes; the successor revokes by the real last use ('a' was used 30 s ago).
  await time.advance(30_000)
  t.equal(await old.sweepIdle(), 0, 'the predecessor revokes nothing it handed over')
  t.equal(await next.sweepIdle(), 1, "the successor revokes 'b', idle since before the handover")
  t.equal(vault.count(/revoke-self$/), 1)
  t.equal(vault.calls.find((c) => c.path.endsWith('revoke-self'))?.token, 'hvs.token-2')
})

t.test('what ended in transit is dropped and counted; an identity the successor has is refused', async (t) => {
  const time = new ManualTime()
  const vault = vaultWithLeases()
  const old = world(time, vault)
  await read(old, time, 'a')
  await read(old, time, 'b')
  const [a, b] = old.exportState()

  const next = world(time, vault)
  await time.advance(601_000)
  const took = await next.importState(a!)
  t.equal(took.outcome, 'taken_over', 'the token (1 h) still lives')
  t.same(took.entries?.leases, { taken: 0, expired: 1 }, 'its lease (600 s) ended in transit')
  t.same((await next.importState(a!)).outcome, 'refused', 'an identity it already has')
  await time.advance(3_600_000)
  t.same((await next.importState(b!)).outcome, 'expired', 'a token that ended in transit')

  const none = new SessionPool(fakePoolOptions(logger, { get: async () => vault }, time, { maxSessions: 0 }))
  t.teardown(() => none.close())
  t.same((await none.importState(a!)).outcome, 'refused', '-cache-size=0 keeps no sessions')
})

t.test('new sessions wait for the state being taken over, then find it', async (t) => {
  const time = new ManualTime()
  const vault = vaultWithLeases()
  const old = world(time, vault)
  await read(old, time, 'a')
  const [state] = old.exportState()
  const next = world(time, vault)
  const held = gate()
  next.holdSessionsUntil(held.wait)
  let got = false
  const waiting = next.session(id('a')).then((s) => {
    got = true
    return s
  })
  await Promise.resolve()
  t.equal(got, false, 'the session waits')
  await next.importState(state!)
  held.open()
  await waiting
  await read(next, time, 'a')
  t.equal(vault.count(/login$/), 1, 'no login: the session came from the state')
})
