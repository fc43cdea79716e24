// The validator node-vault checks requests with: node-vault's own request schema takes the fast
// path, every other answer is tv4's, and the daemon's node-vault uses it.
import nodeVault from 'node-vault'
import t from 'tap'
import tv4 from 'tv4'
import { createNodeVaultClient, withRequestValidator } from '../../../src/vault/http.js'
import { importNodeVault } from '../../../src/vault/sessions/pool.js'
import {
  stringPropertiesOf,
  withStringPropertiesFastPath,
  type SchemaValidator,
} from '../../../src/vault/request-validator.js'
import type { VaultCall, VaultCaller } from '../../../src/vault/transport/transport.js'

/** A transport that answers every call with an empty KV answer and remembers the calls. */
function fakeTransport(): VaultCaller & { calls: VaultCall[] } {
  const calls: VaultCall[] = []
  return {
    address: 'http://127.0.0.1:8200',
    calls,
    call: async (c) => {
      calls.push(c)
      return { status: 200, body: { data: {} } }
    },
  }
}

/** tv4, counting its validate() calls. */
function countingTv4(): SchemaValidator & { count: number } {
  const counter = {
    count: 0,
    validate(data: unknown, schema: object): boolean {
      counter.count += 1
      return tv4.validate(data, schema)
    },
    get error() {
      return tv4.error
    },
  }
  return counter
}

/** A tv4 error without its stack (which differs per call). */
function errorOf(e: unknown): string {
  if (e === null || e === undefined) return String(e)
  const { message, code, dataPath, schemaPath } = e as Record<string, unknown>
  return JSON.stringify({ message, code, dataPath, schemaPath })
}

function request(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { path: '/secret/data/app', method: 'GET', call: { token: 't', timeoutMs: 1000 }, ...overrides }
}

/** node-vault's request schema, as node-vault passes it to its validator. */
async function nodeVaultRequestSchema(): Promise<object> {
  const schemas: object[] = []
  const recorder: SchemaValidator = {
    error: null,
    validate(_data, schema) {
      schemas.push(schema)
      return true
    },
  }
  const client = createNodeVaultClient(withRequestValidator(nodeVault, recorder), fakeTransport())
  await client.request(request() as never)
  if (schemas.length !== 1) throw new Error(`node-vault validated ${schemas.length} times`)
  return schemas[0]!
}

t.test("node-vault's request schema is the shape the fast path knows", async (t) => {
  const schema = await nodeVaultRequestSchema()
  t.same(stringPropertiesOf(schema), ['path', 'method'])
})

t.test('other schemas are not taken for that shape', async (t) => {
  const notThatShape: object[] = [
    { type: 'array', items: { type: 'string' } },
    { type: 'object', properties: { path: { type: 'number' } } },
    { type: 'object', properties: { path: { type: 'string', minLength: 3 } } },
    { type: 'object', properties: { path: { type: 'string' } }, additionalProperties: false },
    { type: 'object', properties: { path: { type: 'string' } }, required: ['method'] },
    { type: 'object', properties: { path: { type: 'string' } }, required: 'path' },
    { type: 'object', properties: [] },
    { type: 'object' },
    { properties: { path: { type: 'string' } } },
    { $ref: '#/definitions/x', definitions: { x: { type: 'string' } } },
  ]
  for (const schema of notThatShape) t.equal(stringPropertiesOf(schema), null, JSON.stringify(schema))
})

t.test('every answer equals tv4’s, refusals with tv4’s error', async (t) => {
  const requestSchema = await nodeVaultRequestSchema()
  const schemas: object[] = [
    requestSchema,
    { type: 'object', properties: { path: { type: 'string' } }, required: [] },
    { type: 'object', properties: { path: { type: 'string', minLength: 5 } }, required: ['path'] },
    { type: 'object', properties: { path: { type: 'string' } }, additionalProperties: false },
  ]
  const values: unknown[] = [undefined, null, 0, 1.5, '', 'GET', '/x', true, [], ['GET'], {}, { a: 1 }, Symbol.iterator]
  const data: unknown[] = [undefined, null, 7, 'text', [], [1, 2], new Date(0), request()]
  for (const path of values) for (const method of values) data.push(request({ path, method }))
  data.push(request({ extra: { deep: [1, 2, 3] } }), Object.create({ path: '/p', method: 'GET' }))
  const fast = withStringPropertiesFastPath(tv4)
  let compared = 0
  for (const schema of schemas) {
    for (const d of data) {
      const expected = tv4.validate(d, schema)
      const expectedError = errorOf(tv4.error)
      const got = fast.validate(d, schema)
      t.equal(got, expected, `${JSON.stringify(schema)} / ${String(JSON.stringify(d))}`)
      t.equal(errorOf(fast.error), got ? 'null' : expectedError)
      compared += 1
    }
  }
  t.equal(compared, schemas.length * data.length)
})

t.test("node-vault's request schema: valid requests skip tv4, refusals are tv4's", async (t) => {
  const schema = await nodeVaultRequestSchema()
  const counted = countingTv4()
  const fast = withStringPropertiesFastPath(counted)
  t.equal(fast.validate(request(), schema), true)
  t.equal(fast.validate(request({ json: { jwt: 'x', role: 'r' } }), schema), true)
  t.equal(counted.count, 0, 'tv4 never ran for valid requests')
  t.equal(fast.validate(request({ method: 5 }), schema), false)
  t.equal(counted.count, 1)
  t.match(String((fast.error as { message?: unknown }).message), /Invalid type: number \(expected string\)/)
  t.equal(fast.validate(request({ path: undefined }), schema), false)
  t.match(String((fast.error as { message?: unknown }).message), /Missing required property: path/)
  t.equal(fast.validate(request(), schema), true)
  t.equal(fast.error, null, 'a valid answer clears the last error')
})

t.test("the daemon's node-vault validates through the fast path, refusing what tv4 refuses", async (t) => {
  const factory = await importNodeVault()
  const transport = fakeTransport()
  const client = createNodeVaultClient(factory, transport)
  const original = tv4.validate
  let tv4Calls = 0
  tv4.validate = (data, schema) => {
    tv4Calls += 1
    return original.call(tv4, data, schema)
  }
  t.teardown(() => {
    tv4.validate = original
  })
  await client.request(request() as never)
  t.equal(transport.calls.length, 1, 'the valid request was sent')
  t.equal(tv4Calls, 0, 'without running tv4')
  const refused = await client.request(request({ method: 42 }) as never).then(
    () => undefined,
    (err: unknown) => err,
  )
  t.match(String((refused as { message?: unknown } | undefined)?.message), /Invalid type: number \(expected string\)/)
  t.equal(tv4Calls, 1, 'tv4 decided the refusal')
  t.equal(transport.calls.length, 1, 'the refused request was not sent')
})
