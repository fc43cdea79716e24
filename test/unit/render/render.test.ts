import t from 'tap'
import { grpcStatusOf } from '../../../src/server/grpc-status.js'
import { status as GrpcStatus } from '@grpc/grpc-js'
import { ProviderError } from '../../../src/errors.js'
import {
  checkVolume,
  renderObject,
  renderObjects,
  RENDER_BYTES_PER_TURN,
  versionObject,
  type RenderedObject,
} from '../../../src/render/render.js'
import { objectVersion } from '../../../src/render/versions.js'
import { parseObjects } from '../../../src/request/objects.js'
import type { SecretObject } from '../../../src/request/types.js'
import { thrown } from '../../support/thrown.js'

const KEY = Buffer.alloc(32, 1)
const LABEL = 'object "x" (GET secret/data/app)'

function providerError(fn: () => unknown): ProviderError {
  return thrown(fn, ProviderError)
}

function obj(yamlFields: string): SecretObject {
  return parseObjects(`- {${yamlFields}}`)[0]!
}

const KV2 = {
  request_id: 'r-1',
  lease_id: '',
  renewable: false,
  lease_duration: 0,
  data: {
    data: { password: 'pw', cert_b64: 'aGVsbG8=', cert_hex: '6869', list: ['a'], conf: { b: 1, a: 2 } },
    metadata: { version: 1 },
  },
}

t.test('renderObject: one key', async (t) => {
  const files = renderObject(
    obj('objectName: db/password, secretPath: secret/data/app, secretKey: password'),
    KV2,
    420,
    LABEL,
  )
  t.equal(files.length, 1)
  t.equal(files[0]!.path, 'db/password')
  t.equal(files[0]!.mode, 420)
  t.equal(files[0]!.contents.toString('utf8'), 'pw')
})

t.test('renderObject: modes', async (t) => {
  t.equal(renderObject(obj('objectName: a, secretPath: s, secretKey: password'), KV2, 0o600, LABEL)[0]!.mode, 0o600)
  t.equal(
    renderObject(obj('objectName: a, secretPath: s, secretKey: password, filePermission: 0440'), KV2, 420, LABEL)[0]!
      .mode,
    0o440,
  )
  // Mode 0 is a mode, not "unset".
  t.equal(
    renderObject(obj('objectName: a, secretPath: s, secretKey: password, filePermission: 0'), KV2, 420, LABEL)[0]!.mode,
    0,
  )
})

t.test('renderObject: encodings and JSON values', async (t) => {
  t.equal(
    renderObject(
      obj('objectName: a, secretPath: s, secretKey: cert_b64, encoding: base64'),
      KV2,
      420,
      LABEL,
    )[0]!.contents.toString(),
    'hello',
  )
  t.equal(
    renderObject(
      obj('objectName: a, secretPath: s, secretKey: cert_hex, encoding: hex'),
      KV2,
      420,
      LABEL,
    )[0]!.contents.toString(),
    'hi',
  )
  t.equal(
    renderObject(obj('objectName: a, secretPath: s, secretKey: conf'), KV2, 420, LABEL)[0]!.contents.toString(),
    '{"a":2,"b":1}',
  )
  const decodeJson = providerError(() =>
    renderObject(obj('objectName: a, secretPath: s, secretKey: list, encoding: base64'), KV2, 420, LABEL),
  )
  t.equal(decodeJson.code, 'DECODE_FAILED')
  t.equal(
    decodeJson.message,
    `${LABEL}: secretKey "list" holds a JSON array, not a string, so encoding "base64" cannot apply`,
  )
  const decodeObj = providerError(() =>
    renderObject(obj('objectName: a, secretPath: s, secretKey: conf, encoding: hex'), KV2, 420, LABEL),
  )
  t.match(decodeObj.message, 'holds a JSON value, not a string')
  const bad = providerError(() =>
    renderObject(obj('objectName: a, secretPath: s, secretKey: password, encoding: base64'), KV2, 420, LABEL),
  )
  t.equal(bad.code, 'DECODE_FAILED')
  t.equal(bad.message, `${LABEL}, secretKey "password": the value is not valid standard (padded) base64`)
})

