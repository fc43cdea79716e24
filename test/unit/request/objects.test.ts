import { readFileSync } from 'node:fs'
import t from 'tap'
import { printable } from '../../../src/util/printable.js'
import { grpcStatusOf } from '../../../src/server/grpc-status.js'
import { DEFAULT_MAX_OBJECTS_BYTES } from '../../../src/config/config.js'
import { parse as parseYaml } from 'yaml'
import { status as GrpcStatus } from '@grpc/grpc-js'
import { ProviderError } from '../../../src/errors.js'
import { canonicalJson } from '../../../src/util/canonical-json.js'
import { MAX_ISSUES } from '../../../src/request/issues.js'
import {
  collectObjects,
  MAX_OBJECTS,
  MAX_SECRET_ARGS_DEPTH,
  normaliseSecretPath,
  parseObjects,
} from '../../../src/request/objects.js'
import type { SecretObject } from '../../../src/request/types.js'
import { thrown } from '../../support/thrown.js'

function providerError(fn: () => unknown): ProviderError {
  return thrown(fn, ProviderError)
}

/** One object from YAML lines (indented under `- `). */
function one(...fields: string[]): SecretObject {
  const objects = parseObjects(yamlObject(...fields))
  if (objects.length !== 1) throw new Error('expected one object')
  return objects[0]!
}

function yamlObject(...fields: string[]): string {
  return fields.map((f, i) => (i === 0 ? `- ${f}` : `  ${f}`)).join('\n') + '\n'
}

function objectError(...fields: string[]): ProviderError {
  return providerError(() => parseObjects(yamlObject(...fields)))
}

t.test('a typical KV v2 object', async (t) => {
  const o = one('objectName: db-password', 'secretPath: secret/data/db', 'secretKey: password')
  t.strictSame(o, {
    objectName: 'db-password',
    secretPath: 'secret/data/db',
    query: [],
    method: 'GET',
    secretArgs: undefined,
    secretKey: 'password',
    encoding: 'utf-8',
    filePermission: undefined,
    config: { objectName: 'db-password', secretKey: 'password', secretPath: 'secret/data/db' },
    configJson: '{"objectName":"db-password","secretKey":"password","secretPath":"secret/data/db"}',
  })
})

t.test('several objects keep their order', async (t) => {
  const objects = parseObjects(
    [
      '- objectName: b',
      '  secretPath: secret/data/b',
      '- objectName: nested/a',
      '  secretPath: secret/data/a',
      '- {objectName: c, secretPath: "/v1/kv/c"}',
    ].join('\n'),
  )
  t.strictSame(
    objects.map((o) => [o.objectName, o.secretPath]),
    [
      ['b', 'secret/data/b'],
      ['nested/a', 'secret/data/a'],
      ['c', 'kv/c'],
    ],
  )
})

t.test('secretPath normalisation', async (t) => {
  for (const raw of [
    '/v1/secret/data/app',
    'v1/secret/data/app',
    '/secret/data/app',
    'secret/data/app',
    '//v1//secret/data/app',
  ]) {
    t.strictSame(normaliseSecretPath(raw), { path: 'secret/data/app', query: [] }, raw)
    t.equal(one('objectName: a', `secretPath: ${raw}`).secretPath, 'secret/data/app', raw)
  }
  // Only a whole leading "v1" segment is the API prefix.
  t.equal(normaliseSecretPath('v1secret/x').path, 'v1secret/x')
  t.equal(normaliseSecretPath('kv/v1/x').path, 'kv/v1/x')
  t.equal(normaliseSecretPath('/v1/v1/x').path, 'v1/x')
})

t.test('secretPath query', async (t) => {
  const o = one('objectName: a', 'secretPath: secret/data/app?version=3')
  t.equal(o.secretPath, 'secret/data/app')
  t.strictSame(o.query, [['version', '3']])
  t.strictSame(normaliseSecretPath('/v1/secret/data/app?version=3'), {
    path: 'secret/data/app',
    query: [['version', '3']],
  })
  t.strictSame(normaliseSecretPath('pki/issue/web?b=2&a=1&b=3').query, [
    ['b', '2'],
    ['a', '1'],
    ['b', '3'],
  ])
  t.strictSame(normaliseSecretPath('x?a=%2F+b').query, [['a', '/ b']])
  t.strictSame(normaliseSecretPath('x?').query, [])
  t.strictSame(normaliseSecretPath('x?flag').query, [['flag', '']])
  // The config keeps the path as written.
  t.equal(o.config.secretPath, 'secret/data/app?version=3')
})

