// How the provider reaches Vault: TLS with a CA file, TLS errors that say
// what to fix, a Vault Agent style unix socket, and namespaces.
import { join } from 'node:path'
import t from 'tap'
import { Fixture } from '../support/fixture.js'
import { configureJwtAuth } from '../support/jwt.js'
import { startOpenBao } from '../support/openbao.js'
import { startProvider } from '../support/provider.js'
import { makeTempDir } from '../support/tmp.js'

const OBJECTS = [{ objectName: 'v', secretPath: 'secret/data/conn', secretKey: 'value' }]

async function seed(bao: Awaited<ReturnType<typeof startOpenBao>>, value: string, namespace?: string): Promise<void> {
  const opts = namespace ? { namespace } : undefined
  await configureJwtAuthIn(bao, namespace)
  const policy = await bao.api(
    'PUT',
    '/v1/sys/policies/acl/app-read',
    { policy: 'path "secret/*" { capabilities = ["read"] }' },
    opts,
  )
  if (policy.status >= 300) throw new Error(`policy: ${policy.status}`)
  const role = await bao.api(
    'POST',
    '/v1/auth/jwt/role/app',
    { role_type: 'jwt', user_claim: 'sub', bound_audiences: ['vault'], token_policies: ['app-read'] },
    opts,
  )
  if (role.status >= 300) throw new Error(`role: ${role.status}`)
  const put = await bao.api('POST', '/v1/secret/data/conn', { data: { value } }, opts)
  if (put.status >= 300) throw new Error(`kv: ${put.status} ${JSON.stringify(put.body)}`)
}

async function configureJwtAuthIn(bao: Awaited<ReturnType<typeof startOpenBao>>, namespace?: string): Promise<void> {
  if (!namespace) {
    await configureJwtAuth(bao, 'jwt')
    return
  }
  const { defaultKeyPair } = await import('../support/jwt.js')
  const opts = { namespace }
  const en = await bao.api('POST', '/v1/sys/auth/jwt', { type: 'jwt' }, opts)
  if (en.status >= 300) throw new Error(`enable jwt in ns: ${en.status} ${JSON.stringify(en.body)}`)
  const cfg = await bao.api(
    'POST',
    '/v1/auth/jwt/config',
    { jwt_validation_pubkeys: [defaultKeyPair().publicKeyPem] },
    opts,
  )
  if (cfg.status >= 300) throw new Error(`config jwt in ns: ${cfg.status}`)
  const kv = await bao.api('POST', '/v1/sys/mounts/secret', { type: 'kv', options: { version: '2' } }, opts)
  if (kv.status >= 300) throw new Error(`kv in ns: ${kv.status} ${JSON.stringify(kv.body)}`)
}

t.test('TLS: a CA file makes it work; without it the error says what to set', async (t) => {
  const bao = await startOpenBao({ tls: true })
  t.teardown(() => bao.stop())
  await seed(bao, 'over-tls')
  const provider = await startProvider({ args: [`-vault-addr=${bao.addr}`] })
  t.teardown(() => provider.stop())
  const fx = Fixture.attach(bao, provider)

  const ok = await fx.mount({ params: { objects: OBJECTS, vaultCACertPath: bao.caCertPath! } })
  t.ok(ok.result.ok, ok.result.message)
  t.equal(ok.files.get('v')?.bytes.toString(), 'over-tls')

  const noCa = await fx.mount({ params: { objects: OBJECTS } })
  t.notOk(noCa.result.ok)
  t.equal(noCa.result.grpcCode, 'Unavailable')
  t.match(noCa.result.message, /set vaultCACertPath/)

  const missingFile = await fx.mount({ params: { objects: OBJECTS, vaultCACertPath: '/nonexistent/ca.pem' } })
  t.equal(missingFile.result.grpcCode, 'InvalidArgument')
  t.match(
    missingFile.result.message,
    /parameter "vaultCACertPath" "\/nonexistent\/ca.pem" cannot be read in the provider pod \(ENOENT\)/,
  )

  const skip = await fx.mount({ params: { objects: OBJECTS, vaultSkipTLSVerify: 'true' } })
  t.ok(skip.result.ok, skip.result.message)
})

t.test('a unix:// Vault address (Vault Agent socket)', async (t) => {
  const dir = await makeTempDir('vcp-unix-')
  t.teardown(() => dir.cleanup())
  const sock = join(dir.path, 'bao.sock')
  const bao = await startOpenBao({ extraConfig: `listener "unix" {\n  address = "${sock}"\n}` })
  t.teardown(() => bao.stop())
  await seed(bao, 'over-unix')
  const provider = await startProvider()
  t.teardown(() => provider.stop())
  const fx = Fixture.attach(bao, provider)
  const { result, files } = await fx.mount({ params: { objects: OBJECTS, vaultAddress: `unix://${sock}` } })
  t.ok(result.ok, result.message)
  t.equal(files.get('v')?.bytes.toString(), 'over-unix')
})

t.test('vaultNamespace: login and reads in a namespace', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  const ns = await fx.bao.api('POST', '/v1/sys/namespaces/team-a', {})
  t.ok(ns.status < 300, `create namespace: ${ns.status} ${JSON.stringify(ns.body)}`)
  await seed(fx.bao, 'in-namespace', 'team-a')
  await fx.kvPut('conn', { value: 'root-namespace' })

  const inNs = await fx.mount({ params: { objects: OBJECTS, vaultNamespace: 'team-a' } })
  t.ok(inNs.result.ok, inNs.result.message)
  t.equal(inNs.files.get('v')?.bytes.toString(), 'in-namespace')

  const root = await fx.mount({ params: { objects: OBJECTS } })
  t.ok(root.result.ok, root.result.message)
  t.equal(root.files.get('v')?.bytes.toString(), 'root-namespace')
})