t.test('renderObject: whole response when secretKey is empty', async (t) => {
  const files = renderObject(obj('objectName: all.json, secretPath: s'), KV2, 420, LABEL)
  t.equal(
    files[0]!.contents.toString(),
    '{"data":{"data":{"cert_b64":"aGVsbG8=","cert_hex":"6869","conf":{"a":2,"b":1},"list":["a"],"password":"pw"},"metadata":{"version":1}},"lease_duration":0,"lease_id":"","renewable":false,"request_id":""}',
  )
  t.equal(
    providerError(() => renderObject(obj('objectName: a, secretPath: s'), undefined, 420, LABEL)).code,
    'VAULT_BAD_RESPONSE',
  )
})

t.test('versionObject', async (t) => {
  const o = obj('objectName: a, secretPath: s, secretKey: password')
  const files = renderObject(o, KV2, 420, LABEL)
  const r = versionObject(o, files, KEY)
  t.equal(r.id, 'a')
  t.equal(r.files, files)
  t.equal(r.version, objectVersion(KEY, o.config, files))
  // A new request_id does not change the version of a whole-response object.
  const w = obj('objectName: w, secretPath: s')
  const v1 = versionObject(w, renderObject(w, KV2, 420, LABEL), KEY).version
  const v2 = versionObject(w, renderObject(w, { ...KV2, request_id: 'r-2' }, 420, LABEL), KEY).version
  t.equal(v1, v2)
  // The mode is not part of the version (a mode change alone does not rewrite files).
  t.equal(versionObject(o, renderObject(o, KV2, 0o600, LABEL), KEY).version, r.version)
})

function rendered(id: string, ...paths: string[]): RenderedObject {
  return { id, version: 'v', files: paths.map((path) => ({ path, mode: 420, contents: Buffer.from('x') })) }
}

t.test('checkVolume accepts a good volume', async (t) => {
  t.doesNotThrow(() => checkVolume([]))
  t.doesNotThrow(() => checkVolume([rendered('a', 'a'), rendered('b', 'dir/b'), rendered('c', 'dir/c', 'dir/sub/d')]))
})

t.test('checkVolume: a bad path names the object', async (t) => {
  const cases: Array<[string, string]> = [
    ['../escape', 'contains a ".." element (path traversal)'],
    ['/etc/shadow', 'is absolute; it must be relative to the volume'],
    ['..data', 'starts with "..", which the driver reserves for its own files'],
    ['a//b', 'contains an empty element ("//")'],
    ['', 'is empty'],
  ]
  for (const [path, problem] of cases) {
    const err = providerError(() => checkVolume([rendered('fine', 'fine'), rendered('culprit', path)]))
    t.equal(err.code, 'BAD_FILE_PATH', path)
    t.equal(grpcStatusOf(err.code), GrpcStatus.INVALID_ARGUMENT)
    t.equal(err.message, `object "culprit": file path ${JSON.stringify(path)} ${problem}`, path)
    t.same(err.fields, { object: { index: 1, name: 'culprit' }, file: path }, 'the fields say which')
  }
})

t.test('checkVolume: an optional object skipped keeps the others at their places in the class', async (t) => {
  const err = providerError(() => checkVolume([undefined, rendered('fine', 'fine'), rendered('culprit', '../x')]))
  t.same(err.fields, { object: { index: 2, name: 'culprit' }, file: '../x' }, 'the third object of the class')
  t.doesNotThrow(() => checkVolume([undefined, rendered('a', 'a'), undefined]))
})

t.test('checkVolume: conflicts between objects', async (t) => {
  const dup = providerError(() => checkVolume([rendered('one', 'shared'), rendered('two', 'other', 'shared')]))
  t.equal(dup.code, 'BAD_FILE_PATH')
  t.equal(dup.message, 'file "shared" would be written by more than one object')
  t.same(dup.fields, { file: 'shared' })

  const sameObject = providerError(() => checkVolume([rendered('one', 'f', 'f')]))
  t.equal(sameObject.code, 'BAD_FILE_PATH')

  const nested = providerError(() =>
    checkVolume([rendered('dir-owner', 'conf'), rendered('file-owner', 'conf/app.json')]),
  )
  t.equal(nested.code, 'BAD_FILE_PATH')
  t.equal(
    nested.message,
    'object "file-owner" writes "conf/app.json" inside "conf", which object "dir-owner" writes as a file',
  )
  const reversed = providerError(() =>
    checkVolume([rendered('file-owner', 'conf/app.json'), rendered('dir-owner', 'conf')]),
  )
  t.equal(reversed.message, nested.message)
  t.same(nested.fields, { file: 'conf/app.json' }, 'the file standing where a directory is needed')
})

