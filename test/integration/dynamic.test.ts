// Secrets that Vault creates on read: PKI certificates (PUT + secretArgs) and
// PostgreSQL credentials (one lease shared by the objects that read it).
import { X509Certificate, createPrivateKey } from 'node:crypto'
import t from 'tap'
import { Fixture } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'
import { configurePki } from '../support/pki.js'
import { configurePostgresSecretsEngine, startPostgres } from '../support/postgres.js'

t.test('PKI issue with PUT and secretArgs', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  // RSA here (the other suites use EC): the split key must parse either way.
  await configurePki(fx.bao, {
    rootCommonName: 'Test Root',
    rootTtl: '24h',
    role: 'web',
    allowedDomains: ['example.test'],
    maxTtl: '1h',
    ec: false,
  })
  await fx.bao.writePolicy(
    'app-read',
    'path "secret/*" { capabilities = ["read"] }\npath "pki/issue/web" { capabilities = ["update"] }',
  )

  const { result, files } = await fx.mount({
    params: {
      objects: [
        {
          objectName: 'tls.crt',
          secretPath: 'pki/issue/web',
          method: 'PUT',
          secretKey: 'certificate',
          secretArgs: { common_name: 'a.example.test', ttl: '10m' },
        },
        {
          objectName: 'tls.key',
          secretPath: 'pki/issue/web',
          method: 'PUT',
          secretKey: 'private_key',
          secretArgs: { common_name: 'a.example.test', ttl: '10m' },
        },
        {
          objectName: 'ca.crt',
          secretPath: 'pki/issue/web',
          method: 'put',
          secretKey: 'issuing_ca',
          secretArgs: { common_name: 'a.example.test', ttl: '10m' },
        },
        {
          objectName: 'other.crt',
          secretPath: 'pki/issue/web',
          method: 'PUT',
          secretKey: 'certificate',
          secretArgs: { common_name: 'b.example.test', ttl: '10m' },
        },
      ],
    },
  })
  t.ok(result.ok, result.message)
  const cert = new X509Certificate(files.get('tls.crt')!.bytes)
  t.match(cert.subject, /CN=a\.example\.test/)
  const key = createPrivateKey(files.get('tls.key')!.bytes)
  t.ok(cert.checkPrivateKey(key), 'certificate and key come from the same issue call')
  const ca = new X509Certificate(files.get('ca.crt')!.bytes)
  t.ok(cert.verify(ca.publicKey), 'signed by the issuing CA')
  const other = new X509Certificate(files.get('other.crt')!.bytes)
  t.match(other.subject, /CN=b\.example\.test/, 'different secretArgs are a different Vault call')
  t.not(other.serialNumber, cert.serialNumber)
  t.same(
    findLeaks(await fx.provider.logs(), [files.get('tls.key')!.bytes.toString().split('\n')[1]!, ...fx.issuedJwts]),
    [],
  )
})

t.test('database credentials: username and password from one lease', async (t) => {
  const pg = await startPostgres()
  const fx = await Fixture.start()
  t.teardown(async () => {
    await fx.stop()
    await pg.stop()
  })
  await configurePostgresSecretsEngine(fx.bao, pg, { role: 'app' })
  await fx.bao.writePolicy(
    'app-read',
    'path "secret/*" { capabilities = ["read"] }\npath "database/creds/app" { capabilities = ["read"] }',
  )

  const { result, files } = await fx.mount({
    params: {
      objects: [
        { objectName: 'db/username', secretPath: 'database/creds/app', secretKey: 'username' },
        { objectName: 'db/password', secretPath: 'database/creds/app', secretKey: 'password' },
      ],
    },
  })
  t.ok(result.ok, result.message)
  const username = files.get('db/username')!.bytes.toString()
  const password = files.get('db/password')!.bytes.toString()
  t.match(username, /^v-/)

  const leases = await fx.bao.api('LIST', '/v1/sys/leases/lookup/database/creds/app')
  t.equal(leases.status, 200, JSON.stringify(leases.body))
  t.equal(leases.body.data.keys.length, 1, 'one lease for the two objects')

  const who = await pg.psql('select current_user', { user: username, password })
  t.equal(who.trim(), username, 'the pair logs in to PostgreSQL')
  t.same(findLeaks(await fx.provider.logs(), [password, ...fx.issuedJwts]), [])
})
