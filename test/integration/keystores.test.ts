// format: pkcs12 (a Java/.NET keystore from a PKI certificate or a PEM bundle in KV, its password from another
// object) and optional objects (skipped when, and only when, Vault says the secret does not exist). Against a
// real OpenBao, through the driver's client; the keystores are read back by OpenSSL and by Java's keytool.
import { execFileSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { Fixture } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'
import { configurePki } from '../support/pki.js'
import { selfSignedServerCert } from '../support/tls.js'
import { tempDirFor } from '../support/tmp.js'

const PASSWORD = 'ks-Pass-8d2v'

let fx: Fixture
t.before(async () => {
  fx = await Fixture.start()
  await configurePki(fx.bao, {
    rootCommonName: 'Keystore Test Root',
    rootTtl: '24h',
    role: 'web',
    allowedDomains: ['example.test'],
    maxTtl: '1h',
  })
  await fx.bao.writePolicy(
    'app-read',
    'path "secret/data/*" { capabilities = ["read"] }\npath "pki/issue/web" { capabilities = ["update"] }\n' +
      'path "secret/data/forbidden/*" { capabilities = ["deny"] }',
  )
  await fx.kvPut('keystore', { password: PASSWORD })
})
t.teardown(() => fx?.stop())

const keystore = {
  objectName: 'web.p12',
  secretPath: 'pki/issue/web',
  method: 'PUT',
  secretArgs: { common_name: 'www.example.test', ttl: '30m' },
  format: 'pkcs12',
  passwordObject: 'keystore-password',
}
const passwordObject = { objectName: 'keystore-password', secretPath: 'secret/data/keystore', secretKey: 'password' }

async function written(t: Test, name: string, bytes: Buffer): Promise<string> {
  const dir = await tempDirFor(t)
  const file = join(dir, name)
  await writeFile(file, bytes)
  return file
}

function openssl(args: string[]): string {
  return execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

t.test('a PKI certificate as PKCS#12, read by OpenSSL and by keytool; byte-identical on the next Mount', async (t) => {
  const pod = { name: 'web-0', uid: '9a1e0f3c-0000-4000-8000-000000000001' }
  const first = await fx.mount({ pod, params: { objects: [keystore, passwordObject] } })
  t.ok(first.result.ok, first.result.message)
  const p12 = first.files.get('web.p12')!.bytes
  const file = await written(t, 'web.p12', p12)
  // -info makes OpenSSL decrypt the key and verify the MAC with the password.
  openssl(['pkcs12', '-in', file, '-passin', `pass:${PASSWORD}`, '-info', '-noout'])
  const certs = openssl(['pkcs12', '-in', file, '-passin', `pass:${PASSWORD}`, '-nokeys'])
  t.match(certs, /subject=CN\s?=\s?www\.example\.test/)
  t.match(certs, /subject=CN\s?=\s?Keystore Test Root/, 'the chain up to the root')
  t.throws(() => openssl(['pkcs12', '-in', file, '-passin', 'pass:wrong', '-noout']), 'a wrong password is refused')
  const listed = execFileSync(
    'keytool',
    ['-list', '-v', '-storetype', 'PKCS12', '-keystore', file, '-storepass', PASSWORD],
    {
      encoding: 'utf8',
    },
  )
  t.match(listed, /Alias name: web\.p12/)
  t.match(listed, /Entry type: PrivateKeyEntry/)
  t.match(listed, /Certificate chain length: 2/)
  const again = await fx.mount({ pod, params: { objects: [keystore, passwordObject] } })
  t.ok(again.files.get('web.p12')!.bytes.equals(p12), 'the same certificate gives the same bytes')
  t.equal(again.result.objectVersions['web.p12'], first.result.objectVersions['web.p12'])
})

t.test('a PEM bundle from KV as PKCS#12 with an empty password', async (t) => {
  const dir = await tempDirFor(t)
  const { key: keyFile, cert: certFile } = selfSignedServerCert(dir, 'kv.example.test')
  const bundle = openssl(['x509', '-in', certFile]) + openssl(['pkey', '-in', keyFile])
  await fx.kvPut('bundle', { pem: bundle })
  const { result, files } = await fx.mount({
    params: {
      objects: [{ objectName: 'kv.p12', secretPath: 'secret/data/bundle', secretKey: 'pem', format: 'pkcs12' }],
    },
  })
  t.ok(result.ok, result.message)
  const file = await written(t, 'kv.p12', files.get('kv.p12')!.bytes)
  t.match(openssl(['pkcs12', '-in', file, '-passin', 'pass:', '-nokeys']), /subject=CN\s?=\s?kv\.example\.test/)
  const listed = execFileSync('keytool', ['-list', '-storetype', 'PKCS12', '-keystore', file, '-storepass', ''], {
    encoding: 'utf8',
  })
  t.match(listed, /PrivateKeyEntry/)
})

t.test('a password written in the class is refused: it belongs in Vault', async (t) => {
  const { result } = await fx.mount({
    params: { objects: [{ ...keystore, passwordObject: undefined, password: 'literal' }, passwordObject] },
  })
  t.equal(result.ok, false)
  t.equal(result.grpcCode, 'InvalidArgument')
  t.match(result.message, /"password": a password is never written in a SecretProviderClass/)
  t.notMatch(result.message, 'literal')
})

t.test('optional objects: skipped only when Vault says the secret does not exist', async (t) => {
  await fx.kvPut('present', { value: 'present-Vq3' })
  const maybe = { objectName: 'maybe', secretPath: 'secret/data/later', secretKey: 'value', optional: true }
  const present = { objectName: 'present', secretPath: 'secret/data/present', secretKey: 'value' }
  const pod = { name: 'opt-0', uid: '9a1e0f3c-0000-4000-8000-000000000002' }
  const missing = await fx.mount({ pod, params: { objects: [maybe, present] } })
  t.ok(missing.result.ok, missing.result.message)
  t.same([...missing.files.keys()], ['present'], 'no file for the missing secret')
  t.same(Object.keys(missing.result.objectVersions), ['present'], 'and no object version')
  const line = (await fx.provider.logLines()).filter((l) => l.msg === 'mount').at(-1)
  t.same(line?.skippedOptional, ['maybe'], 'the Mount log line names the skipped object')

  await fx.kvPut('later', { value: 'arrived-Kp7' })
  const later = await fx.mount({ pod, params: { objects: [maybe, present] } })
  t.equal(later.files.get('maybe')?.bytes.toString(), 'arrived-Kp7', 'the next Mount (a rotation) writes it')

  const denied = await fx.mount({
    pod,
    params: { objects: [{ ...maybe, secretPath: 'secret/data/forbidden/x' }, present] },
  })
  t.equal(denied.result.ok, false, 'a permission error still fails the Mount')
  t.equal(denied.result.grpcCode, 'PermissionDenied')

  const shared = await fx.mount({
    pod,
    params: {
      objects: [
        maybe,
        { objectName: 'needed', secretPath: 'secret/data/nothing-here', secretKey: 'value' },
        { ...maybe, objectName: 'also', secretPath: 'secret/data/nothing-here' },
      ],
    },
  })
  t.equal(shared.result.ok, false, 'a request an object needs fails, even if an optional object shares it')
  t.equal(shared.result.grpcCode, 'NotFound')

  // KV v2 answers 404 with the version's metadata when it is deleted: nothing is stored there either.
  await fx.kvPut('gone', { value: 'gone-Zr4' })
  const del = await fx.bao.api('DELETE', '/v1/secret/data/gone')
  t.equal(del.status, 204, 'the current version deleted')
  const deleted = await fx.mount({ pod, params: { objects: [{ ...maybe, secretPath: 'secret/data/gone' }, present] } })
  t.ok(deleted.result.ok, deleted.result.message)
  t.same([...deleted.files.keys()], ['present'], 'a deleted KV v2 version is skipped')

  // A login answered 404 (a namespace OpenBao does not have) is no missing secret.
  const nowhere = await fx.mount({
    pod,
    params: { vaultNamespace: 'no-such-namespace', objects: [maybe, { ...maybe, objectName: 'also' }] },
  })
  t.equal(nowhere.result.ok, false, 'every object optional, the login answered 404: the Mount fails')
  t.equal(nowhere.result.grpcCode, 'NotFound')
  t.match(nowhere.result.message, /login .*namespace not found/)
})

t.test('no secret in the provider log', async (t) => {
  t.same(findLeaks(await fx.provider.logs(), [PASSWORD, 'arrived-Kp7', 'present-Vq3', ...fx.issuedJwts]), [])
})
