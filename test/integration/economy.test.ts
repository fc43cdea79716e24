// What the provider costs Vault: one login per identity, token renewal,
// reuse of leased and issued secrets per pod, coalesced reads, revocation of
// idle identities. Counted from OpenBao's own audit log.
import { X509Certificate } from 'node:crypto'
import t from 'tap'
import { DEFAULT_POLICY, Fixture, JWT_MOUNT } from '../support/fixture.js'
import { createJwtRole } from '../support/jwt.js'
import { findLeaks } from '../support/leaks.js'
import { configurePki } from '../support/pki.js'
import { configurePostgresSecretsEngine, startPostgres } from '../support/postgres.js'

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

type AuditEntry = { type?: string; request?: { path?: string; operation?: string } }

async function auditCount(fx: Fixture, file: string, match: (path: string) => boolean): Promise<number> {
  const entries = (await fx.bao.readAuditLog(file)) as AuditEntry[]
  return entries.filter((e) => e.type === 'response' && match(e.request?.path ?? '')).length
}

const KV = [{ objectName: 'v', secretPath: 'secret/data/eco', secretKey: 'value' }]

t.test('tokens: one login under 50 concurrent Mounts, renewal before expiry, revocation when idle', async (t) => {
  const fx = await Fixture.start({ args: ['-identity-idle-timeout=12s'] })
  t.teardown(() => fx.stop())
  const audit = await fx.bao.enableFileAudit()
  await fx.kvPut('eco', { value: 'economy-secret-9' })
  const logins = (): Promise<number> => auditCount(fx, audit, (p) => p === 'auth/jwt/login')

  const busy = { name: 'busy', uid: 'uid-busy' }
  const results = await Promise.all(Array.from({ length: 50 }, () => fx.mount({ pod: busy, params: { objects: KV } })))
  t.equal(results.filter((r) => r.result.ok).length, 50, 'all 50 Mounts succeed')
  t.equal(await logins(), 1, 'one login for 50 concurrent Mounts of one pod')

  await createJwtRole(fx.bao, JWT_MOUNT, 'short', {
    policies: [DEFAULT_POLICY],
    boundAudiences: ['vault'],
    ttl: '12s',
    maxTtl: '120s',
  })
  const pod = { name: 'short-lived-token', uid: 'uid-short' }
  const t0 = Date.now()
  const first = await fx.mount({ pod, params: { objects: KV, roleName: 'short' } })
  t.ok(first.result.ok, first.result.message)
  // The login happened between t0 and now: 8.3 s from now is past two thirds of its 12 s TTL and,
  // unless that first Mount took over 3.7 s, before its end. The token in use is renewed, not replaced.
  t.ok(Date.now() - t0 < 3700, 'the first Mount was quick enough for the timing below')
  await sleep(8300)
  const again = await fx.mount({ pod, params: { objects: KV, roleName: 'short' } })
  t.ok(again.result.ok, again.result.message)
  t.equal(await auditCount(fx, audit, (p) => p === 'auth/token/renew-self'), 1, 'renewed once')
  t.equal(await logins(), 2, 'no new login for the renewed identity')

  // Not seen for the idle time (12 s; the sweep runs every 3 s): revoked and forgotten. The busy
  // pod's 1 h token is certainly revoked; the renewed 12 s one may have expired by itself first.
  await sleep(16_000)
  t.ok((await auditCount(fx, audit, (p) => p === 'auth/token/revoke-self')) >= 1, 'the idle live token revoked')
  const later = await fx.mount({ pod, params: { objects: KV, roleName: 'short' } })
  t.ok(later.result.ok, later.result.message)
  t.equal(await logins(), 3, 'a new login after revocation')
  t.same(findLeaks(await fx.provider.logs(), ['economy-secret-9', ...fx.issuedJwts]), [])
})

t.test('static reads: a rotated KV value shows at the next Mount; a freshness window shares reads', async (t) => {
  const fx = await Fixture.start({ args: ['-identity-scope=serviceaccount'] })
  t.teardown(() => fx.stop())
  const audit = await fx.bao.enableFileAudit()
  await fx.kvPut('eco', { value: 'one' })
  const first = await fx.mount({ params: { objects: KV } })
  t.equal(first.files.get('v')?.bytes.toString(), 'one')
  await fx.kvPut('eco', { value: 'two' })
  const second = await fx.mount({ params: { objects: KV } })
  t.equal(second.files.get('v')?.bytes.toString(), 'two', 'default freshness 0: rotation visible at once')

  t.equal(await auditCount(fx, audit, (p) => p === 'auth/jwt/login'), 1, 'one login for the service account')

  // With a freshness window, 20 pods of the service account cost one read between them.
  // (How many concurrent reads coalesce depends on timing; the unit tests pin that down.)
  await fx.restartProvider('SIGTERM', { args: ['-identity-scope=serviceaccount', '-static-freshness=30s'] })
  const before = await auditCount(fx, audit, (p) => p === 'secret/data/eco')
  const storm = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      fx.mount({ pod: { name: `p-${i}`, uid: `uid-${i}` }, params: { objects: KV } }),
    ),
  )
  t.equal(storm.filter((r) => r.result.ok).length, 20)
  const reads = (await auditCount(fx, audit, (p) => p === 'secret/data/eco')) - before
  t.equal(reads, 1, '20 pods of one service account, one read')
  t.equal(storm[19]?.files.get('v')?.bytes.toString(), 'two')
  t.equal(await auditCount(fx, audit, (p) => p === 'auth/jwt/login'), 2, 'one more login: the restarted provider')
})

