import t from 'tap'
import { grpcStatusOf } from '../../../src/server/grpc-status.js'
import { status as GrpcStatus } from '@grpc/grpc-js'
import { ProviderError } from '../../../src/errors.js'
import { extractKey, responseData, wholeResponse } from '../../../src/render/extract.js'
import { thrown } from '../../support/thrown.js'

const WHAT = 'object "db-password" (GET secret/data/db)'

function providerError(fn: () => unknown): ProviderError {
  return thrown(fn, ProviderError)
}

function kv2(data: Record<string, unknown> | null, metadata: Record<string, unknown> = {}): unknown {
  return {
    request_id: '6b8a1c0e-8a5a-4b7e-9d1e-000000000001',
    lease_id: '',
    renewable: false,
    lease_duration: 0,
    data: {
      data,
      metadata: { created_time: '2024-05-01T10:00:00Z', deletion_time: '', destroyed: false, version: 3, ...metadata },
    },
    wrap_info: null,
    warnings: null,
    auth: null,
  }
}

function kv1(data: Record<string, unknown>): unknown {
  return {
    request_id: 'r-1',
    lease_id: '',
    renewable: false,
    lease_duration: 2764800,
    data,
    wrap_info: null,
    warnings: null,
    auth: null,
  }
}

t.test('KV v2: the key is looked up inside data.data', async (t) => {
  const body = kv2({ username: 'app', password: 's3cr3t-value' })
  t.strictSame(extractKey(body, 'password', WHAT), { value: 's3cr3t-value', isString: true })
  t.strictSame(extractKey(body, 'username', WHAT), { value: 'app', isString: true })
  // metadata is not a key of the secret.
  const err = providerError(() => extractKey(body, 'metadata', WHAT))
  t.equal(err.code, 'SECRET_KEY_NOT_FOUND')
})

t.test('KV v1 and other engines: the key is looked up at the top of data', async (t) => {
  const body = kv1({ api_key: 'k-123', port: 5432 })
  t.strictSame(extractKey(body, 'api_key', WHAT), { value: 'k-123', isString: true })
  t.strictSame(extractKey(body, 'port', WHAT), { value: '5432', isString: false })
  // A KV v1 secret with a string key named "data" is not mistaken for KV v2.
  t.strictSame(extractKey(kv1({ data: 'plain', other: 'x' }), 'data', WHAT), { value: 'plain', isString: true })
  t.strictSame(extractKey(kv1({ data: 'plain', other: 'x' }), 'other', WHAT), { value: 'x', isString: true })
  // A dynamic database secret.
  const db = {
    lease_id: 'database/creds/app/abc',
    lease_duration: 3600,
    renewable: true,
    data: { username: 'v-app-x', password: 'A1a-pw' },
  }
  t.strictSame(extractKey(db, 'username', WHAT), { value: 'v-app-x', isString: true })
  // Empty string values are values.
  t.strictSame(extractKey(kv2({ empty: '' }), 'empty', WHAT), { value: '', isString: true })
})

t.test('non-string values become compact JSON with sorted keys', async (t) => {
  const body = kv2({
    obj: { z: 1, a: { y: [3, { d: true, c: null }], b: 'x' } },
    list: ['b', 'a', 1.5],
    num: 42,
    neg: -0.25,
    yes: true,
    nothing: null,
  })
  t.strictSame(extractKey(body, 'obj', WHAT), {
    value: '{"a":{"b":"x","y":[3,{"c":null,"d":true}]},"z":1}',
    isString: false,
  })
  t.strictSame(extractKey(body, 'list', WHAT), { value: '["b","a",1.5]', isString: false })
  t.strictSame(extractKey(body, 'num', WHAT), { value: '42', isString: false })
  t.strictSame(extractKey(body, 'neg', WHAT), { value: '-0.25', isString: false })
  t.strictSame(extractKey(body, 'yes', WHAT), { value: 'true', isString: false })
  t.strictSame(extractKey(body, 'nothing', WHAT), { value: 'null', isString: false })
})

t.test('a missing key lists the key names, never the values', async (t) => {
  const body = kv2({ password: 'TOPSECRET-pw-value', username: 'TOPSECRET-user', api_token: 'TOPSECRET-token' })
  const err = providerError(() => extractKey(body, 'pasword', WHAT))
  t.equal(err.code, 'SECRET_KEY_NOT_FOUND')
  t.equal(grpcStatusOf(err.code), GrpcStatus.NOT_FOUND)
  t.equal(err.message, `${WHAT}: secretKey "pasword" not found; keys present: "api_token", "password", "username"`)
  t.notMatch(err.message, 'TOPSECRET')

  const empty = providerError(() => extractKey(kv2({}), 'x', WHAT))
  t.equal(empty.message, `${WHAT}: secretKey "x" not found; the secret has no keys`)

  const many: Record<string, string> = {}
  for (let i = 0; i < 25; i++) many[`k${String(i).padStart(2, '0')}`] = `TOPSECRET-${i}`
  const long = providerError(() => extractKey(kv2(many), 'missing', WHAT))
  t.match(long.message, '"k00", "k01"')
  t.match(long.message, '"k19", and 5 more')
  t.notMatch(long.message, '"k20"')
  t.notMatch(long.message, 'TOPSECRET')

  // Inherited properties are not keys.
  for (const key of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
    t.equal(providerError(() => extractKey(kv2({ a: 'b' }), key, WHAT)).code, 'SECRET_KEY_NOT_FOUND', key)
  }
})

