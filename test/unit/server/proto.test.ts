import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import { GENERATED_FILE, generate, PROTO_FILES } from '../../../scripts/proto-gen.mjs'
import { PACKAGE_ROOT, PROTO_DIR } from '../../../src/package-info.js'
import { HEALTH_PROTO, loadProtos, PROVIDER_PROTO } from '../../../src/server/proto.js'

t.test('proto/messages.cjs is generated from the .proto files as they are now', async (t) => {
  t.same(PROTO_FILES, [PROVIDER_PROTO, HEALTH_PROTO])
  const committed = readFileSync(path.join(PACKAGE_ROOT, GENERATED_FILE), 'utf8')
  t.equal(committed, await generate(), `${GENERATED_FILE} is out of date: run \`node scripts/proto-gen.mjs\``)
})

// What the provider loaded before it had generated code, and what the grpc-js
// generic client and server were built on: the reference for every object and byte.
const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
}

function loaderService(file: string, name: string): grpc.ServiceDefinition {
  const pkg = protoLoader.loadSync(path.join(PROTO_DIR, file), LOADER_OPTIONS)
  return pkg[name] as unknown as grpc.ServiceDefinition
}

const protos = loadProtos()
const services = [
  { ours: protos.provider.service, loader: loaderService(PROVIDER_PROTO, 'v1alpha1.CSIDriverProvider') },
  { ours: protos.health.service, loader: loaderService(HEALTH_PROTO, 'grpc.health.v1.Health') },
]

t.test('each method has proto-loader’s path, streaming and names', async (t) => {
  t.same(Object.keys(protos.provider.service).sort(), ['Mount', 'Version'])
  t.same(Object.keys(protos.health.service).sort(), ['Check', 'Watch'])
  for (const { ours, loader } of services) {
    t.same(Object.keys(ours).sort(), Object.keys(loader).sort())
    for (const [name, method] of Object.entries(loader)) {
      const { path, requestStream, responseStream, originalName } = ours[name]!
      t.strictSame(
        { path, requestStream, responseStream, originalName },
        {
          path: method.path,
          requestStream: method.requestStream,
          responseStream: method.responseStream,
          originalName: method.originalName,
        },
        name,
      )
    }
  }
  // The health Watch is the one stream (`returns (stream HealthCheckResponse)`).
  t.equal(protos.health.service.Watch!.responseStream, true)
})

/** The serialize/deserialize pair of one side of a method. */
interface Codec {
  serialize: (value: object) => Buffer
  deserialize: (bytes: Buffer) => object
}

function codecs(method: grpc.MethodDefinition<object, object>): { request: Codec; response: Codec } {
  return {
    request: { serialize: method.requestSerialize, deserialize: method.requestDeserialize },
    response: { serialize: method.responseSerialize, deserialize: method.responseDeserialize },
  }
}

type Same = (actual: unknown, expected: unknown, message: string) => void

/**
 * `value` through ours and proto-loader's code in every combination: the
 * bytes are the same, and each decodes the other's bytes to the very objects
 * proto-loader makes of its own (field names, defaults, Buffers, enum names).
 */
function sameAsLoader(same: Same, ours: Codec, loader: Codec, value: object): void {
  const ourBytes = ours.serialize(value)
  const loaderBytes = loader.serialize(value)
  const reference = loader.deserialize(loaderBytes)
  same(ourBytes, loaderBytes, 'the same bytes')
  same(loader.deserialize(ourBytes), reference, 'ours encodes, proto-loader decodes')
  same(ours.deserialize(loaderBytes), reference, 'proto-loader encodes, ours decodes')
  same(ours.deserialize(ourBytes), reference, 'ours both ways')
}

/** The named examples one by one, then generated values (fast-check shrinks a failure to a small one). */
function checkAll(
  t: Test,
  service: 'provider' | 'health',
  method: string,
  side: 'request' | 'response',
  values: fc.Arbitrary<object>,
  examples: object[],
): void {
  const { ours, loader } = services[service === 'provider' ? 0 : 1]!
  const ourCodec = codecs(ours[method]!)[side]
  const loaderCodec = codecs(loader[method]!)[side]
  for (const value of examples) {
    sameAsLoader((a, e, m) => t.strictSame(a, e, `${method} ${side}: ${m}`), ourCodec, loaderCodec, value)
  }
  t.doesNotThrow(
    () => fc.assert(fc.property(values, (value) => sameAsLoader(assert.deepStrictEqual, ourCodec, loaderCodec, value))),
    `${method} ${side}: generated values`,
  )
}

