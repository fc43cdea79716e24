// What the provider costs Vault: one login per identity, token renewal,
// reuse of leased and issued secrets per pod, coalesced reads, revocation of
// idle identities. Counted from OpenBao's own audit log.
//
// Nothing here waits for time to pass. What depends on the provider's clock (a token's
// renewal point, an identity's idle time, a lease's renewal point) runs the provider's own
// Vault layer in this process on an injected clock, against the real OpenBao: the clock
// moves, OpenBao answers as it would, and its audit log shows what the provider did. The
// rules themselves are pinned down by the unit tests (session, pool, secret cache).
import { X509Certificate } from 'node:crypto'
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import { DEFAULT_MAX_VAULT_RESPONSE_BYTES } from '../../src/config/config.js'
import { ephemeralKey } from '../../src/hmac/hmac-key.js'
import { NodeBudget } from '../../src/mount/budget.js'
import { runMount, type MountResult } from '../../src/mount/mount.js'
import { RenderTurns } from '../../src/mount/render-turns.js'
import { createLogger } from '../../src/observability/logger.js'
import type { MountSpec, SecretObject } from '../../src/request/types.js'
import { Deadline } from '../../src/util/deadline.js'
import { systemTime, type Time } from '../../src/util/time.js'
import { SessionPool } from '../../src/vault/sessions/pool.js'
import { TransportRegistry } from '../../src/vault/transport/registry.js'
import { SecureContexts } from '../../src/vault/transport/secure-contexts.js'
import { DEFAULT_POLICY, DEFAULT_ROLE, Fixture, JWT_MOUNT } from '../support/fixture.js'
import { createJwtRole, signServiceAccountJwt } from '../support/jwt.js'
import { findLeaks } from '../support/leaks.js'
import { ManualTime } from '../support/manual-time.js'
import { configurePki } from '../support/pki.js'
import { configurePostgresSecretsEngine, startPostgres } from '../support/postgres.js'
import { ANY_ADDRESS, NO_BREAKER } from '../support/fake-vault.js'
import { testTransportOptions } from '../support/transport-options.js'

/** The provider's Vault layer in this process, on a manual clock, talking to the fixture's OpenBao. */
function inProcess(t: Test, fx: Fixture, idleRevokeMs = 0) {
  const time = new ManualTime(Date.now())
  // The clock and the waiters' give-up timers move when the test says; a retry against the real
  // OpenBao (a blip) waits in real time, as it would have before the clock was injected.
  const vaultTime: Time = {
    now: time.now,
    setTimeout: (fn, ms) => time.setTimeout(fn, ms),
    clearTimeout: (handle) => time.clearTimeout(handle),
    sleep: systemTime().sleep,
  }
  const transports = new TransportRegistry(testTransportOptions(DEFAULT_MAX_VAULT_RESPONSE_BYTES), new SecureContexts())
  const pool = new SessionPool({
    maxSessions: 100,
    scope: 'pod',
    staticFreshnessMs: 0,
    shareDynamic: false,
    idleRevokeMs,
    // The test moves the clock and sweeps itself.
    autoSweep: false,
    logger: createLogger('error', new Writable({ write: (_c, _e, cb) => cb() })),
    transports,
    breakers: NO_BREAKER,
    time: vaultTime,
  })
  t.teardown(() => {
    pool.close()
    transports.close()
  })
  const renderTurns = new RenderTurns()
  const nodeBudget = new NodeBudget({ mountBytes: 16 * 1024 * 1024, nodeBytes: 64 * 1024 * 1024 })
  const mount = (
    pod: { name: string; uid: string },
    roleName: string,
    objects: Array<Partial<SecretObject> & Pick<SecretObject, 'objectName' | 'secretPath'>>,
  ): Promise<MountResult> => {
    const identity = { namespace: 'default', serviceAccount: 'app', ...pod }
    const token = signServiceAccountJwt({
      namespace: identity.namespace,
      serviceAccount: identity.serviceAccount,
      podName: pod.name,
      podUid: pod.uid,
      audience: 'vault',
    })
    fx.issuedJwts.push(token)
    const spec: MountSpec = {
      pod: identity,
      secretProviderClass: 'test-spc',
      roleName,
      authMount: JWT_MOUNT,
      audience: 'vault',
      vault: { address: fx.bao.addr, tls: { skipVerify: false } },
      readConsistency: 'strong',
      objects: objects.map((o) => ({
        query: [],
        method: 'GET',
        encoding: 'utf-8',
        config: {},
        configJson: '{}',
        ...o,
      })),
      defaultMode: 0o644,
      podTokens: new Map([['vault', { token }]]),
    }
    const deps = {
      pool,
      kube: undefined,
      hmacKey: ephemeralKey(),
      logger: createLogger('error'),
      time: vaultTime,
      renderTurns,
      allowlist: ANY_ADDRESS,
      breakers: NO_BREAKER,
    }
    const budget = nodeBudget.open(identity.namespace)
    return runMount(spec, deps, Deadline.in(30_000, undefined, time), budget).finally(() => budget.release())
  }
  return { time, pool, mount }
}