t.test('a deleted or destroyed KV v2 version', async (t) => {
  const deleted = providerError(() =>
    extractKey(kv2(null, { deletion_time: '2024-06-01T00:00:00Z', destroyed: false }), 'password', WHAT),
  )
  t.equal(deleted.code, 'VAULT_NOT_FOUND')
  t.equal(grpcStatusOf(deleted.code), GrpcStatus.NOT_FOUND)
  t.equal(deleted.message, `${WHAT}: this KV version is deleted; no key "password" to read`)

  const destroyed = providerError(() =>
    extractKey(kv2(null, { deletion_time: '2024-06-01T00:00:00Z', destroyed: true }), 'password', WHAT),
  )
  t.equal(destroyed.code, 'VAULT_NOT_FOUND')
  t.match(destroyed.message, 'this KV version is destroyed')

  const empty = providerError(() => extractKey(kv2(null), 'password', WHAT))
  t.equal(empty.code, 'VAULT_NOT_FOUND')
  t.match(empty.message, 'this KV version is empty')
})

t.test('unusable bodies are VAULT_BAD_RESPONSE', async (t) => {
  const cases: Array<[unknown, string]> = [
    ['', 'Vault answered with an empty body (no secret at this path?)'],
    [undefined, 'Vault answered with an empty body (no secret at this path?)'], // 204 No Content
    [null, 'Vault answered with an empty body (no secret at this path?)'],
    ['<html>502 Bad Gateway</html>', "Vault's answer is not a JSON object"],
    [[{ data: { a: 'b' } }], "Vault's answer is not a JSON object"],
    [42, "Vault's answer is not a JSON object"],
    [{}, `Vault's answer has no "data" object`],
    [{ data: null }, `Vault's answer has no "data" object`],
    [{ data: 'text' }, `Vault's answer has no "data" object`],
    [{ data: ['a'] }, `Vault's answer has no "data" object`],
    [{ errors: [] }, `Vault's answer has no "data" object`],
  ]
  for (const [body, message] of cases) {
    const err = providerError(() => extractKey(body, 'k', WHAT))
    t.equal(err.code, 'VAULT_BAD_RESPONSE', JSON.stringify(body))
    t.equal(grpcStatusOf(err.code), GrpcStatus.FAILED_PRECONDITION)
    t.equal(err.message, `${WHAT}: ${message}`, JSON.stringify(body))
    t.equal(providerError(() => responseData(body, WHAT)).code, 'VAULT_BAD_RESPONSE')
  }
  // The non-JSON text is not echoed.
  t.notMatch(providerError(() => extractKey('secret-ish body text', 'k', WHAT)).message, 'secret-ish')
  // Without secretKey, only the envelope must be an object.
  for (const body of ['', undefined, null, 'text', [1], 7]) {
    t.equal(providerError(() => wholeResponse(body, WHAT)).code, 'VAULT_BAD_RESPONSE', JSON.stringify(body))
  }
})

t.test('wholeResponse: deterministic, request_id blanked', async (t) => {
  const a = {
    request_id: 'aaaaaaaa-0000-0000-0000-000000000001',
    lease_id: '',
    renewable: false,
    lease_duration: 0,
    data: { data: { password: 'pw', username: 'u' }, metadata: { version: 3, created_time: '2024-05-01T10:00:00Z' } },
    wrap_info: null,
    warnings: null,
    auth: null,
  }
  const b = {
    auth: null,
    warnings: null,
    wrap_info: null,
    data: { metadata: { created_time: '2024-05-01T10:00:00Z', version: 3 }, data: { username: 'u', password: 'pw' } },
    lease_duration: 0,
    renewable: false,
    lease_id: '',
    request_id: 'bbbbbbbb-0000-0000-0000-000000000002',
  }
  const ra = wholeResponse(a, WHAT)
  const rb = wholeResponse(b, WHAT)
  t.equal(ra, rb)
  t.ok(Buffer.from(ra).equals(Buffer.from(rb)))
  t.equal(
    ra,
    '{"auth":null,"data":{"data":{"password":"pw","username":"u"},"metadata":{"created_time":"2024-05-01T10:00:00Z","version":3}},"lease_duration":0,"lease_id":"","renewable":false,"request_id":"","warnings":null,"wrap_info":null}',
  )
  t.notMatch(ra, 'aaaaaaaa')
  // The body passed in is not modified.
  t.equal(a.request_id, 'aaaaaaaa-0000-0000-0000-000000000001')
  // A real change shows.
  const c = { ...a, data: { ...a.data, data: { password: 'pw2', username: 'u' } } }
  t.not(wholeResponse(c, WHAT), ra)
  // No request_id: nothing is added.
  t.equal(wholeResponse({ data: { k: 'v' } }, WHAT), '{"data":{"k":"v"}}')
})
