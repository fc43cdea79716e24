// openbao-csi-provider 2.x users: their SecretProviderClasses, DaemonSet arguments and environment work
// unchanged, on one daemon that also serves `provider: vault` classes. The classes below are the reference's
// own test classes (openbao-csi-provider 2.0.2, test/bats/configs/openbao-kv-secretproviderclass.yaml and
// openbao-kv-custom-audience-secretproviderclass.yaml) as they are; the arguments are those of its
// deployment/openbao-csi-provider.yaml (`-endpoint=/provider/openbao.sock -debug=false`), the Vault address
// comes from BAO_ADDR as its README says. Through the driver's own client, against a real OpenBao.
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { driverMount, readMountedFiles } from '../support/driver-client.js'
import { configureJwtAuth, createJwtRole, signServiceAccountJwt } from '../support/jwt.js'
import { findLeaks } from '../support/leaks.js'
import { startOpenBao, type OpenBao } from '../support/openbao.js'
import { startProvider, type ProviderProcess } from '../support/provider.js'
import { processTempDir } from '../support/tmp.js'

// The reference's test classes, verbatim but for their copyright header.
const OPENBAO_KV = `apiVersion: secrets-store.csi.x-k8s.io/v1
kind: SecretProviderClass
metadata:
  name: openbao-kv
spec:
  provider: openbao
  parameters:
    roleName: "kv-role"
    objects: |
      - objectName: "secret-1"
        secretPath: "secret/data/kv1"
        secretKey: "bar1"
        filePermission: 0600
      - objectName: "secret-2"
        secretPath: "secret/data/kv2"
        secretKey: "bar2"
`
const OPENBAO_CUSTOM_AUDIENCE = `apiVersion: secrets-store.csi.x-k8s.io/v1
kind: SecretProviderClass
metadata:
  name: openbao-kv-custom-audience
spec:
  provider: openbao
  parameters:
    audience: custom-audience
    roleName: "kv-custom-audience-role"
    objects: |
      - objectName: "secret"
        secretPath: "secret/data/kv-custom-audience"
        secretKey: "bar"
`
const SECRETS = ['bao-bar1-Qk2', 'bao-bar2-Zw7', 'bao-custom-Lp4', 'vault-class-Rt9']

let bao: OpenBao
let provider: ProviderProcess
const jwts: string[] = []

t.before(async () => {
  bao = await startOpenBao()
  // The reference's default auth mount is `kubernetes` (-openbao-mount); a jwt method mounted there checks
  // the test's service-account tokens as kubernetes auth would check real ones.
  await configureJwtAuth(bao, 'kubernetes')
  await bao.writePolicy('kv', 'path "secret/data/*" { capabilities = ["read"] }')
  for (const [role, audience] of [
    ['kv-role', 'openbao'],
    ['kv-custom-audience-role', 'custom-audience'],
    ['vault-role', 'vault'],
  ] as const) {
    await createJwtRole(bao, 'kubernetes', role, {
      policies: ['kv'],
      boundAudiences: [audience],
      boundSubject: 'system:serviceaccount:default:app',
      ttl: '1h',
    })
  }
  const put = async (path: string, data: Record<string, string>): Promise<void> => {
    const res = await bao.api('POST', `/v1/secret/data/${path}`, { data })
    if (res.status !== 200) throw new Error(`kv put ${path}: ${res.status}`)
  }
  await put('kv1', { bar1: SECRETS[0]! })
  await put('kv2', { bar2: SECRETS[1]! })
  await put('kv-custom-audience', { bar: SECRETS[2]! })
  await put('vault-class', { value: SECRETS[3]! })
  // The reference's arguments, and BAO_ADDR for the address; one more socket for provider: vault classes.
  provider = await startProvider({
    socketNames: ['openbao.sock', 'vault.sock'],
    args: ['-debug=false'],
    env: { BAO_ADDR: bao.addr },
  })
})

t.teardown(async () => {
  await provider?.stop()
  await bao?.stop()
})