const fileOf = (r: MountResult, name: string): string =>
  Buffer.from(r.objects.find((o) => o.id === name)?.files[0]?.contents ?? '').toString()

type AuditEntry = { type?: string; request?: { path?: string; operation?: string } }

async function auditCount(fx: Fixture, file: string, match: (path: string) => boolean): Promise<number> {
  const entries = (await fx.bao.readAuditLog(file)) as AuditEntry[]
  return entries.filter((e) => e.type === 'response' && match(e.request?.path ?? '')).length
}

const KV = [{ objectName: 'v', secretPath: 'secret/data/eco', secretKey: 'value' }]

t.test('tokens: one login under 50 concurrent Mounts, renewal before expiry, revocation when idle', async (t) => {
  const fx = await Fixture.start()
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
  // The provider's clock moves, OpenBao's does not need to: past two thirds of the 12 s TTL the
  // token in use is renewed, not replaced; after the idle time the identity is revoked.
  const { time, pool, mount } = inProcess(t, fx, 10_000)
  const pod = { name: 'short-lived-token', uid: 'uid-short' }
  const loginsBefore = await logins()
  await mount(pod, 'short', KV)
  t.equal(await logins(), loginsBefore + 1, 'logged in')
  await time.advance(7_900)
  await mount(pod, 'short', KV)
  t.equal(await auditCount(fx, audit, (p) => p === 'auth/token/renew-self'), 0, 'not renewed before 2/3 of the TTL')
  await time.advance(200)
  await mount(pod, 'short', KV)
  t.equal(await auditCount(fx, audit, (p) => p === 'auth/token/renew-self'), 1, 'renewed once')
  t.equal(await logins(), loginsBefore + 1, 'no new login for the renewed identity')

  // Not seen for the idle time (10 s, while the renewed token still lives): revoked in OpenBao, forgotten.
  await time.advance(10_000)
  t.equal(await pool.sweepIdle(), 1)
  t.equal(await auditCount(fx, audit, (p) => p === 'auth/token/revoke-self'), 1, 'the idle live token revoked')
  await mount(pod, 'short', KV)
  t.equal(await logins(), loginsBefore + 2, 'a new login after revocation')
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
  t.equal(await auditCount(fx, audit, (p) => p === 'database/creds/app'), 2, 'pod 1 once, pod 2 once')

  // Time, through the provider's own clock (in this process): past two thirds of the lease
  // (6 s of 9 s) and of the certificate's 6 s the lease is renewed (same user), the certificate
  // re-issued; past the renewed lease's end, a new credential is issued.
  const { time, mount } = inProcess(t, fx)
  const inPod = { name: 'db-pod-3', uid: 'uid-db-3' }
  const typed = objects.map((o) => ({ ...o, method: (o.method ?? 'GET') as 'GET' | 'PUT' }))
  const certOf = (r: MountResult): string => new X509Certificate(fileOf(r, 'tls.crt')).serialNumber
  const i1 = await mount(inPod, DEFAULT_ROLE, typed)
  const i2 = await mount(inPod, DEFAULT_ROLE, typed)
  t.same(i2.sources, { vault: 0, coalesced: 0, cache: 2, renewed: 0 }, 'both answers reused before their renewal point')
  await time.advance(6_500)
  const i3 = await mount(inPod, DEFAULT_ROLE, typed)
  t.equal(fileOf(i3, 'db-user'), fileOf(i1, 'db-user'), 'lease renewed, same user')
  t.not(certOf(i3), certOf(i1), 'certificate re-issued past two thirds of its validity')
  t.equal(await auditCount(fx, audit, (p) => p === 'sys/leases/renew'), 1, 'the lease was renewed in OpenBao')
  await time.advance(10_000)
  const i4 = await mount(inPod, DEFAULT_ROLE, typed)
  t.not(fileOf(i4, 'db-user'), fileOf(i1, 'db-user'), 'a new credential past the lease end')
  t.equal(
    await auditCount(fx, audit, (p) => p === 'database/creds/app'),
    4,
    'four credentials: pod 1, pod 2, and twice the in-process pod',
  )
  t.same(findLeaks(await fx.provider.logs(), [m1.files.get('db-pass')!.bytes.toString(), ...fx.issuedJwts]), [])
})
