// KV secrets into files, through the driver's own client, against a real OpenBao.
import t from 'tap'
import { Fixture } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'

const SECRET_VALUES = ['kv2-password-Zq8', 'kv1-token-Hx3', 'aGVsbG8gYmFzZTY0', 'c0ffee00', 'hello base64']

t.test('KV secrets through the driver client', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())

  await fx.kvPut('app', { password: 'kv2-password-Zq8', user: 'admin', nested: { a: 1, b: [true, null] } })
  await fx.bao.enableSecrets('kv', 'kv1', { version: '1' })
  const kv1 = await fx.bao.api('POST', '/v1/kv1/legacy', { token: 'kv1-token-Hx3' })
  t.equal(kv1.status, 204)
  await fx.kvPut('encoded', { b64: 'aGVsbG8gYmFzZTY0', hex: 'c0ffee00', bad: 'not base64!' })

  t.test('KV v2 and KV v1 values, modes and nested names', async (t) => {
    const { result, files } = await fx.mount({
      params: {
        objects: [
          { objectName: 'password', secretPath: 'secret/data/app', secretKey: 'password', filePermission: 0o600 },
          { objectName: 'user', secretPath: '/v1/secret/data/app', secretKey: 'user' },
          { objectName: 'nested.json', secretPath: 'v1/secret/data/app', secretKey: 'nested' },
          { objectName: 'legacy/token', secretPath: '/kv1/legacy', secretKey: 'token' },
        ],
      },
    })
    t.ok(result.ok, result.message)
    t.same([...files.keys()].sort(), ['legacy/token', 'nested.json', 'password', 'user'])
    t.equal(files.get('password')?.bytes.toString(), 'kv2-password-Zq8')
    t.equal(files.get('password')?.mode, 0o600, 'per-object filePermission')
    t.equal(files.get('user')?.bytes.toString(), 'admin')
    t.equal(files.get('user')?.mode, 0o644, 'default mode from the request permission')
    t.equal(files.get('nested.json')?.bytes.toString(), '{"a":1,"b":[true,null]}', 'non-string value as compact JSON')
    t.equal(files.get('legacy/token')?.bytes.toString(), 'kv1-token-Hx3', 'KV v1 at top level, nested objectName')
    t.same(Object.keys(result.objectVersions).sort(), ['legacy/token', 'nested.json', 'password', 'user'])
  })

  t.test('default permission from the request', async (t) => {
    const { result, files } = await fx.mount({
      permission: '256',
      params: { objects: [{ objectName: 'ro', secretPath: 'secret/data/app', secretKey: 'user' }] },
    })
    t.ok(result.ok, result.message)
    t.equal(files.get('ro')?.mode, 0o400)
  })

  t.test('whole response is JSON and byte-identical while the secret is unchanged', async (t) => {
    const objects = [{ objectName: 'whole.json', secretPath: 'secret/data/app' }]
    const first = await fx.mount({ params: { objects } })
    const second = await fx.mount({ params: { objects } })
    t.ok(first.result.ok, first.result.message)
    const a = first.files.get('whole.json')!.bytes
    const b = second.files.get('whole.json')!.bytes
    t.ok(a.equals(b), 'identical bytes on two reads')
    const parsed = JSON.parse(a.toString())
    t.equal(parsed.data.data.password, 'kv2-password-Zq8')
    t.equal(parsed.request_id, '', 'per-request id blanked')
    t.equal(first.result.objectVersions['whole.json'], second.result.objectVersions['whole.json'])
  })

  t.test('base64 and hex decoding', async (t) => {
    const { result, files } = await fx.mount({
      params: {
        objects: [
          { objectName: 'b64', secretPath: 'secret/data/encoded', secretKey: 'b64', encoding: 'base64' },
          { objectName: 'hex', secretPath: 'secret/data/encoded', secretKey: 'hex', encoding: 'hex' },
        ],
      },
    })
    t.ok(result.ok, result.message)
    t.equal(files.get('b64')?.bytes.toString(), 'hello base64')
    t.same([...files.get('hex')!.bytes], [0xc0, 0xff, 0xee, 0x00])
  })

  t.test('a value that is not base64 is refused naming the object and key', async (t) => {
    const { result } = await fx.mount({
      params: {
        objects: [{ objectName: 'bad', secretPath: 'secret/data/encoded', secretKey: 'bad', encoding: 'base64' }],
      },
    })
    t.notOk(result.ok)
    t.equal(result.grpcCode, 'InvalidArgument')
    t.match(result.message, /object "bad".*secretKey "bad".*not valid standard \(padded\) base64/)
    t.notMatch(result.message, /not base64!/, 'the value is not echoed')
  })

  t.test('the secrets field: "null", "", "{}" and a map', async (t) => {
    for (const secrets of ['null', '', '{}', { other: 'x' }]) {
      const { result, files } = await fx.mount({
        secrets,
        params: { objects: [{ objectName: 'u', secretPath: 'secret/data/app', secretKey: 'user' }] },
      })
      t.ok(result.ok, `secrets ${JSON.stringify(secrets)}: ${result.message}`)
      t.equal(files.get('u')?.bytes.toString(), 'admin')
    }
  })

  t.test('a missing key names the key, the path and the keys present, not their values', async (t) => {
    const { result } = await fx.mount({
      params: { objects: [{ objectName: 'x', secretPath: 'secret/data/app', secretKey: 'pasword' }] },
    })
    t.notOk(result.ok)
    t.equal(result.grpcCode, 'NotFound')
    t.match(
      result.message,
      /object "x" \(GET secret\/data\/app\).*secretKey "pasword" not found; keys present: "nested", "password", "user"/,
    )
    t.notMatch(result.message, /kv2-password/)
  })

  t.test('a missing secret is NotFound naming the path', async (t) => {
    const { result } = await fx.mount({
      params: { objects: [{ objectName: 'x', secretPath: 'secret/data/nope', secretKey: 'a' }] },
    })
    t.notOk(result.ok)
    t.equal(result.grpcCode, 'NotFound')
    t.match(result.message, /object "x": GET secret\/data\/nope .*Vault answered 404/)
  })

  t.test('path traversal and absolute objectNames are refused before Vault is asked', async (t) => {
    for (const objectName of ['../escape', 'a/../../etc/passwd', '/etc/passwd', '..data', 'a//b']) {
      const { result } = await fx.mount({
        params: { objects: [{ objectName, secretPath: 'secret/data/app', secretKey: 'user' }] },
      })
      t.notOk(result.ok, objectName)
      t.equal(result.grpcCode, 'InvalidArgument', objectName)
      t.match(result.message, `object ${JSON.stringify(objectName)}: objectName`, objectName)
    }
  })

  t.test('duplicate objectNames are refused, listing them', async (t) => {
    const { result } = await fx.mount({
      params: {
        objects: [
          { objectName: 'same', secretPath: 'secret/data/app', secretKey: 'user' },
          { objectName: 'same', secretPath: 'secret/data/app', secretKey: 'password' },
        ],
      },
    })
    t.notOk(result.ok)
    t.equal(result.grpcCode, 'InvalidArgument')
    t.match(result.message, /objectName must be unique; duplicated: "same"/)
  })

  t.test('KV v2 version pinning with ?version=', async (t) => {
    await fx.kvPut('pinned', { v: 'one' })
    await fx.kvPut('pinned', { v: 'two' })
    const { result, files } = await fx.mount({
      params: {
        objects: [
          { objectName: 'v1', secretPath: 'secret/data/pinned?version=1', secretKey: 'v' },
          { objectName: 'latest', secretPath: 'secret/data/pinned', secretKey: 'v' },
        ],
      },
    })
    t.ok(result.ok, result.message)
    t.equal(files.get('v1')?.bytes.toString(), 'one')
    t.equal(files.get('latest')?.bytes.toString(), 'two')
  })

  t.test('odd Vault answers give an error naming the object, never a crash', async (t) => {
    await fx.bao.writePolicy(
      'app-read',
      'path "secret/*" { capabilities = ["read"] }\npath "kv1/*" { capabilities = ["read", "create", "update"] }\npath "sys/health" { capabilities = ["read"] }',
    )
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      // A write answers 204 with no body.
      [
        { objectName: 'empty', secretPath: 'kv1/written', method: 'POST', secretArgs: { a: 'b' }, secretKey: 'a' },
        /object "empty".*empty body/,
      ],
      // sys/health has no "data" object.
      [
        { objectName: 'health', secretPath: 'sys/health', secretKey: 'initialized' },
        /object "health".*no "data" object/,
      ],
    ]
    for (const [object, expected] of cases) {
      const { result } = await fx.mount({ params: { objects: [object] } })
      t.notOk(result.ok)
      t.equal(result.grpcCode, 'FailedPrecondition')
      t.match(result.message, expected)
    }
    const whole = await fx.mount({ params: { objects: [{ objectName: 'h.json', secretPath: 'sys/health' }] } })
    t.ok(whole.result.ok, 'whole-response mode writes any JSON object')
  })

  t.test('no secret value, JWT or token in the provider log', async (t) => {
    const logs = await fx.provider.logs()
    t.ok(logs.includes('"msg":"mount"'), 'mount lines were logged')
    t.same(findLeaks(logs, [...SECRET_VALUES, ...fx.issuedJwts]), [])
  })
})
