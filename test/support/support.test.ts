// Proves the real-parts test support works on this machine: OpenBao with jwt auth,
// the database secrets engine against a real PostgreSQL, audit logging, seal/unseal,
// and the driver's own client binary.
import t from 'tap'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startOpenBao, type OpenBao } from './openbao.js'
import { configureJwtAuth, createJwtRole, decodeJwtPayload, signServiceAccountJwt } from './jwt.js'
import { configurePostgresSecretsEngine, startPostgres, type Postgres } from './postgres.js'
import { driverMount, driverVersion, readMountedFiles } from './driver-client.js'
import { tempDirFor } from './tmp.js'

let bao: OpenBao
let pg: Postgres

t.before(async () => {
  const dir = await tempDirFor(t, 'vcp-support-')
  ;[bao, pg] = await Promise.all([startOpenBao({ auditFile: join(dir, 'declared-audit.log') }), startPostgres()])
})
t.teardown(async () => {
  await Promise.all([bao?.stop(), pg?.stop()])
})

t.test('openbao dev server answers', async (t) => {
  const h = await bao.api('GET', '/v1/sys/health', undefined, { token: '' })
  t.equal(h.status, 200)
  t.equal(h.body.version, '2.7.2')
  t.match(bao.addr, /^http:\/\/127\.0\.0\.1:\d+$/)
  t.ok(bao.unsealKey.length > 0, 'unseal key captured')
  const denied = await bao.api('GET', '/v1/sys/mounts', undefined, { token: 'not-a-token' })
  t.equal(denied.status, 403, 'api() does not throw on non-2xx')
})

t.test('a dev server not healthy in time: the error carries the log’s tail, without its tokens', async (t) => {
  // 1 ms is too short for any start: every attempt times out.
  const err = await startOpenBao({ tls: true, startTimeoutMs: 1 }).then(
    () => undefined,
    (e: unknown) => e as Error,
  )
  t.match(
    err?.message,
    /bao did not become healthy within the timeout \(unseal key seen: (true|false), CA seen: (true|false)\)/,
  )
  t.notMatch(err?.message, /root token|unseal key:/i, 'no root token or unseal key line from the log')
})

t.test('jwt auth login with a service-account-shaped token', async (t) => {
  await bao.enableSecrets('kv', 'kvv2', { version: '2' })
  await bao.writePolicy('read-kv', 'path "kvv2/data/*" { capabilities = ["read"] }')
  await configureJwtAuth(bao, 'jwt')
  await createJwtRole(bao, 'jwt', 'app', {
    policies: ['read-kv'],
    boundAudiences: ['vault'],
    boundSubject: 'system:serviceaccount:ns1:sa1',
    boundClaims: { '/kubernetes.io/namespace': 'ns1' },
    ttl: '10m',
  })
  const put = await bao.api('POST', '/v1/kvv2/data/app', { data: { password: 's3cr3t' } })
  t.equal(put.status, 200)

  const jwt = signServiceAccountJwt({
    namespace: 'ns1',
    serviceAccount: 'sa1',
    podName: 'pod-a',
    podUid: '11111111-2222-3333-4444-555555555555',
    audience: 'vault',
  })
  const claims = decodeJwtPayload(jwt)
  t.same(claims['aud'], ['vault'])
  t.equal(claims['kubernetes.io'].pod.name, 'pod-a')

  const login = await bao.api('POST', '/v1/auth/jwt/login', { jwt, role: 'app' }, { token: '' })
  t.equal(login.status, 200, 'jwt login succeeds')
  const token: string = login.body.auth.client_token
  t.ok(token, 'got a client token')
  t.ok(login.body.auth.policies.includes('read-kv'))

  const read = await bao.api('GET', '/v1/kvv2/data/app', undefined, { token })
  t.equal(read.status, 200)
  t.equal(read.body.data.data.password, 's3cr3t')

  const wrongAud = signServiceAccountJwt({
    namespace: 'ns1',
    serviceAccount: 'sa1',
    podName: 'pod-a',
    podUid: 'u',
    audience: 'other',
  })
  const bad = await bao.api('POST', '/v1/auth/jwt/login', { jwt: wrongAud, role: 'app' }, { token: '' })
  t.equal(bad.status, 400, 'wrong audience is refused')

  const expired = signServiceAccountJwt({
    namespace: 'ns1',
    serviceAccount: 'sa1',
    podName: 'pod-a',
    podUid: 'u',
    audience: 'vault',
    issuedAtSec: Math.floor(Date.now() / 1000) - 7200,
    expiresInSec: 600,
  })
  const exp = await bao.api('POST', '/v1/auth/jwt/login', { jwt: expired, role: 'app' }, { token: '' })
  t.equal(exp.status, 400, 'expired token is refused')
})

t.test('database engine issues postgres credentials', async (t) => {
  t.match(await pg.psql('select 1'), /^1\s*$/)
  const { mount, role } = await configurePostgresSecretsEngine(bao, pg)
  const creds = await bao.api('GET', `/v1/${mount}/creds/${role}`)
  t.equal(creds.status, 200, 'creds read succeeds')
  const username: string = creds.body.data.username
  const password: string = creds.body.data.password
  t.ok(username && password)
  t.ok(creds.body.lease_id, 'dynamic secret has a lease')
  const who = await pg.psql('select current_user', { user: username, password })
  t.equal(who.trim(), username, 'the issued credentials log in to postgres')
})

t.test('audit devices: declared in config and enabled through the API', async (t) => {
  const path = await bao.enableFileAudit()
  await bao.api('GET', '/v1/sys/mounts')
  const declared = await bao.readAuditLog()
  t.ok(declared.length > 0, 'config-declared audit log has entries')
  const viaApi = await bao.readAuditLog(path)
  t.ok(
    viaApi.some((e) => e.request?.path === 'sys/mounts'),
    'API-enabled audit log saw the request',
  )
})

t.test('seal and unseal', async (t) => {
  await bao.seal()
  const sealed = await bao.api('GET', '/v1/sys/health', undefined, { token: '' })
  t.equal(sealed.status, 503)
  t.equal(sealed.body.sealed, true)
  await bao.unseal()
  const ok = await bao.api('GET', '/v1/sys/health', undefined, { token: '' })
  t.equal(ok.status, 200)
})

t.test('driver client: no provider listening', async (t) => {
  const dir = await tempDirFor(t, 'vcp-sock-')
  const missing = await driverVersion({ socketDir: dir, provider: 'vault', timeoutMs: 2000 })
  t.equal(missing.ok, false)
  t.equal(missing.grpcCode, 'Unknown')
  t.match(missing.message, /provider not found/)

  // A stale socket file with nothing behind it: the driver's client waits for ready
  // until the deadline.
  await writeFile(join(dir, 'vault.sock'), '')
  const stale = await driverVersion({ socketDir: dir, provider: 'vault', timeoutMs: 1000 })
  t.equal(stale.ok, false)
  t.equal(stale.grpcCode, 'DeadlineExceeded')

  const target = join(dir, 'target')
  await mkdir(target)
  const m = await driverMount({
    socketDir: dir,
    provider: 'vault',
    targetPath: target,
    attributes: { roleName: 'app' },
    secrets: 'null',
    timeoutMs: 1000,
  })
  t.equal(m.ok, false)
  t.same(m.objectVersions, {})
  t.equal(m.errorCode, 'GRPCProviderError')
  t.equal(m.grpcCode, 'DeadlineExceeded')
  t.equal((await readMountedFiles(target)).size, 0)
})