/** The attributes the driver sends for `spc` (its parameters) and a pod with a token for `audience`. */
function attributes(parameters: Record<string, string>, audience: string): Record<string, string> {
  const uid = randomUUID()
  const jwt = signServiceAccountJwt({
    namespace: 'default',
    serviceAccount: 'app',
    podName: 'app-0',
    podUid: uid,
    audience,
    expiresInSec: 600,
  })
  jwts.push(jwt)
  return {
    ...parameters,
    'csi.storage.k8s.io/pod.name': 'app-0',
    'csi.storage.k8s.io/pod.namespace': 'default',
    'csi.storage.k8s.io/pod.uid': uid,
    'csi.storage.k8s.io/serviceAccount.name': 'app',
    'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({
      [audience]: { token: jwt, expirationTimestamp: new Date(Date.now() + 600_000).toISOString() },
    }),
  }
}

function parametersOf(yamlText: string): Record<string, string> {
  return (parse(yamlText) as { spec: { parameters: Record<string, string> } }).spec.parameters
}

async function mount(providerName: string, attrs: Record<string, string>) {
  const targetPath = await processTempDir('target-')
  const result = await driverMount({
    socketDir: provider.socketDir,
    provider: providerName,
    targetPath,
    permission: '420',
    attributes: attrs,
    secrets: 'null',
  })
  return { result, files: result.ok ? await readMountedFiles(targetPath) : new Map() }
}

t.test("the reference's hello-world class mounts unchanged on openbao.sock (token audience openbao)", async (t) => {
  const { result, files } = await mount('openbao', attributes(parametersOf(OPENBAO_KV), 'openbao'))
  t.ok(result.ok, result.message)
  t.equal(files.get('secret-1')?.bytes.toString(), SECRETS[0])
  t.equal(files.get('secret-1')?.mode, 0o600)
  t.equal(files.get('secret-2')?.bytes.toString(), SECRETS[1])
})

t.test('a custom audience, as the reference reads it', async (t) => {
  const { result, files } = await mount('openbao', attributes(parametersOf(OPENBAO_CUSTOM_AUDIENCE), 'custom-audience'))
  t.ok(result.ok, result.message)
  t.equal(files.get('secret')?.bytes.toString(), SECRETS[2])
})

t.test('bao, openbao and vault prefixes, in that precedence', async (t) => {
  const params = {
    roleName: 'kv-role',
    baoAddress: bao.addr,
    openbaoAddress: 'https://wrong.example:8200',
    vaultAddress: 'https://wrong.example:8201',
    openbaoKubernetesMountPath: 'kubernetes',
    objects: '- objectName: one\n  secretPath: secret/data/kv1\n  secretKey: bar1\n',
  }
  const { result, files } = await mount('openbao', attributes(params, 'openbao'))
  t.ok(result.ok, result.message)
  t.equal(files.get('one')?.bytes.toString(), SECRETS[0])
})

t.test('the same daemon serves provider: vault classes on vault.sock, with their own names', async (t) => {
  const params = {
    roleName: 'vault-role',
    vaultAuthMountPath: 'kubernetes',
    objects: '- objectName: v\n  secretPath: secret/data/vault-class\n  secretKey: value\n',
  }
  const { result, files } = await mount('vault', attributes(params, 'vault'))
  t.ok(result.ok, result.message)
  t.equal(files.get('v')?.bytes.toString(), SECRETS[3])
  // On vault.sock the OpenBao spellings are not read: no address but BAO_ADDR's, which both share.
  const baoNamed = await mount('vault', attributes({ ...params, baoRoleName: 'kv-role', roleName: '' }, 'vault'))
  t.equal(baoNamed.result.ok, false)
  t.match(baoNamed.result.message, /parameter "roleName" is required/)
})

t.test('no secret or token in the provider log', async (t) => {
  const log = await readFile(join(provider.logPath), 'utf8')
  t.same(findLeaks(log, [...SECRETS, ...jwts]), [])
})