t.test('serviceaccount scope never shares between two service accounts', async (t) => {
  const fx = await Fixture.start({ args: ['-identity-scope=serviceaccount'] })
  t.teardown(() => fx.stop())
  const audit = await fx.bao.enableFileAudit()
  await createJwtRole(fx.bao, JWT_MOUNT, 'any-sa', { policies: [DEFAULT_POLICY], boundAudiences: ['vault'] })
  await fx.kvPut('eco', { value: 'x' })
  const a = await fx.mount({ pod: { serviceAccount: 'sa-a' }, params: { objects: KV, roleName: 'any-sa' } })
  const b = await fx.mount({ pod: { serviceAccount: 'sa-b' }, params: { objects: KV, roleName: 'any-sa' } })
  t.ok(a.result.ok && b.result.ok)
  t.equal(await auditCount(fx, audit, (p) => p === 'auth/jwt/login'), 2, 'each service account logs in itself')
})

t.test('leased and issued secrets are reused per pod until their renewal point', async (t) => {
  const pg = await startPostgres()
  const fx = await Fixture.start()
  t.teardown(async () => {
    await fx.stop()
    await pg.stop()
  })
  const audit = await fx.bao.enableFileAudit()
  await configurePostgresSecretsEngine(fx.bao, pg, { role: 'app', defaultTtl: '9s', maxTtl: '14s' })
  await configurePki(fx.bao, {
    rootCommonName: 'Eco Root',
    rootTtl: '24h',
    role: 'web',
    allowedDomains: ['example.test'],
    maxTtl: '1h',
  })
  await fx.bao.writePolicy(
    DEFAULT_POLICY,
    'path "secret/*" { capabilities = ["read"] }\npath "database/creds/app" { capabilities = ["read"] }\npath "pki/issue/web" { capabilities = ["update"] }\npath "sys/leases/renew" { capabilities = ["update"] }',
  )
  const objects = [
    { objectName: 'db-user', secretPath: 'database/creds/app', secretKey: 'username' },
    { objectName: 'db-pass', secretPath: 'database/creds/app', secretKey: 'password' },
    {
      objectName: 'tls.crt',
      secretPath: 'pki/issue/web',
      method: 'PUT',
      secretKey: 'certificate',
      secretArgs: { common_name: 'a.example.test', ttl: '6s' },
    },
  ]
  const pod = { name: 'db-pod', uid: 'uid-db' }
  const serial = (files: Map<string, { bytes: Buffer }>): string =>
    new X509Certificate(files.get('tls.crt')!.bytes).serialNumber

  // Waits are measured from before the first Mount, so a slow machine only makes them longer:
  // the lease (9 s TTL, 14 s max) is created after t0.
  const t0 = Date.now()
  const until = (ms: number): Promise<void> => sleep(Math.max(0, t0 + ms - Date.now()))
  const m1 = await fx.mount({ pod, params: { objects } })
  t.ok(m1.result.ok, m1.result.message)
  const m2 = await fx.mount({ pod, params: { objects } })
  t.equal(
    m2.files.get('db-user')?.bytes.toString(),
    m1.files.get('db-user')?.bytes.toString(),
    'same database user on re-mount',
  )
  t.equal(serial(m2.files), serial(m1.files), 'same certificate on re-mount')
  t.equal(m2.result.objectVersions['tls.crt'], m1.result.objectVersions['tls.crt'], 'object version unchanged')

  const other = await fx.mount({ pod: { name: 'db-pod-2', uid: 'uid-db-2' }, params: { objects } })
  t.not(
    other.files.get('db-user')?.bytes.toString(),
    m1.files.get('db-user')?.bytes.toString(),
    'another pod gets its own',
  )

  // Past two thirds of the lease (6 s of 9 s), and of the certificate's 6 s: the lease is renewed
  // (same user, at least 3.5 s more granted), the certificate re-issued.
  await until(6500)
  const m3 = await fx.mount({ pod, params: { objects } })
  t.ok(m3.result.ok, m3.result.message)
  t.equal(
    m3.files.get('db-user')?.bytes.toString(),
    m1.files.get('db-user')?.bytes.toString(),
    'lease renewed, same user',
  )
  t.not(serial(m3.files), serial(m1.files), 'certificate re-issued past two thirds of its validity')
  t.ok((await auditCount(fx, audit, (p) => p === 'sys/leases/renew')) >= 1, 'the lease was renewed')

  // Past the lease's max TTL (14 s): it cannot live on, a new credential is issued.
  await until(14_500)
  const m4 = await fx.mount({ pod, params: { objects } })
  t.ok(m4.result.ok, m4.result.message)
  t.not(m4.files.get('db-user')?.bytes.toString(), m1.files.get('db-user')?.bytes.toString(), 're-issued near max TTL')
  t.equal(
    await auditCount(fx, audit, (p) => p === 'database/creds/app'),
    3,
    'three credentials: pod 1 twice, pod 2 once',
  )
  t.same(findLeaks(await fx.provider.logs(), [m1.files.get('db-pass')!.bytes.toString(), ...fx.issuedJwts]), [])
})
