// Sessions by identity on injected time: one session (one login) per identity, none shared
// between identities, and identities idle for -identity-idle are revoked and forgotten.
import { Writable } from 'node:stream'
import t from 'tap'
import { createLogger } from '../../../../src/observability/logger.js'
import { Deadline } from '../../../../src/util/deadline.js'
import { SessionPool } from '../../../../src/vault/sessions/pool.js'
import type { VaultIdentity } from '../../../../src/vault/sessions/session.js'
import { FakeVault, fakePoolOptions, kvAnswer, loginAnswer } from '../../../support/fake-vault.js'
import { ManualTime } from '../../../support/manual-time.js'

const logger = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }))
const id = (uid: string, serviceAccount = 'web'): VaultIdentity => ({
  connection: { address: 'https://vault.test:8200', tls: { skipVerify: false } },
  authMount: 'kubernetes',
  role: 'web',
  audience: 'vault',
  pod: { name: 'p', namespace: 'shop', uid, serviceAccount },
})
const read = { method: 'GET' as const, path: 'secret/data/app', query: [] }

function setup(scope: 'pod' | 'serviceaccount'): { pool: SessionPool; vault: FakeVault; time: ManualTime } {
  const vault = new FakeVault()
  let n = 0
  vault.on(/login$/, () => loginAnswer(`hvs.t${++n}`, 3600))
  vault.on(/^GET secret/, () => kvAnswer('v'))
  vault.on(/revoke-self$/, () => ({ status: 204, body: '' }))
  const time = new ManualTime()
  const pool = new SessionPool(
    fakePoolOptions(logger, { get: async () => vault }, time, {
      scope,
      idleRevokeMs: 60_000,
      autoSweep: false,
    }),
  )
  t.teardown(() => pool.close())
  return { pool, vault, time }
}

t.test('one session per identity: pod scope keeps pods apart, serviceaccount scope shares', async (t) => {
  const pods = setup('pod')
  const a = await pods.pool.session(id('a'))
  t.equal(await pods.pool.session(id('a')), a, 'the same identity gets its session back')
  t.not(await pods.pool.session(id('b')), a, 'another pod, another session')
  const shared = setup('serviceaccount')
  const s = await shared.pool.session(id('a'))
  t.equal(await shared.pool.session(id('b')), s, 'same service account and role: shared')
  t.not(await shared.pool.session(id('a', 'other')), s, 'never across service accounts')
})

t.test("a login in another namespace is another identity, whatever the reads' namespace", async (t) => {
  const { pool } = setup('serviceaccount')
  const inNs = (namespace?: string, authNamespace?: string): VaultIdentity => {
    const base = id('a')
    return {
      ...base,
      connection: {
        ...base.connection,
        ...(namespace === undefined ? {} : { namespace }),
        ...(authNamespace === undefined ? {} : { authNamespace }),
      },
    }
  }
  const plain = await pool.session(inNs('team-a'))
  t.not(await pool.session(inNs('team-a', 'team-b')), plain, 'login in team-b: not the team-a token')
  t.not(await pool.session(inNs('team-b')), plain, 'reads and login in team-b')
  t.not(await pool.session(inNs()), plain, 'the root namespace')
  t.equal(await pool.session(inNs('team-a')), plain, 'the same namespaces get the session back')
})

t.test('idle identities are revoked with their own token and forgotten; active ones stay', async (t) => {
  const { pool, vault, time } = setup('pod')
  const jwt = async (): Promise<string> => 'jwt'
  const idle = await pool.session(id('idle'))
  await idle.request(read, jwt, Deadline.in(10_000, undefined, time), 'a')
  await time.advance(30_000)
  const active = await pool.session(id('active'))
  await active.request(read, jwt, Deadline.in(10_000, undefined, time), 'a')
  await time.advance(30_000)
  t.equal(await pool.sweepIdle(), 1, 'only the identity idle for 60 s')
  t.equal(vault.count(/revoke-self$/), 1)
  t.equal(vault.calls.find((c) => c.path.endsWith('revoke-self'))?.token, 'hvs.t1')
  t.equal(pool.size, 1)
  t.not(await pool.session(id('idle')), idle, 'a new session if the pod comes back')
})

t.test("one identity's slow revocation does not hold up the others'", async (t) => {
  const { pool, vault, time } = setup('pod')
  const jwt = async (): Promise<string> => 'jwt'
  let release: () => void = () => undefined
  const held = new Promise<void>((r) => (release = r))
  // The first identity's token (hvs.t1) is revoked only when released; the others' at once.
  vault.on(/revoke-self$/, async (c) => {
    if (c.token === 'hvs.t1') await held
    return { status: 204, body: '' }
  })
  for (const uid of ['slow', 'b', 'c', 'd']) {
    const s = await pool.session(id(uid))
    await s.request(read, jwt, Deadline.in(10_000, undefined, time), uid)
  }
  await time.advance(60_000)
  const sweep = pool.sweepIdle()
  while (vault.count(/revoke-self$/) < 4) await new Promise((r) => setImmediate(r))
  t.same(
    vault.calls.filter((c) => c.path.endsWith('revoke-self')).map((c) => c.token),
    ['hvs.t1', 'hvs.t2', 'hvs.t3', 'hvs.t4'],
    'every idle token is being revoked while the first still waits',
  )
  release()
  t.equal(await sweep, 4)
  t.equal(pool.size, 0)
})

t.test('each identity calls Vault with its own token, also where identities share a transport', async (t) => {
  const vault = new FakeVault('https://a.test:8200')
  let logins = 0
  vault.on(/login$/, () => loginAnswer(`hvs.t${++logins}`, 3600)).on(/^GET secret/, () => kvAnswer('v'))
  const time = new ManualTime()
  const pool = new SessionPool(fakePoolOptions(logger, { get: async () => vault }, time))
  t.teardown(() => pool.close())
  const jwt = async (): Promise<string> => 'jwt'
  const a = await pool.session(id('a'))
  const b = await pool.session(id('b'))
  await a.request(read, jwt, Deadline.in(10_000, undefined, time), 'a')
  await b.request(read, jwt, Deadline.in(10_000, undefined, time), 'b')
  await a.request(read, jwt, Deadline.in(10_000, undefined, time), 'a')
  const reads = vault.calls.filter((c) => c.method === 'GET').map((c) => c.token)
  t.same(reads, ['hvs.t1', 'hvs.t2', 'hvs.t1'], "every read carries its own identity's token")
})