t.test('secretPath errors name the object', async (t) => {
  const cases: Array<[string, string]> = [
    ['secretPath: /v1/', 'names no Vault path'],
    ['secretPath: v1/', 'names no Vault path'],
    ['secretPath: "/"', 'names no Vault path'],
    ['secretPath: "?version=1"', 'names no Vault path'],
    ['secretPath: secret/../sys/raw/x', 'contains a "." or ".." segment'],
    ['secretPath: secret/./data/x', 'contains a "." or ".." segment'],
    ['secretPath: ../x', 'contains a "." or ".." segment'],
    ['secretPath: "secret/\\tdata"', 'contains a control character'],
    ['secretPath: "secret/\\ndata"', 'contains a control character'],
  ]
  for (const [field, message] of cases) {
    const err = objectError('objectName: app-secret', field)
    t.equal(err.code, 'BAD_OBJECT', field)
    t.equal(grpcStatusOf(err.code), GrpcStatus.INVALID_ARGUMENT)
    t.match(err.message, /^object "app-secret": secretPath /, field)
    t.match(err.message, message, field)
  }
  for (const field of ['secretPath: ""', 'secretPath: [a, b]', 'secretPath: {a: b}', 'secretPath: ~']) {
    const err = objectError('objectName: app-secret', field)
    t.equal(err.code, 'BAD_OBJECT', field)
    t.equal(err.message, 'object "app-secret": secretPath is missing or not a string', field)
  }
  const missing = objectError('objectName: app-secret', 'secretKey: k')
  t.equal(missing.message, 'object "app-secret": secretPath is missing or not a string')
})

t.test('method', async (t) => {
  t.equal(one('objectName: a', 'secretPath: x').method, 'GET')
  t.equal(one('objectName: a', 'secretPath: x', 'method: ""').method, 'GET')
  t.equal(one('objectName: a', 'secretPath: x', 'method: ~').method, 'GET')
  for (const [input, expected] of [
    ['GET', 'GET'],
    ['get', 'GET'],
    ['PUT', 'PUT'],
    ['put', 'PUT'],
    ['Post', 'POST'],
    ['POST', 'POST'],
  ] as const) {
    t.equal(one('objectName: a', 'secretPath: x', `method: ${input}`).method, expected, input)
  }
  for (const bad of ['DELETE', 'delete', 'LIST', 'PATCH', '"GET "', '"G E T"', '1', '[GET]']) {
    const err = objectError('objectName: pki-cert', 'secretPath: pki/issue/web', `method: ${bad}`)
    t.equal(err.code, 'BAD_OBJECT', bad)
    t.match(err.message, /^object "pki-cert": method must be one of GET, PUT, POST, got /, bad)
  }
  t.match(objectError('objectName: a', 'secretPath: x', 'method: DELETE').message, 'got "DELETE"')
})

t.test('secretArgs', async (t) => {
  const o = one(
    'objectName: cert',
    'secretPath: pki/issue/web',
    'method: PUT',
    'secretArgs:',
    '    common_name: web.example.com',
    '    ttl: 24h',
    '    exclude_cn_from_sans: true',
    '    max: 5',
    '    ratio: 0.5',
    '    nothing: ~',
    '    alt_names: [a.example.com, b.example.com]',
    '    nested:',
    '      deeper: {k: v, list: [1, {x: z}]}',
  )
  t.equal(o.method, 'PUT')
  t.strictSame(o.secretArgs, {
    common_name: 'web.example.com',
    ttl: '24h',
    exclude_cn_from_sans: true,
    max: 5,
    ratio: 0.5,
    nothing: null,
    alt_names: ['a.example.com', 'b.example.com'],
    nested: { deeper: { k: 'v', list: [1, { x: 'z' }] } },
  })
  t.strictSame(o.config.secretArgs, o.secretArgs)
  t.strictSame(one('objectName: a', 'secretPath: x', 'secretArgs: {}').secretArgs, {})
  t.equal(one('objectName: a', 'secretPath: x', 'secretArgs: ~').secretArgs, undefined)

  for (const bad of ['secretArgs: [a, b]', 'secretArgs: text', 'secretArgs: 5', 'secretArgs: {a: .inf}']) {
    const err = objectError('objectName: cert', 'secretPath: pki/issue/web', bad)
    t.equal(err.code, 'BAD_OBJECT', bad)
    t.equal(err.message, 'object "cert": secretArgs must be a map of request parameters (plain YAML values)', bad)
  }
  const deep = `{a: ${'['.repeat(MAX_SECRET_ARGS_DEPTH + 2)}1${']'.repeat(MAX_SECRET_ARGS_DEPTH + 2)}}`
  t.equal(objectError('objectName: cert', 'secretPath: x', `secretArgs: ${deep}`).code, 'BAD_OBJECT')
  const shallow = `{a: ${'['.repeat(MAX_SECRET_ARGS_DEPTH - 1)}1${']'.repeat(MAX_SECRET_ARGS_DEPTH - 1)}}`
  t.ok(one('objectName: cert', 'secretPath: x', `secretArgs: ${shallow}`).secretArgs)
})

t.test('filePermission', async (t) => {
  const cases: Array<[string, number]> = [
    ['0640', 0o640], // YAML 1.1 octal, as yaml.v2 reads it
    ['0644', 420],
    ['0400', 256],
    ['420', 420], // a plain decimal
    ['0', 0], // mode 0 can be requested
    ['00', 0],
    ['0777', 0o777],
    ['511', 511],
    ['0o600', 0o600],
    ['"0640"', 0o640],
    ["'0600'", 0o600],
    ['"420"', 420],
  ]
  for (const [input, mode] of cases) {
    t.equal(one('objectName: a', 'secretPath: x', `filePermission: ${input}`).filePermission, mode, input)
  }
  t.equal(one('objectName: a', 'secretPath: x').filePermission, undefined)
  t.equal(one('objectName: a', 'secretPath: x', 'filePermission: ~').filePermission, undefined)
  // The config keeps the number YAML produced, so 0640 and 416 are the same config.
  t.equal(one('objectName: a', 'secretPath: x', 'filePermission: 0640').config.filePermission, 416)

  for (const bad of [
    '01000',
    '512',
    '0o1000',
    '-1',
    '6.4',
    'true',
    'rw-r-----',
    '"0x1A4"',
    '"0888"',
    '[0640]',
    '"-0640"',
  ]) {
    const err = objectError('objectName: app.conf', 'secretPath: x', `filePermission: ${bad}`)
    t.equal(err.code, 'BAD_OBJECT', bad)
    t.match(
      err.message,
      /^object "app\.conf": filePermission must be a file mode from 0 to 0777 \(an octal literal such as 0640\), got /,
      bad,
    )
  }
  t.match(objectError('objectName: a', 'secretPath: x', 'filePermission: 01000').message, 'got "512"')
})