// Output fields (docs/outputs.md).

const NESTED = {
  request_id: 'r-2',
  data: {
    data: {
      db: { host: 'h', port: 5432, 'a.b': 'dotted' },
      list: ['x', { y: 'z' }],
      b64: { v: 'aGk=' },
      'bad/../key': 'v',
    },
    metadata: { version: 2 },
  },
}

t.test('secretKeyPath: strings raw, other values compact JSON, encodings apply', async (t) => {
  const text = (fields: string): string => renderObject(obj(fields), NESTED, 420, LABEL)[0]!.contents.toString()
  t.equal(text('objectName: a, secretPath: s, secretKeyPath: db.host'), 'h')
  t.equal(text('objectName: a, secretPath: s, secretKeyPath: db.port'), '5432')
  t.equal(text('objectName: a, secretPath: s, secretKeyPath: \'db["a.b"]\''), 'dotted')
  t.equal(text('objectName: a, secretPath: s, secretKeyPath: "list[1]"'), '{"y":"z"}')
  t.equal(text('objectName: a, secretPath: s, secretKeyPath: b64.v, encoding: base64'), 'hi')
  const e = providerError(() =>
    renderObject(obj('objectName: a, secretPath: s, secretKeyPath: db, encoding: hex'), NESTED, 420, LABEL),
  )
  t.match(e.message, /secretKeyPath "db" holds a JSON value, not a string, so encoding "hex" cannot apply/)
})

t.test('format json with encoding decodes every string first', async (t) => {
  const files = renderObject(
    obj('objectName: a, secretPath: s, secretKey: b64, format: json, encoding: base64'),
    NESTED,
    420,
    LABEL,
  )
  t.equal(files[0]!.contents.toString(), '{\n  "v": "hi"\n}\n')
  const e = providerError(() =>
    renderObject(
      obj('objectName: a, secretPath: s, secretKey: db, format: yaml, encoding: base64'),
      NESTED,
      420,
      LABEL,
    ),
  )
  t.match(
    e.message,
    /object "x" \(GET secret\/data\/app\), the value at host: the value is not valid standard \(padded\) base64/,
  )
})