const text = fc.string({ unit: 'grapheme' })
// No key is required: an absent field takes its default on decoding.
const objectVersion = fc.record({ id: text, version: text }, { requiredKeys: [] })
const contents = fc.oneof(
  fc.uint8Array().map((a) => Buffer.from(a)),
  fc.uint8Array(),
)

t.test('MountRequest as proto-loader encodes and decodes it', async (t) => {
  const request = {
    attributes: '{"roleName":"app","objects":"- objectName: a\\n"}',
    secrets: '{}',
    target_path: '/var/lib/kubelet/pods/uid/volumes/kubernetes.io~csi/v/mount',
    permission: '420',
    current_object_version: [
      { id: 'a', version: '1' },
      { id: 'b', version: '' },
    ],
  }
  checkAll(
    t,
    'provider',
    'Mount',
    'request',
    fc.record(
      {
        attributes: text,
        secrets: text,
        target_path: text,
        permission: text,
        current_object_version: fc.array(objectVersion, { maxLength: 4 }),
      },
      { requiredKeys: [] },
    ),
    [request, {}, { target_path: '/t' }],
  )
  // Field names as the driver's Go code sends them (keepCase), not camelCased,
  // and every absent field with its default (defaults: true).
  const mount = protos.provider.service.Mount!
  t.strictSame(mount.requestDeserialize(mount.requestSerialize({ target_path: '/t' })), {
    attributes: '',
    secrets: '',
    target_path: '/t',
    permission: '',
    current_object_version: [],
  })
  t.throws(() => mount.requestSerialize([] as unknown as object), /array/)
})

t.test('MountResponse as proto-loader encodes and decodes it', async (t) => {
  const nonUtf8 = Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x80])
  checkAll(
    t,
    'provider',
    'Mount',
    'response',
    fc.record(
      {
        object_version: fc.array(objectVersion, { maxLength: 4 }),
        error: fc.record({ code: text }, { requiredKeys: [] }),
        files: fc.array(
          fc.record(
            { path: text, mode: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), contents },
            { requiredKeys: [] },
          ),
          { maxLength: 4 },
        ),
      },
      { requiredKeys: [] },
    ),
    [
      {
        object_version: [{ id: 'a', version: '3' }],
        files: [
          { path: 'a', mode: 0o644, contents: nonUtf8 },
          { path: 'empty', mode: 0o600, contents: Buffer.alloc(0) },
          { path: 'no-contents' },
        ],
      },
      { error: { code: 'VAULT_DENIED' } },
      { error: {} },
      {},
    ],
  )
  const mount = protos.provider.service.Mount!
  const decoded = mount.responseDeserialize(
    mount.responseSerialize({ files: [{ path: 'a', mode: 420, contents: nonUtf8 }] }),
  ) as { files: { contents: unknown }[] }
  // Contents come back as the same bytes in a Buffer, not as text.
  t.strictSame(decoded.files[0]!.contents, nonUtf8)
  t.strictSame(decoded, { object_version: [], error: null, files: [{ path: 'a', mode: 420, contents: nonUtf8 }] })
})

t.test('Version request and response as proto-loader encodes and decodes them', async (t) => {
  checkAll(t, 'provider', 'Version', 'request', fc.record({ version: text }, { requiredKeys: [] }), [
    { version: 'v1alpha1' },
    {},
  ])
  checkAll(
    t,
    'provider',
    'Version',
    'response',
    fc.record({ version: text, runtime_name: text, runtime_version: text }, { requiredKeys: [] }),
    [{ version: 'v1alpha1', runtime_name: 'vault-csi-provider-ts', runtime_version: '0.1.0' }, {}],
  )
})

t.test('health check request and response, every status, as proto-loader encodes and decodes them', async (t) => {
  const statuses = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN']
  for (const method of ['Check', 'Watch']) {
    checkAll(t, 'health', method, 'request', fc.record({ service: text }, { requiredKeys: [] }), [
      { service: 'v1alpha1.CSIDriverProvider' },
      {},
    ])
    checkAll(
      t,
      'health',
      method,
      'response',
      fc.record({ status: fc.constantFrom(...statuses, 0, 1, 2, 3) }, { requiredKeys: [] }),
      [...statuses.map((status) => ({ status })), {}],
    )
  }
  // Enums by name (enums: String), whether sent as a name or a number.
  const check = protos.health.service.Check!
  t.strictSame(check.responseDeserialize(check.responseSerialize({ status: 2 })), { status: 'NOT_SERVING' })
  t.strictSame(check.responseDeserialize(check.responseSerialize({})), { status: 'UNKNOWN' })
})