t.test('encoding', async (t) => {
  t.equal(one('objectName: a', 'secretPath: x').encoding, 'utf-8')
  t.equal(one('objectName: a', 'secretPath: x', 'encoding: ""').encoding, 'utf-8')
  for (const [input, expected] of [
    ['utf-8', 'utf-8'],
    ['UTF-8', 'utf-8'],
    ['base64', 'base64'],
    ['BASE64', 'base64'],
    ['hex', 'hex'],
    ['Hex', 'hex'],
  ] as const) {
    t.equal(one('objectName: a', 'secretPath: x', 'secretKey: k', `encoding: ${input}`).encoding, expected, input)
  }
  for (const bad of ['utf8', 'latin1', 'base64url', 'binary', '64', '[hex]']) {
    const err = objectError('objectName: tls.key', 'secretPath: x', 'secretKey: k', `encoding: ${bad}`)
    t.equal(err.code, 'BAD_OBJECT', bad)
    t.match(err.message, /^object "tls\.key": encoding must be one of utf-8, base64, hex, got /, bad)
  }
})

t.test('secretKey', async (t) => {
  t.equal(one('objectName: a', 'secretPath: x').secretKey, undefined)
  t.equal(one('objectName: a', 'secretPath: x', 'secretKey: ""').secretKey, undefined)
  t.equal(one('objectName: a', 'secretPath: x', 'secretKey: ~').secretKey, undefined)
  t.equal(one('objectName: a', 'secretPath: x', 'secretKey: tls.crt').secretKey, 'tls.crt')
  t.equal(one('objectName: a', 'secretPath: x', 'secretKey: 2024').secretKey, '2024')
  for (const bad of ['[a]', '{a: b}']) {
    const err = objectError('objectName: a', 'secretPath: x', `secretKey: ${bad}`)
    t.equal(err.code, 'BAD_OBJECT')
    t.equal(err.message, 'object "a": secretKey must be a string')
  }
})

// BUG (src/request/objects.ts scalarString, used for objectName/secretKey/...):
// Go's yaml (v2 and v3) decodes a plain scalar into a `string` field as its
// source text, so existing SecretProviderClasses get `secretKey: 0123` ->
// "0123" and `objectName: on` -> "on". Here YAML 1.1 typing runs first and
// the number/boolean is re-stringified: "83", "true", "1.1".
t.test('scalar string fields keep their YAML source text (Go yaml compatibility)', async (t) => {
  t.equal(one('objectName: a', 'secretPath: x', 'secretKey: 0123').secretKey, '0123', 'secretKey 0123')
  t.equal(one('objectName: a', 'secretPath: x', 'secretKey: 1.10').secretKey, '1.10', 'secretKey 1.10')
  t.equal(one('objectName: on', 'secretPath: x').objectName, 'on', 'objectName on')
  t.equal(one('objectName: yes', 'secretPath: x').objectName, 'yes', 'objectName yes')
  t.strictSame(
    Object.keys(one('objectName: a', 'secretPath: x', 'secretArgs: {n: 1}').secretArgs ?? {}),
    ['n'],
    'secretArgs key n',
  )
})

t.test('unknown fields are refused, naming the field', async (t) => {
  for (const field of ['secretkey', 'objectAlias', 'fileName', 'path', 'mode']) {
    const err = objectError('objectName: db-password', 'secretPath: secret/data/db', `${field}: x`)
    t.equal(err.code, 'BAD_OBJECT', field)
    t.match(err.message, `object "db-password": unknown field "${field}"`, field)
    t.match(
      err.message,
      'known fields: objectName, secretPath, secretKey, method, secretArgs, filePermission, encoding',
    )
  }
})

t.test('legacy objectVersion is accepted and ignored', async (t) => {
  const plain = one('objectName: a', 'secretPath: secret/data/a', 'secretKey: k')
  const legacy = one('objectName: a', 'secretPath: secret/data/a', 'secretKey: k', 'objectVersion: "3"')
  t.strictSame(legacy, plain)
  t.notOk('objectVersion' in legacy.config)
})