t.test('format files: one file per key under objectName, each path checked', async (t) => {
  const files = renderObject(
    obj('objectName: out, secretPath: s, secretKey: db, format: files, filePermission: 0400'),
    NESTED,
    420,
    LABEL,
  )
  t.strictSame(
    files.map((f) => [f.path, f.mode, f.contents.toString()]),
    [
      ['out/a.b', 0o400, 'dotted'],
      ['out/host', 0o400, 'h'],
      ['out/port', 0o400, '5432'],
    ],
  )
  const e = providerError(() => renderObject(obj('objectName: out, secretPath: s, format: files'), NESTED, 420, LABEL))
  t.equal(e.code, 'BAD_FILE_PATH')
  t.match(
    e.message,
    /format "files": key "bad\/\.\.\/key" cannot be a file name \(the path "out\/bad\/\.\.\/key" contains a "\.\." element/,
  )
  t.same(e.fields, { file: 'out/bad/../key' })
})

t.test('renderObjects: templates read other objects; without a template nothing changes', async (t) => {
  const objects = parseObjects(
    [
      '- {objectName: host, secretPath: secret/data/app, secretKeyPath: db.host}',
      '- {objectName: whole.json, secretPath: secret/data/app}',
      '- {objectName: url, template: \'pg://{{@host}}:{{@["whole.json"].db.port}}/{{@["whole.json"].list[1].y}}\'}',
      '- {objectName: own, secretPath: secret/data/app, secretKey: db, template: \'{{host}}={{["a.b"]}}\'}',
    ].join('\n'),
  )
  const labels = objects.map((o) => `object "${o.objectName}"`)
  const files = await renderObjects(objects, [NESTED, NESTED, undefined, NESTED], 420, labels)
  t.equal(files[2]![0]!.contents.toString(), 'pg://h:5432/z')
  t.equal(files[3]![0]!.contents.toString(), 'h=dotted')
  t.ok(
    files[1]![0]!.contents.equals(renderObject(objects[1]!, NESTED, 420, labels[1]!)[0]!.contents),
    'whole response as before',
  )
})

t.test('renderObjects charges the Mount budget as it renders: the template that crosses it is named', async (t) => {
  const { NodeBudget } = await import('../../../src/mount/budget.js')
  // 50 templates of 100 KiB each, every one far below the per-template limit; the budget holds 1 MiB.
  const big = { data: { blob: 'x'.repeat(100 * 1024) } }
  const yaml = [
    '- {objectName: src, secretPath: secret/data/big, secretKey: blob}',
    ...Array.from({ length: 50 }, (_, i) => `- {objectName: t${i}, template: '{{@src}}'}`),
  ].join('\n')
  const objects = parseObjects(yaml)
  const labels = objects.map((o) => `object "${o.objectName}"`)
  const bodies = objects.map((o) => (o.secretPath === '' ? undefined : big))
  const node = new NodeBudget({ mountBytes: 1024 * 1024, nodeBytes: 8 * 1024 * 1024 })
  const budget = node.open('ns')
  const rendered: string[] = []
  const tracking = {
    charge(bytes: number, what: string) {
      if (!rendered.includes(what)) rendered.push(what)
      budget.charge(bytes, what)
    },
  }
  const err = await renderObjects(objects, bodies, 420, labels, tracking).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(err instanceof ProviderError)
  const pe = err as ProviderError
  t.equal(pe.code, 'MOUNT_BUDGET_EXCEEDED')
  // src writes 100 KiB, then t0..t8 100 KiB each: t9 is the one that crosses 1 MiB.
  t.match(
    pe.message,
    /^object "t9" takes the Mount past its budget of 1\.0 MiB \(1048576 bytes, provider flag -max-mount-bytes\)/,
  )
  t.equal(rendered.at(-1), 'object "t9"', 'nothing after it was rendered')
  t.ok(budget.bytesCharged <= 1024 * 1024)

  // The same Mount with room for everything renders it all.
  const roomy = new NodeBudget({ mountBytes: 16 * 1024 * 1024, nodeBytes: 16 * 1024 * 1024 }).open('ns')
  const files = await renderObjects(objects, bodies, 420, labels, roomy)
  t.equal(files.length, 51)
  t.equal(roomy.bytesCharged, 51 * 100 * 1024)
})

t.test('renderObjects lets the event loop run between objects', async (t) => {
  const objects = parseObjects(
    Array.from({ length: 20 }, (_, i) => `- {objectName: o${i}, secretPath: secret/data/app}`).join('\n'),
  )
  const immediate = new Promise<void>((resolve) => setImmediate(resolve))
  let immediateRan = false
  void immediate.then(() => (immediateRan = true))
  const rendering = renderObjects(
    objects,
    objects.map(() => NESTED),
    420,
    objects.map((o) => o.objectName),
  )
  await rendering
  t.ok(immediateRan, 'a callback queued before rendering ran before it finished')
})

/** Renders `yaml`'s objects and says whether a callback queued with setImmediate just before ran before the render ended. */
async function turnTaken(yaml: string, bodyOf: (o: SecretObject) => unknown): Promise<boolean> {
  const objects = parseObjects(yaml)
  let immediateRan = false
  setImmediate(() => (immediateRan = true))
  await renderObjects(
    objects,
    objects.map((o) => (o.secretPath === '' ? undefined : bodyOf(o))),
    420,
    objects.map((o) => o.objectName),
  )
  return immediateRan
}

t.test(
  'renderObjects: after a template, or some tens of KiB of output, the next object waits for a turn',
  async (t) => {
    const template = [
      '- {objectName: src, secretPath: secret/data/app, secretKeyPath: db.host}',
      "- {objectName: url, template: 'pg://{{@src}}'}",
    ]
    t.ok(
      await turnTaken([...template, '- {objectName: after, secretPath: secret/data/app}'].join('\n'), () => NESTED),
      'the object after a template waits for a turn',
    )

    const big = { data: { blob: 'x'.repeat(RENDER_BYTES_PER_TURN) } }
    const bigYaml = (n: number): string =>
      Array.from({ length: n }, (_, i) => `- {objectName: b${i}, secretPath: secret/data/big, secretKey: blob}`).join(
        '\n',
      )
    t.ok(await turnTaken(bigYaml(2), () => big), `the object after ${RENDER_BYTES_PER_TURN} bytes waits for a turn`)
  },
)
