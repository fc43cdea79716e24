// Output formats (docs/outputs.md) against a real OpenBao, through the driver's own client:
// nested keys, data-only files, all keys as files, templates, certificate splits, KV versions
// side by side, and how they compose with encoding, filePermission and object versions.
import { execFileSync } from 'node:child_process'
import { X509Certificate, createHmac, createPrivateKey } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import dotenv from 'dotenv'
import { parse as parseYaml } from 'yaml'
import { Fixture } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'
import { tempDirFor } from '../support/tmp.js'

const APP = {
  DB_PASSWORD: 'pa"ss$word#1 `x`',
  GREETING: "it's a\nmulti-line # value",
  API_URL: 'https://api.example.test/v1?a=1&b=$2',
  USER: 'app-user',
}
const CONFIG = { db: { host: 'db.internal', port: 5432, 'replica.host': 'replica.internal' }, hosts: ['a', 'b'] }
const SECRET_VALUES = ['pa"ss$word#1', 'multi-line # value', 'rollover-key-one', 'rollover-key-two', 'c2lnbmluZy1rZXk=']

function pemCerts(pem: string): X509Certificate[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/g)].map(
    (m) => new X509Certificate(m[0]),
  )
}

/** The object-version formula of README.md, computed independently of src/. */
function expectedVersion(key: Buffer, config: unknown, files: Array<[string, Buffer]>): string {
  const mac = createHmac('sha256', key)
  mac.update(JSON.stringify(config))
  for (const [path, bytes] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
    mac.update(`\0${path}\0${bytes.length}\0`)
    mac.update(bytes)
  }
  return mac.digest('base64url')
}