t.test('objectName required and must be a usable path', async (t) => {
  for (const field of [
    'secretPath: x',
    'objectName: ""\n  secretPath: x',
    'objectName: ~\n  secretPath: x',
    'objectName: [a]\n  secretPath: x',
  ]) {
    const err = providerError(() => parseObjects(`- {objectName: ok, secretPath: x}\n- ${field}\n`))
    t.equal(err.code, 'BAD_OBJECT', field)
    t.equal(err.message, 'objects[1]: objectName is missing or not a string', field)
  }
  const cases: Array<[string, string]> = [
    ['../x', 'contains a ".." element (path traversal)'],
    ['a/../../x', 'contains a ".." element (path traversal)'],
    ['/etc/x', 'is absolute'],
    ['..data', 'starts with ".."'],
    ['..2024_01_01', 'starts with ".."'],
    ['a//b', 'contains an empty element'],
    ['./a', 'contains a "." element'],
    ['a/.', 'contains a "." element'],
    ['.', 'contains a "." element'],
    ['a/', 'ends with "/"'],
    ['a\nb', 'contains a control character'],
    ['a\tb', 'contains a control character'],
    ['a\u007fb', 'contains a control character'],
    ['a\u0085b', 'contains a control character'],
    ['a\u009bb', 'contains a control character'],
    ['evil\u202etxt.exe', 'contains a bidirectional-formatting character'],
    ['a\u2066b', 'contains a bidirectional-formatting character'],
    ['x'.repeat(256), 'has an element longer than 255 bytes'],
  ]
  for (const [name, problem] of cases) {
    const err = providerError(() => parseObjects(`- objectName: ${JSON.stringify(name)}\n  secretPath: x\n`))
    t.equal(err.code, 'BAD_OBJECT', JSON.stringify(name))
    // The name as errors quote it: JSON, with what JSON leaves raw (DEL, C1, bidirectional marks) escaped too.
    t.match(err.message, `object ${printable(JSON.stringify(name.slice(0, 120))).slice(0, -1)}`, JSON.stringify(name))
    t.match(err.message, `: objectName ${problem}`, JSON.stringify(name))
  }
  // Allowed: nested paths, dots inside names, a name that is only dots after the first element.
  for (const name of ['nested/bar', 'tls.crt', '.hidden', 'a/..b', 'a/...', 'dir/sub/file.json', 'x'.repeat(255)]) {
    t.equal(one(`objectName: ${JSON.stringify(name)}`, 'secretPath: x').objectName, name, name)
  }
})

t.test('entries that are not maps', async (t) => {
  for (const entry of ['just-a-string', '[a, b]', '42', '~']) {
    const err = providerError(() => parseObjects(`- {objectName: ok, secretPath: x}\n- ${entry}\n`))
    t.equal(err.code, 'BAD_OBJECT', entry)
    t.equal(err.message, 'objects[1]: must be a map with objectName and secretPath', entry)
  }
})

t.test('duplicate objectNames are listed', async (t) => {
  const err = providerError(() =>
    parseObjects(
      ['a', 'b', 'a', 'c', 'b', 'a'].map((n) => `- {objectName: ${n}, secretPath: secret/data/${n}}`).join('\n'),
    ),
  )
  t.equal(err.code, 'BAD_OBJECT')
  t.equal(err.message, 'objectName must be unique; duplicated: "a", "b"')
})

t.test('a file cannot also be a directory', async (t) => {
  for (const yaml of [
    '- {objectName: a, secretPath: x}\n- {objectName: a/b, secretPath: y}',
    '- {objectName: a/b, secretPath: y}\n- {objectName: a, secretPath: x}',
  ]) {
    const err = providerError(() => parseObjects(yaml))
    t.equal(err.code, 'BAD_OBJECT')
    t.equal(err.message, 'object "a/b" needs "a" to be a directory, but object "a" is a file')
  }
  const deep = providerError(() =>
    parseObjects('- {objectName: conf, secretPath: x}\n- {objectName: conf/d/e.json, secretPath: y}'),
  )
  t.match(deep.message, 'object "conf/d/e.json" needs "conf" to be a directory')
  // Siblings and prefixes that are not directories are fine.
  t.equal(
    parseObjects(
      '- {objectName: a/b, secretPath: x}\n- {objectName: a/c, secretPath: y}\n- {objectName: ab, secretPath: z}',
    ).length,
    3,
  )
})

t.test('the objects parameter as a whole', async (t) => {
  const cases: Array<[string, string]> = [
    ['[]', 'parameter "objects" is an empty list: list at least one object'],
    ['', 'parameter "objects" is empty: list at least one object'],
    ['# only a comment\n', 'parameter "objects" is empty: list at least one object'],
    ['~', 'parameter "objects" is empty: list at least one object'],
    ['objectName: a\nsecretPath: x\n', 'parameter "objects" must be a YAML list of objects'],
    ['just text', 'parameter "objects" must be a YAML list of objects'],
    ['42', 'parameter "objects" must be a YAML list of objects'],
  ]
  for (const [yaml, message] of cases) {
    const err = providerError(() => parseObjects(yaml))
    t.equal(err.code, 'BAD_PARAMETER', JSON.stringify(yaml))
    t.equal(grpcStatusOf(err.code), GrpcStatus.INVALID_ARGUMENT)
    t.equal(err.message, message, JSON.stringify(yaml))
  }
})

t.test('YAML syntax errors do not echo the YAML', async (t) => {
  const secretish = 'hunter2-not-a-real-password'
  for (const yaml of [
    `- objectName: a\n  secretPath: "secret/data/${secretish}\n`,
    `- objectName: ${secretish}\n secretPath: x\n  bad: [\n`,
    `- objectName: a\n  secretArgs: {password: ${secretish}\n`,
    `- objectName: a\n  objectName: ${secretish}\n  secretPath: x\n`,
    `- {objectName: a, secretPath: x}\n---\n- {objectName: ${secretish}, secretPath: x}\n`,
    `\t- objectName: ${secretish}\n`,
  ]) {
    const err = providerError(() => parseObjects(yaml))
    t.equal(err.code, 'BAD_PARAMETER', yaml)
    t.match(err.message, /^parameter "objects" is not valid YAML( at line \d+, column \d+)? \([A-Z_]+\)$/, yaml)
    t.notMatch(err.message, secretish, yaml)
    t.notMatch(err.message, 'secretArgs', yaml)
  }
  // BUG (src/request/objects.ts loadYaml): parseDocument runs with
  // prettyErrors: false, so the yaml library never fills `linePos` and the
  // "at line L, column C" part of the message is never produced.
  const located = providerError(() => parseObjects('- objectName: a\n  secretPath: x\n  secretKey: [unclosed\n'))
  t.match(located.message, / at line \d+, column \d+ /, 'the message gives the position')
})

t.test('a YAML alias bomb is refused quickly', async (t) => {
  const levels = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']
  const lines = ['- &a {objectName: a, secretPath: x, secretArgs: {v: [lol, lol, lol, lol, lol, lol, lol, lol, lol]}}']
  for (let i = 1; i < levels.length; i++) {
    const prev = `*${levels[i - 1]}`
    lines.push(
      `- &${levels[i]} {objectName: ${levels[i]}, secretPath: x, secretArgs: {v: [${Array(9).fill(prev).join(', ')}]}}`,
    )
  }
  const started = Date.now()
  const err = providerError(() => parseObjects(lines.join('\n')))
  const elapsed = Date.now() - started
  t.equal(err.code, 'BAD_PARAMETER')
  t.match(err.message, /^parameter "objects" uses more than \d+ YAML aliases$/)
  t.ok(elapsed < 2000, `refused in ${elapsed} ms`)

  // A classic billion-laughs document (a map, not a list) is refused as well.
  const map = ['x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]']
  for (let i = 1; i < 10; i++)
    map.push(
      `x${i}: &x${i} [${Array(10)
        .fill(`*x${i - 1}`)
        .join(', ')}]`,
    )
  const started2 = Date.now()
  t.equal(providerError(() => parseObjects(map.join('\n'))).code, 'BAD_PARAMETER')
  t.ok(Date.now() - started2 < 2000)

  // A few aliases are fine.
  const few = parseObjects(
    '- &base {objectName: a, secretPath: secret/data/a}\n- {objectName: b, secretPath: x, secretArgs: {copy: *base}}',
  )
  t.strictSame(few[1]!.secretArgs, { copy: { objectName: 'a', secretPath: 'secret/data/a' } })
})

t.test('object count and size limits', async (t) => {
  const list = (n: number): string =>
    Array.from({ length: n }, (_, i) => `- {objectName: o${i}, secretPath: s}`).join('\n')
  t.equal(parseObjects(list(MAX_OBJECTS)).length, MAX_OBJECTS)
  const tooMany = providerError(() => parseObjects(list(MAX_OBJECTS + 1)))
  t.equal(tooMany.code, 'BAD_PARAMETER')
  t.equal(tooMany.message, `parameter "objects" lists ${MAX_OBJECTS + 1} objects; at most ${MAX_OBJECTS} are allowed`)

  const huge = `- objectName: a\n  secretPath: x\n  secretKey: ${'k'.repeat(DEFAULT_MAX_OBJECTS_BYTES)}\n`
  const tooBig = providerError(() => parseObjects(huge))
  t.equal(tooBig.code, 'BAD_PARAMETER')
  t.equal(tooBig.message, 'parameter "objects" is larger than 262144 bytes (-max-objects-size)')
  // The flag's value is the limit, counted in bytes (UTF-8), and shown.
  const text = `- {objectName: a, secretPath: x, secretKey: ${'é'.repeat(600)}}`
  t.equal(parseObjects(text, { maxBytes: 2048 }).length, 1)
  t.equal(
    providerError(() => parseObjects(text, { maxBytes: 1024 })).message,
    'parameter "objects" is larger than 1024 bytes (-max-objects-size)',
  )
})

t.test('config is canonical: key order does not matter', async (t) => {
  const a = one(
    'objectName: cert',
    'secretPath: pki/issue/web',
    'method: PUT',
    'secretArgs: {common_name: web.example.com, ttl: 1h, alt: {z: 1, a: 2}}',
    'filePermission: 0600',
    'encoding: utf-8',
    'secretKey: certificate',
  )
  const b = one(
    'secretKey: certificate',
    'filePermission: 384',
    'encoding: utf-8',
    'secretArgs: {ttl: 1h, alt: {a: 2, z: 1}, common_name: web.example.com}',
    'method: PUT',
    'objectVersion: ignored',
    'secretPath: pki/issue/web',
    'objectName: cert',
  )
  t.equal(canonicalJson(a.config), canonicalJson(b.config))
  t.strictSame(Object.keys(a.config), [
    'encoding',
    'filePermission',
    'method',
    'objectName',
    'secretArgs',
    'secretKey',
    'secretPath',
  ])
  t.strictSame(Object.keys(b.config), Object.keys(a.config))
  t.equal(
    canonicalJson(a.config),
    '{"encoding":"utf-8","filePermission":384,"method":"PUT","objectName":"cert","secretArgs":{"alt":{"a":2,"z":1},"common_name":"web.example.com","ttl":"1h"},"secretKey":"certificate","secretPath":"pki/issue/web"}',
  )
  // A real difference changes the config.
  const c = one(
    'objectName: cert',
    'secretPath: pki/issue/web',
    'method: PUT',
    'secretArgs: {common_name: other.example.com}',
  )
  t.not(canonicalJson(c.config), canonicalJson(a.config))
  // The version's input is made once at parse time; it is the config's canonical JSON, key order and all.
  t.equal(a.configJson, canonicalJson(a.config))
  t.equal(b.configJson, a.configJson, 'the same fields in another order: the same version input')
  t.not(c.configJson, a.configJson)
})