t.test('output formats through the driver client', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())

  await fx.kvPut('app', APP)
  await fx.kvPut('config', CONFIG)
  await fx.kvPut('flags', { sslmode: 'verify-full' })
  await fx.kvPut('encoded', { 'key.bin': Buffer.from('bin\0ary').toString('base64'), note: 'aGk=' })

  // PKI: a root CA at pki/, an intermediate at pki_int/ signed by it, a role issuing leaves.
  await fx.bao.enableSecrets('pki', 'pki', undefined, { config: { max_lease_ttl: '48h' } })
  await fx.bao.enableSecrets('pki', 'pki_int', undefined, { config: { max_lease_ttl: '24h' } })
  const root = await fx.bao.api('POST', '/v1/pki/root/generate/internal', { common_name: 'Test Root', ttl: '48h' })
  t.equal(root.status, 200, JSON.stringify(root.body?.errors))
  const csr = await fx.bao.api('POST', '/v1/pki_int/intermediate/generate/internal', {
    common_name: 'Test Intermediate',
  })
  t.equal(csr.status, 200, JSON.stringify(csr.body?.errors))
  const signed = await fx.bao.api('POST', '/v1/pki/root/sign-intermediate', {
    csr: csr.body.data.csr,
    common_name: 'Test Intermediate',
    ttl: '24h',
  })
  t.equal(signed.status, 200, JSON.stringify(signed.body?.errors))
  const setSigned = await fx.bao.api('POST', '/v1/pki_int/intermediate/set-signed', {
    certificate: `${signed.body.data.certificate}\n${root.body.data.certificate}`,
  })
  t.ok(setSigned.status < 300, JSON.stringify(setSigned.body?.errors))
  const role = await fx.bao.api('POST', '/v1/pki_int/roles/web', {
    allowed_domains: ['example.test'],
    allow_subdomains: true,
    max_ttl: '1h',
  })
  t.ok(role.status < 300)
  await fx.bao.writePolicy(
    'app-read',
    'path "secret/*" { capabilities = ["read"] }\npath "pki_int/issue/web" { capabilities = ["update"] }',
  )

  t.test('nested extraction with secretKeyPath: maps, arrays, keys containing dots', async (t) => {
    const { result, files } = await fx.mount({
      params: {
        objects: [
          { objectName: 'db/port', secretPath: 'secret/data/config', secretKeyPath: 'db.port', filePermission: 0o640 },
          { objectName: 'db/replica', secretPath: 'secret/data/config', secretKeyPath: 'db["replica.host"]' },
          { objectName: 'second-host', secretPath: 'secret/data/config', secretKeyPath: 'hosts[1]' },
          { objectName: 'db.json', secretPath: 'secret/data/config', secretKeyPath: 'db' },
        ],
      },
    })
    t.ok(result.ok, result.message)
    t.equal(files.get('db/port')?.bytes.toString(), '5432')
    t.equal(files.get('db/port')?.mode, 0o640)
    t.equal(files.get('db/replica')?.bytes.toString(), 'replica.internal')
    t.equal(files.get('db/replica')?.mode, 0o644)
    t.equal(files.get('second-host')?.bytes.toString(), 'b')
    t.equal(
      files.get('db.json')?.bytes.toString(),
      '{"host":"db.internal","port":5432,"replica.host":"replica.internal"}',
    )
  })

  t.test('a missing path names the object, the field, the path and the keys where it stopped', async (t) => {
    const { result } = await fx.mount({
      params: { objects: [{ objectName: 'u', secretPath: 'secret/data/config', secretKeyPath: 'db.user' }] },
    })
    t.notOk(result.ok)
    t.equal(result.grpcCode, 'NotFound')
    t.match(
      result.message,
      'object "u" (GET secret/data/config): secretKeyPath "db.user": no key "user" at db; keys present: "host", "port", "replica.host"',
    )
    t.notMatch(result.message, /db\.internal|replica\.internal/)
  })

  t.test('data only as JSON, YAML, .env and Java properties: exact bytes, no envelope', async (t) => {
    const { result, files } = await fx.mount({
      params: {
        objects: [
          { objectName: 'app.json', secretPath: 'secret/data/app', format: 'json' },
          { objectName: 'app.yaml', secretPath: 'secret/data/app', format: 'yaml', filePermission: 0o400 },
          { objectName: 'app.env', secretPath: 'secret/data/app', format: 'env' },
          { objectName: 'app.properties', secretPath: 'secret/data/app', format: 'properties' },
          { objectName: 'db.yaml', secretPath: 'secret/data/config', secretKeyPath: 'db', format: 'yaml' },
        ],
      },
    })
    t.ok(result.ok, result.message)
    t.equal(
      files.get('app.json')?.bytes.toString(),
      '{\n' +
        '  "API_URL": "https://api.example.test/v1?a=1&b=$2",\n' +
        '  "DB_PASSWORD": "pa\\"ss$word#1 `x`",\n' +
        '  "GREETING": "it\'s a\\nmulti-line # value",\n' +
        '  "USER": "app-user"\n' +
        '}\n',
    )
    t.equal(
      files.get('app.yaml')?.bytes.toString(),
      'API_URL: https://api.example.test/v1?a=1&b=$2\n' +
        'DB_PASSWORD: pa"ss$word#1 `x`\n' +
        'GREETING: |-\n' +
        "  it's a\n" +
        '  multi-line # value\n' +
        'USER: app-user\n',
    )
    t.equal(files.get('app.yaml')?.mode, 0o400)
    t.strictSame(parseYaml(files.get('app.yaml')!.bytes.toString()), APP)
    t.equal(
      files.get('app.env')?.bytes.toString(),
      "API_URL='https://api.example.test/v1?a=1&b=$2'\n" +
        "DB_PASSWORD='pa\"ss$word#1 `x`'\n" +
        'GREETING="it\'s a\nmulti-line # value"\n' +
        "USER='app-user'\n",
    )
    t.equal(
      files.get('app.properties')?.bytes.toString(),
      'API_URL=https\\://api.example.test/v1?a\\=1&b\\=$2\n' +
        'DB_PASSWORD=pa"ss$word\\#1 `x`\n' +
        "GREETING=it's a\\nmulti-line \\# value\n" +
        'USER=app-user\n',
    )
    t.equal(files.get('db.yaml')?.bytes.toString(), 'host: db.internal\nport: 5432\nreplica.host: replica.internal\n')
  })

  t.test('.env round trip: dotenv (both parsers) and a POSIX shell read back every value', async (t) => {
    const { result, targetPath } = await fx.mount({
      params: { objects: [{ objectName: 'app.env', secretPath: 'secret/data/app', format: 'env' }] },
    })
    t.ok(result.ok, result.message)
    const file = join(targetPath, 'app.env')
    const text = await readFile(file)
    t.strictSame(dotenv.parse(text), APP, 'dotenv')
    t.strictSame(dotenv.parse(text, { fast: true }), APP, 'dotenv fast parser')
    const processEnv: Record<string, string> = {}
    dotenv.config({ path: file, processEnv, quiet: true })
    t.strictSame(processEnv, APP, 'dotenv.config from the mounted file')
    const keys = Object.keys(APP)
    const script = `set -a; . "$1"; ${keys.map((k) => `printf '%s\\0' "$${k}"`).join('; ')}`
    const printed = execFileSync('sh', ['-c', script, 'sh', file]).toString().split('\0').slice(0, -1)
    t.strictSame(Object.fromEntries(keys.map((k, i) => [k, printed[i]])), APP, 'sh')
  })

  t.test('.properties round trip through java.util.Properties', async (t) => {
    const { result, targetPath } = await fx.mount({
      params: { objects: [{ objectName: 'app.properties', secretPath: 'secret/data/app', format: 'properties' }] },
    })
    t.ok(result.ok, result.message)
    const dir = await tempDirFor(t, 'vcp-java-')
    const source = join(dir, 'ReadProps.java')
    await writeFile(
      source,
      [
        'import java.io.*; import java.util.*;',
        'public class ReadProps { public static void main(String[] a) throws Exception {',
        '  Properties p = new Properties(); try (InputStream in = new FileInputStream(a[0])) { p.load(in); }',
        '  PrintStream out = new PrintStream(System.out, true, "UTF-8");',
        '  for (String k : new TreeSet<>(p.stringPropertyNames())) { out.print(k + "\\0" + p.getProperty(k) + "\\0"); }',
        '} }',
      ].join('\n'),
    )
    const out = execFileSync('java', [source, join(targetPath, 'app.properties')])
      .toString('utf8')
      .split('\0')
    const read: Record<string, string> = {}
    for (let i = 0; i + 1 < out.length; i += 2) read[out[i]!] = out[i + 1]!
    t.strictSame(read, APP)
  })

  t.test('all keys as files, with the object mode, composing with encoding', async (t) => {
    const { result, files } = await fx.mount({
      params: {
        objects: [
          { objectName: 'app', secretPath: 'secret/data/app', format: 'files', filePermission: 0o600 },
          { objectName: 'bin', secretPath: 'secret/data/encoded', format: 'files', encoding: 'base64' },
          { objectName: 'app/extra', secretPath: 'secret/data/flags', secretKey: 'sslmode' },
        ],
      },
    })
    t.ok(result.ok, result.message)
    t.strictSame([...files.keys()].sort(), [
      'app/API_URL',
      'app/DB_PASSWORD',
      'app/GREETING',
      'app/USER',
      'app/extra',
      'bin/key.bin',
      'bin/note',
    ])
    for (const [key, value] of Object.entries(APP)) {
      t.equal(files.get(`app/${key}`)?.bytes.toString(), value, key)
      t.equal(files.get(`app/${key}`)?.mode, 0o600, `${key} mode`)
    }
    t.ok(files.get('bin/key.bin')?.bytes.equals(Buffer.from('bin\0ary')), 'base64-decoded binary')
    t.equal(files.get('bin/note')?.bytes.toString(), 'hi')
    t.equal(files.get('app/extra')?.bytes.toString(), 'verify-full', 'another object may write inside the directory')
    t.same(Object.keys(result.objectVersions).sort(), ['app', 'app/extra', 'bin'])
  })

  t.test('a template over three secrets: exact bytes, no HTML escaping', async (t) => {
    const { result, files } = await fx.mount({
      params: {
        objects: [
          { objectName: 'creds.json', secretPath: 'secret/data/app', format: 'json' },
          { objectName: 'config/db-host', secretPath: 'secret/data/config', secretKeyPath: 'db.host' },
          {
            objectName: 'pgpass',
            secretPath: 'secret/data/config',
            filePermission: 0o600,
            template: '{{db.host}}:{{db.port}}:app:{{@["creds.json"].USER}}:{{@["creds.json"].DB_PASSWORD}}\n',
          },
          {
            objectName: 'jdbc.url',
            secretPath: 'secret/data/flags',
            template:
              'jdbc:postgresql://{{@config/db-host}}/app?user={{@["creds.json"].USER}}&sslmode={{sslmode}}&api={{{@["creds.json"].API_URL}}}',
          },
        ],
      },
    })
    t.ok(result.ok, result.message)
    t.equal(files.get('pgpass')?.bytes.toString(), 'db.internal:5432:app:app-user:pa"ss$word#1 `x`\n')
    t.equal(files.get('pgpass')?.mode, 0o600)
    t.equal(
      files.get('jdbc.url')?.bytes.toString(),
      'jdbc:postgresql://db.internal/app?user=app-user&sslmode=verify-full&api=https://api.example.test/v1?a=1&b=$2',
    )
  })

  t.test('a template without a secretPath of its own reads only other objects, and costs no Vault call', async (t) => {
    const audit = await fx.bao.enableFileAudit()
    const before = (await fx.bao.readAuditLog(audit)).length
    const { result, files } = await fx.mount({
      params: {
        objects: [
          { objectName: 'user', secretPath: 'secret/data/app', secretKey: 'USER' },
          { objectName: 'flags', secretPath: 'secret/data/flags', format: 'json' },
          { objectName: 'hosts', secretPath: 'secret/data/config', secretKeyPath: 'hosts' },
          { objectName: 'summary.txt', template: '{{#@hosts}}{{.}},{{/@hosts}} {{@user}} {{@flags.sslmode}}\n' },
        ],
      },
    })
    t.ok(result.ok, result.message)
    t.equal(files.get('summary.txt')?.bytes.toString(), 'a,b, app-user verify-full\n')
    const requests = (await fx.bao.readAuditLog(audit))
      .slice(before)
      .filter((e) => e.type === 'request' && String(e.request?.path).startsWith('secret/'))
    t.equal(requests.length, 3, 'three reads for three secrets; the template reads nothing itself')
  })

  t.test('certificate split from a PKI issue: chain in order, verifies against ca.crt, key matches', async (t) => {
    const web = {
      objectName: 'web',
      secretPath: 'pki_int/issue/web',
      method: 'PUT',
      secretArgs: { common_name: 'www.example.test', ttl: '10m' },
      format: 'tls',
      filePermission: 0o600,
    }
    const pod = { name: 'web-0', uid: '5f0c7a9e-0000-4000-8000-000000000001' }
    const first = await fx.mount({ pod, params: { objects: [web] } })
    t.ok(first.result.ok, first.result.message)
    const files = first.files
    t.strictSame([...files.keys()].sort(), ['web/ca.crt', 'web/tls-combined.pem', 'web/tls.crt', 'web/tls.key'])
    for (const f of files.values()) t.equal(f.mode, 0o600)
    const chain = pemCerts(files.get('web/tls.crt')!.bytes.toString())
    t.strictSame(
      chain.map((c) => c.subject),
      ['CN=www.example.test', 'CN=Test Intermediate'],
      'leaf first, then the intermediate; the root stays out',
    )
    const ca = pemCerts(files.get('web/ca.crt')!.bytes.toString())
    t.strictSame(
      ca.map((c) => c.subject),
      ['CN=Test Root'],
    )
    t.ok(chain[0]!.verify(chain[1]!.publicKey), 'leaf signed by the intermediate')
    t.ok(chain[1]!.verify(ca[0]!.publicKey), 'intermediate signed by ca.crt')
    t.ok(ca[0]!.verify(ca[0]!.publicKey), 'ca.crt is self-signed')
    const verified = execFileSync(
      'openssl',
      [
        'verify',
        '-CAfile',
        join(first.targetPath, 'web/ca.crt'),
        '-untrusted',
        join(first.targetPath, 'web/tls.crt'),
        join(first.targetPath, 'web/tls.crt'),
      ],
      { stdio: 'pipe' },
    ).toString()
    t.match(verified, /: OK/, 'openssl verifies the chain against ca.crt')
    const key = createPrivateKey(files.get('web/tls.key')!.bytes)
    t.ok(chain[0]!.checkPrivateKey(key), 'tls.key matches the certificate')
    t.equal(
      files.get('web/tls-combined.pem')!.bytes.toString(),
      files.get('web/tls.key')!.bytes.toString() + files.get('web/tls.crt')!.bytes.toString(),
      'combined: key, then the chain',
    )

    // The Vault layer keeps a pod's certificate for most of its lifetime: a re-mount of the same
    // pod gets the same certificate, so the same bytes and version; another pod gets a new
    // certificate, so new bytes and a new version. Nothing per-request reaches the files.
    const again = await fx.mount({ pod, params: { objects: [web] } })
    t.ok(again.result.ok, again.result.message)
    t.equal(again.result.objectVersions['web'], first.result.objectVersions['web'], 'same certificate: same version')
    for (const [path, f] of files) t.ok(again.files.get(path)?.bytes.equals(f.bytes), `same ${path}`)
    const other = await fx.mount({ params: { objects: [web] } })
    t.ok(other.result.ok, other.result.message)
    t.not(other.result.objectVersions['web'], first.result.objectVersions['web'], 're-issued: new version')
    t.notOk(other.files.get('web/tls.key')?.bytes.equals(files.get('web/tls.key')!.bytes), 'a new key')

    const shuffled =
      files.get('web/ca.crt')!.bytes.toString() +
      files.get('web/tls.key')!.bytes.toString() +
      pemCerts(files.get('web/tls.crt')!.bytes.toString())
        .reverse()
        .map((c) => c.toString())
        .join('')
    await fx.kvPut('web-bundle', { bundle: shuffled })
    const fromKv = { objectName: 'web', secretPath: 'secret/data/web-bundle', secretKey: 'bundle', format: 'tls' }
    const kv1 = await fx.mount({ params: { objects: [fromKv] } })
    const kv2 = await fx.mount({ params: { objects: [fromKv] } })
    t.ok(kv1.result.ok, kv1.result.message)
    for (const name of ['tls.crt', 'tls.key', 'ca.crt', 'tls-combined.pem']) {
      t.ok(kv1.files.get(`web/${name}`)?.bytes.equals(files.get(`web/${name}`)!.bytes), `KV bundle: same ${name}`)
    }
    t.equal(kv1.result.objectVersions['web'], kv2.result.objectVersions['web'], 'same certificate, same version')
  })

  t.test('KV v2: an older version side by side with the current one', async (t) => {
    await fx.kvPut('signing', { key: 'rollover-key-one', kid: '1' })
    await fx.kvPut('signing', { key: 'rollover-key-two', kid: '2' })
    const { result, files } = await fx.mount({
      params: {
        objects: [
          { objectName: 'signing/current', secretPath: 'secret/data/signing', format: 'files' },
          { objectName: 'signing/previous', secretPath: 'secret/data/signing?version=1', format: 'files' },
          { objectName: 'signing/previous.json', secretPath: 'secret/data/signing?version=1', format: 'json' },
        ],
      },
    })
    t.ok(result.ok, result.message)
    t.equal(files.get('signing/current/key')?.bytes.toString(), 'rollover-key-two')
    t.equal(files.get('signing/current/kid')?.bytes.toString(), '2')
    t.equal(files.get('signing/previous/key')?.bytes.toString(), 'rollover-key-one')
    t.equal(files.get('signing/previous.json')?.bytes.toString(), '{\n  "key": "rollover-key-one",\n  "kid": "1"\n}\n')
  })

  t.test('determinism: two Mounts give identical bytes and versions; plain objects keep their version', async (t) => {
    const objects = [
      { objectName: 'a.json', secretPath: 'secret/data/app', format: 'json' },
      { objectName: 'a.yaml', secretPath: 'secret/data/app', format: 'yaml' },
      { objectName: 'a.env', secretPath: 'secret/data/app', format: 'env' },
      { objectName: 'a.properties', secretPath: 'secret/data/app', format: 'properties' },
      { objectName: 'files', secretPath: 'secret/data/config', format: 'files' },
      { objectName: 't', secretPath: 'secret/data/config', template: '{{db.host}} {{@a}}' },
      { objectName: 'a', secretPath: 'secret/data/app', secretKey: 'USER', filePermission: 0o640 },
      { objectName: 'whole.json', secretPath: 'secret/data/flags' },
    ]
    const first = await fx.mount({ params: { objects } })
    const second = await fx.mount({ params: { objects } })
    t.ok(first.result.ok, first.result.message)
    t.strictSame(second.result.objectVersions, first.result.objectVersions)
    t.equal(second.files.size, first.files.size)
    for (const [path, f] of first.files) t.ok(second.files.get(path)?.bytes.equals(f.bytes), path)

    // An object without the new fields: the version formula of README.md over its config and file.
    const key = await readFile(join(fx.provider.socketDir, 'hmac.key'))
    t.equal(
      first.result.objectVersions['a'],
      expectedVersion(
        key,
        { filePermission: 0o640, objectName: 'a', secretKey: 'USER', secretPath: 'secret/data/app' },
        [['a', Buffer.from('app-user')]],
      ),
    )
    t.equal(
      first.result.objectVersions['whole.json'],
      expectedVersion(key, { objectName: 'whole.json', secretPath: 'secret/data/flags' }, [
        ['whole.json', first.files.get('whole.json')!.bytes],
      ]),
    )
  })

  t.test('misuse is refused with the object and the field named', async (t) => {
    const cases: Array<[Record<string, unknown>[], string, RegExp]> = [
      [
        [{ objectName: 'x', secretPath: 'secret/data/app', format: 'xml' }],
        'InvalidArgument',
        /object "x": format must be one of json, yaml, env, properties, files, tls, pkcs12, got "xml"/,
      ],
      [
        [{ objectName: 'x', secretPath: 'secret/data/app', secretKey: 'a', secretKeyPath: 'a' }],
        'InvalidArgument',
        /object "x": set secretKey or secretKeyPath, not both/,
      ],
      [
        [{ objectName: 'x', secretPath: 'secret/data/app', secretKeyPath: 'a..b' }],
        'InvalidArgument',
        /object "x": secretKeyPath "a\.\.b" expects a key name at character 3/,
      ],
      [
        [{ objectName: 'x', secretPath: 'secret/data/app', template: '{{#a}}' }],
        'InvalidArgument',
        /object "x": template is not a valid Mustache template: Unclosed section "a"/,
      ],
      [
        [{ objectName: 'x', template: '{{@nope.a}}' }],
        'InvalidArgument',
        /object "x": template references @"nope", which is not an objectName/,
      ],
      [
        [{ objectName: 'x', template: 'hi', format: 'json' }],
        'InvalidArgument',
        /object "x": set format or template, not both/,
      ],
      [
        [{ objectName: 'x', template: 'hi', secretKey: 'a' }],
        'InvalidArgument',
        /object "x": secretKey needs a secretPath/,
      ],
      [
        [{ objectName: 'x', secretPath: 'secret/data/app', template: '{{PASSWORD}}' }],
        'NotFound',
        /object "x" \(GET secret\/data\/app\): template: "PASSWORD": no key "PASSWORD" at the top level; keys present: "API_URL", "DB_PASSWORD", "GREETING", "USER"/,
      ],
      [
        [{ objectName: 'x', secretPath: 'secret/data/encoded', format: 'env' }],
        'InvalidArgument',
        /object "x" \(GET secret\/data\/encoded\): format "env": key "key\.bin" is not a shell variable name/,
      ],
      [
        [{ objectName: 'x', secretPath: 'secret/data/app', secretKey: 'USER', format: 'files' }],
        'InvalidArgument',
        /object "x" \(GET secret\/data\/app\): format "files" needs a map of keys, but it is a string/,
      ],
      [
        [{ objectName: 'x', secretPath: 'secret/data/app', format: 'tls' }],
        'InvalidArgument',
        /object "x" \(GET secret\/data\/app\): format "tls": no private key found/,
      ],
      [
        [{ objectName: 'x', secretPath: 'secret/data/app', secretKey: 'USER', format: 'yaml', encoding: 'base64' }],
        'InvalidArgument',
        /object "x" \(GET secret\/data\/app\), the value: the value is not valid standard \(padded\) base64/,
      ],
    ]
    for (const [objects, code, expected] of cases) {
      const { result } = await fx.mount({ params: { objects } })
      t.notOk(result.ok, JSON.stringify(objects))
      t.equal(result.grpcCode, code, JSON.stringify(objects))
      t.match(result.message, expected)
      for (const v of SECRET_VALUES) t.notMatch(result.message, v)
    }
  })

  t.test('no secret value, key material, JWT or token in the provider log', async (t) => {
    const logs = await fx.provider.logs()
    t.ok(logs.includes('"msg":"mount"'), 'mount lines were logged')
    t.same(findLeaks(logs, [...SECRET_VALUES, ...Object.values(APP), ...fx.issuedJwts]), [])
    t.notMatch(logs, /-----BEGIN/, 'no PEM block')
  })
})