// Output fields (docs/outputs.md).

t.test('output fields: parsed only when set; objects without them are unchanged', async (t) => {
  const plain = one('objectName: a', 'secretPath: secret/data/a', 'secretKey: k')
  for (const field of ['secretKeyPath', 'format', 'template']) t.notOk(field in plain, `no ${field} key`)
  const o = one('objectName: a', 'secretPath: secret/data/a', 'secretKeyPath: db["x.y"][0]', 'format: YAML')
  t.strictSame(o.secretKeyPath, ['db', 'x.y', 0])
  t.equal(o.format, 'yaml', 'format is case-insensitive')
  t.strictSame(
    Object.keys(o.config),
    ['format', 'objectName', 'secretKeyPath', 'secretPath'],
    'part of the version input',
  )
  for (const f of ['json', 'yaml', 'env', 'properties', 'files', 'tls']) {
    t.equal(one('objectName: a', 'secretPath: s', `format: ${f}`).format, f)
  }
  const tpl = one('objectName: t', "template: '{{a}}'", 'secretPath: s')
  t.equal(tpl.template, '{{a}}')
})

t.test('a template may omit secretPath and reference other objects', async (t) => {
  const objects = parseObjects(
    [
      '- {objectName: db.json, secretPath: secret/data/db, format: json}',
      '- {objectName: user, secretPath: secret/data/db, secretKey: user}',
      '- {objectName: url, template: \'pg://{{@user}}@{{@["db.json"].host}}\', filePermission: 0600}',
    ].join('\n'),
  )
  t.equal(objects[2]!.secretPath, '')
  t.strictSame(objects[2]!.query, [])
  t.equal(objects[2]!.filePermission, 0o600)
})

t.test('output field errors name the object and the field', async (t) => {
  const cases: Array<[string[], string]> = [
    [['format: xml'], 'object "a": format must be one of json, yaml, env, properties, files, tls, pkcs12, got "xml"'],
    [
      ['format: [json]'],
      'object "a": format must be one of json, yaml, env, properties, files, tls, pkcs12, got "json"',
    ],
    [['secretKeyPath: "a..b"'], 'object "a": secretKeyPath "a..b" expects a key name at character 3'],
    [
      ['secretKeyPath: "a[x]"'],
      'object "a": secretKeyPath "a[x]" expects an array index such as [0] or a quoted key such as ["a.b"] inside [ ] at character 3',
    ],
    [['secretKeyPath: {a: b}'], 'object "a": secretKeyPath must be a string'],
    [
      ['secretKey: a', 'secretKeyPath: a'],
      'object "a": set secretKey or secretKeyPath, not both (secretKeyPath "a" is secretKey "a")',
    ],
    [['template: "{{#a}}"'], 'object "a": template is not a valid Mustache template: Unclosed section "a" at 6'],
    [['template: "{{> p}}"'], 'object "a": template uses a partial ({{> p}}), which is not supported'],
    [['template: "{{a.}}"'], 'object "a": template name "a." expects a key name at character 3'],
    [['template: ""'], 'object "a": template is empty'],
    [['template: [a]'], 'object "a": template must be a string'],
    [['template: "x"', 'format: json'], 'object "a": set format or template, not both'],
  ]
  for (const [fields, message] of cases) {
    const err = objectError('objectName: a', 'secretPath: secret/data/a', ...fields)
    t.equal(err.code, 'BAD_OBJECT', fields.join(', '))
    t.equal(err.message, message, fields.join(', '))
    t.equal(grpcStatusOf(err.code), GrpcStatus.INVALID_ARGUMENT)
  }
  for (const field of ['method: PUT', 'secretArgs: {a: b}', 'secretKey: k', 'secretKeyPath: k', 'encoding: hex']) {
    const err = objectError('objectName: t', 'template: "x"', field)
    t.equal(
      err.message,
      `object "t": ${field.split(':')[0]} needs a secretPath (a template without secretPath reads only other objects)`,
    )
  }
  t.equal(
    objectError('objectName: t').message,
    'object "t": secretPath is missing or not a string',
    'still required without template',
  )
})

t.test('template references must name existing objects that are not templates', async (t) => {
  const err = (yaml: string[]): string => providerError(() => parseObjects(yaml.join('\n'))).message
  t.equal(
    err(['- {objectName: a, secretPath: s}', "- {objectName: t, template: '{{@b}}'}"]),
    'object "t": template references @"b", which is not an objectName of this SecretProviderClass (objects it can reference: "a")',
  )
  t.equal(
    err(["- {objectName: t1, template: 'x'}", "- {objectName: t2, template: '{{@t1}}'}"]),
    'object "t2": template references @"t1", which is itself a template; templates can reference only objects that read a secret',
  )
  t.equal(
    err(["- {objectName: t, template: '{{@t}}'}"]),
    'object "t": template references @"t", which is itself a template; templates can reference only objects that read a secret',
  )
})

t.test('directory formats: objects may sit inside them; plain files still may not be directories', async (t) => {
  const objects = parseObjects(
    [
      '- {objectName: app, secretPath: s, format: files}',
      '- {objectName: app/extra, secretPath: s, secretKey: k}',
    ].join('\n'),
  )
  t.equal(objects.length, 2)
  t.match(
    providerError(() =>
      parseObjects(
        ['- {objectName: app, secretPath: s, format: json}', '- {objectName: app/x, secretPath: s}'].join('\n'),
      ),
    ).message,
    /object "app\/x" needs "app" to be a directory, but object "app" is a file/,
  )
})

t.test('the objects of examples/outputs-secretproviderclass.yaml parse', async (t) => {
  const spc = parseYaml(
    readFileSync(new URL('../../../examples/outputs-secretproviderclass.yaml', import.meta.url), 'utf8'),
  )
  const objects = parseObjects(spc.spec.parameters.objects)
  t.ok(objects.length >= 15)
  t.ok(
    objects.some((o) => o.template !== undefined && o.secretPath === ''),
    'a template without secretPath',
  )
  t.strictSame(
    new Set(objects.map((o) => o.format).filter(Boolean)),
    new Set(['json', 'yaml', 'env', 'properties', 'files', 'tls']),
  )
})

t.test('hostile YAML is refused before the YAML library builds a tree', async (t) => {
  const deep = `- ${'['.repeat(60_000)}${']'.repeat(60_000)}`
  const deepErr = providerError(() => parseObjects(deep))
  t.equal(deepErr.code, 'BAD_PARAMETER')
  t.equal(grpcStatusOf(deepErr.code), GrpcStatus.INVALID_ARGUMENT)
  t.equal(deepErr.message, 'parameter "objects" nests collections more than 32 levels deep')
  const blockDeep = `${'- '.repeat(100)}x\n`
  t.equal(providerError(() => parseObjects(blockDeep)).message, deepErr.message)
  const flood = `- [${'a,'.repeat(120_000)}]`
  t.match(providerError(() => parseObjects(flood)).message, /^parameter "objects" has more than 25000 YAML nodes/)
})

t.test('parsing a hostile text near the size limit keeps the heap small', async (t) => {
  // A child process, so that nothing else of this test run is on its heap. The YAML library's tree
  // for any of these texts takes the heap up by 70-110 MiB (the first once took RSS from 71 to
  // 356 MiB); refused by the pre-scan, they cost a few MiB. The V8 heap's committed size only grows
  // while a parse runs, so its growth bounds the peak. A generous bound, no timing.
  const loader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'))
  const source = new URL('../../../src/request/objects.ts', import.meta.url).href
  const script = `
    const v8 = await import('node:v8')
    const { parseObjects } = await import(${JSON.stringify(source)})
    const n = 250 * 1024
    let nest = ''
    while (nest.length < n) nest += '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],'
    const texts = ['- ' + '['.repeat(n / 2) + ']'.repeat(n / 2), '- [' + nest + ']', '- [' + 'a,'.repeat(n / 2 - 8) + ']']
    parseObjects('- {objectName: warm, secretPath: up}')
    globalThis.gc()
    const before = v8.getHeapStatistics().total_heap_size
    const out = texts.map((text) => { try { parseObjects(text); return 'parsed' } catch (e) { return e.code } })
    const grew = v8.getHeapStatistics().total_heap_size - before
    console.log(JSON.stringify({ out, grewMiB: grew / 1048576 }))
  `
  const { execFileSync } = await import('node:child_process')
  const stdout = execFileSync(
    process.execPath,
    [...loader, '--expose-gc', '--max-semi-space-size=2', '--input-type=module', '-e', script],
    { encoding: 'utf8' },
  )
  const result = JSON.parse(stdout.trim().split('\n').pop()!) as { out: string[]; grewMiB: number }
  t.same(result.out, ['BAD_PARAMETER', 'BAD_PARAMETER', 'BAD_PARAMETER'])
  t.ok(result.grewMiB < 24, `heap grew ${result.grewMiB.toFixed(1)} MiB`)
})

t.test('namespace: an object read in another Vault namespace, bounded like vaultNamespace', async (t) => {
  t.equal(one('objectName: a', 'secretPath: secret/data/a', 'namespace: team-a/apps').namespace, 'team-a/apps')
  t.equal(one('objectName: a', 'secretPath: secret/data/a', 'namespace: ""').namespace, undefined, 'empty: the Mount’s')
  t.equal(one('objectName: a', 'secretPath: secret/data/a').namespace, undefined)
  t.match(
    objectError('objectName: a', 'secretPath: secret/data/a', 'namespace: "team a"').message,
    /^object "a": namespace "team a" may hold only visible ASCII/,
  )
  t.match(
    objectError('objectName: a', 'secretPath: secret/data/a', 'namespace: team-a//apps').message,
    /^object "a": namespace "team-a\/\/apps" must be a path of namespace names/,
  )
  const long = objectError('objectName: a', 'secretPath: secret/data/a', `namespace: ${'n'.repeat(257)}`)
  t.equal(long.message, 'object "a": namespace is longer than 256 characters', 'the value is not echoed')
  t.match(objectError('objectName: a', 'template: "x"', 'namespace: team-a').message, /namespace needs a secretPath/)
  t.match(
    objectError('objectName: a', 'secretPath: secret/data/a', 'namespace: {x: 1}').message,
    /namespace must be a string/,
  )
})

/** What a problem says and what its fields point at, for comparing lists of them. */
function described(err: ProviderError): [string, number | undefined, string | undefined, string] {
  return [err.code, err.fields.object?.index, err.fields.file, err.message]
}

t.test('collectObjects: every object’s problem, then those across objects, in one pass', async (t) => {
  const text = [
    '- {objectName: a, secretPath: s, secretkey: x}', // 0: unknown field; keeps its name "a"
    '- {objectName: b, secretPath: s}', // 1
    '- {secretPath: s}', // 2: no objectName
    "- {objectName: t, template: '{{@a}} {{@missing}}'}", // 3: @a is refused, but an object: only @missing
    '- {objectName: b, secretPath: s}', // 4: a second "b"
    '- {objectName: b/x, secretPath: s}', // 5: inside the file object "b"
    "- {objectName: t2, template: '{{@t}}'}", // 6: references a template
    '- {objectName: k, secretPath: s, format: pkcs12, passwordObject: t}', // 7: password from a template
    '- {objectName: /abs, secretPath: s}', // 8: a name no other object can use
    '- {objectName: u, secretPath: s, passwordObject: a}', // 9: passwordObject without pkcs12
  ].join('\n')
  const { objects, issues, names } = collectObjects(text)
  t.same(issues.map(described), [
    [
      'BAD_OBJECT',
      0,
      undefined,
      'object "a": unknown field "secretkey" (known fields: objectName, secretPath, secretKey, method, secretArgs, filePermission, encoding, secretKeyPath, format, template, passwordObject, optional, namespace)',
    ],
    ['BAD_OBJECT', 2, undefined, 'objects[2]: objectName is missing or not a string'],
    ['BAD_OBJECT', 8, undefined, 'object "/abs": objectName is absolute; it must be relative to the volume'],
    ['BAD_OBJECT', 9, undefined, 'object "u": passwordObject is for format pkcs12 only'],
    ['BAD_OBJECT', undefined, 'b', 'objectName must be unique; duplicated: "b"'],
    ['BAD_OBJECT', undefined, 'b/x', 'object "b/x" needs "b" to be a directory, but object "b" is a file'],
    [
      'BAD_OBJECT',
      3,
      undefined,
      'object "t": template references @"missing", which is not an objectName of this SecretProviderClass (objects it can reference: "a", "b", "b/x", "k", "u")',
    ],
    [
      'BAD_OBJECT',
      6,
      undefined,
      'object "t2": template references @"t", which is itself a template; templates can reference only objects that read a secret',
    ],
    [
      'BAD_OBJECT',
      7,
      undefined,
      'object "k": passwordObject "t" is not an objectName of this SecretProviderClass that reads a secret',
    ],
  ])
  t.ok(
    issues.every((i) => i.fields.parameter === 'objects'),
    'every problem names the parameter',
  )
  t.same(
    issues.map((i) => i.fields.object?.name),
    ['a', undefined, '/abs', 'u', undefined, undefined, 't', 't2', 'k'],
    'an object is named once it has a name',
  )
  t.same(names, ['a', 'b', undefined, 't', 'b', 'b/x', 't2', 'k', undefined, 'u'], 'usable names only')
  t.same(
    objects.map((o) => o.objectName),
    ['b', 't', 'b', 'b/x', 't2', 'k'],
    'the objects without a problem of their own',
  )
  const first = thrown(() => parseObjects(text), ProviderError)
  t.same(described(first), described(issues[0]!), 'parseObjects fails with the first')
})

t.test('collectObjects: a problem of the list itself stops the parse', async (t) => {
  for (const text of ['- [unclosed', 'objectName: x', '[]', '~', 'a: *b']) {
    const { objects, issues, names } = collectObjects(text)
    t.same([objects, names, issues.length], [[], [], 1], text)
    t.same([issues[0]!.code, issues[0]!.fields], ['BAD_PARAMETER', { parameter: 'objects' }], text)
    t.equal(issues[0]!.message, providerError(() => parseObjects(text)).message)
  }
})

t.test('collectObjects: at most MAX_ISSUES problems of a text, then how many more', async (t) => {
  const bad = MAX_ISSUES + 50
  const text = Array.from({ length: bad }, (_, i) => `- {objectName: o${i}, secretPath: s, method: DELETE}`).join('\n')
  const { issues } = collectObjects(text)
  t.equal(issues.length, MAX_ISSUES + 1)
  t.equal(
    issues[MAX_ISSUES - 1]!.message,
    `object "o${MAX_ISSUES - 1}": method must be one of GET, PUT, POST, got "DELETE"`,
  )
  t.same(
    [issues[MAX_ISSUES]!.code, issues[MAX_ISSUES]!.message, issues[MAX_ISSUES]!.fields],
    ['BAD_OBJECT', '…and 50 more problems', { parameter: 'objects' }],
  )
})
