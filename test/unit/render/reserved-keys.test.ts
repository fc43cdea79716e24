// Keys that are special to JavaScript objects (`__proto__`, `constructor`,
// `prototype`) are ordinary keys in a Vault secret. Every output shape must
// keep them: an object built by assignment drops `__proto__` silently (it
// sets the prototype instead), which once lost it from the whole-response
// file while `format: json` kept it.
import t from 'tap'
import { parse as parseYaml } from 'yaml'
import { renderObject, renderObjects } from '../../../src/render/render.js'
import { parseObjects } from '../../../src/request/objects.js'

const RESERVED = ['__proto__', 'constructor', 'prototype'] as const
const LABEL = 'object "x" (GET secret/data/app)'

// As a Vault answer arrives: JSON.parse makes `__proto__` an own data property.
const BODY: unknown = JSON.parse(
  JSON.stringify({
    request_id: 'r-1',
    data: { data: { plain: 'p-value', nested: { deep: 'd' } }, metadata: { version: 1 } },
  })
    .replace(
      '"plain":"p-value"',
      '"__proto__":"proto-value","constructor":"ctor-value","prototype":"prototype-value","plain":"p-value"',
    )
    .replace('"deep":"d"', '"__proto__":{"inner":"nested-proto-value"},"deep":"d"'),
)

// A Map, not an object literal: `{ __proto__: 'x' }` in a literal sets the prototype (and ignores a string).
const VALUE = new Map<string, string>([
  ['__proto__', 'proto-value'],
  ['constructor', 'ctor-value'],
  ['prototype', 'prototype-value'],
])
const VALUES = (key: string): string => VALUE.get(key)!

function render(yamlFields: string): Map<string, string> {
  const [obj] = parseObjects(`- {${yamlFields}}`)
  const files = renderObject(obj!, BODY, 420, LABEL)
  return new Map(files.map((f) => [f.path, f.contents.toString('utf8')]))
}

function only(files: Map<string, string>): string {
  t.equal(files.size, 1, 'one file')
  return [...files.values()][0]!
}

/** The own enumerable keys of a parsed JSON/YAML map, `__proto__` included. */
function ownKeys(value: unknown): string[] {
  return Object.keys(value as object).sort()
}

t.test('the fixture really carries the keys as own properties', async (t) => {
  const data = (BODY as { data: { data: Record<string, unknown> } }).data.data
  t.strictSame(ownKeys(data), ['__proto__', 'constructor', 'nested', 'plain', 'prototype'])
})

t.test('default shape: the whole response', async (t) => {
  const text = only(render('objectName: whole, secretPath: secret/data/app'))
  const parsed = JSON.parse(text) as { data: { data: Record<string, unknown> } }
  t.strictSame(ownKeys(parsed.data.data), ['__proto__', 'constructor', 'nested', 'plain', 'prototype'])
  for (const key of RESERVED) t.equal(parsed.data.data[key], VALUES(key), key)
  t.match(text, '"__proto__":{"inner":"nested-proto-value"}', 'nested too')
})

t.test('secretKey and secretKeyPath naming the key', async (t) => {
  for (const key of RESERVED) {
    t.equal(only(render(`objectName: k, secretPath: secret/data/app, secretKey: "${key}"`)), VALUES(key), key)
    t.equal(only(render(`objectName: k, secretPath: secret/data/app, secretKeyPath: '["${key}"]'`)), VALUES(key), key)
  }
  t.equal(
    only(render(`objectName: k, secretPath: secret/data/app, secretKeyPath: 'nested["__proto__"].inner'`)),
    'nested-proto-value',
  )
  t.equal(
    only(render(`objectName: k, secretPath: secret/data/app, secretKey: nested`)),
    '{"__proto__":{"inner":"nested-proto-value"},"deep":"d"}',
    'a map value as compact JSON',
  )
})

t.test('format json and yaml', async (t) => {
  for (const format of ['json', 'yaml'] as const) {
    const text = only(render(`objectName: f, secretPath: secret/data/app, format: ${format}`))
    const parsed = (format === 'json' ? JSON.parse(text) : parseYaml(text)) as Record<string, unknown>
    t.strictSame(ownKeys(parsed), ['__proto__', 'constructor', 'nested', 'plain', 'prototype'], format)
    for (const key of RESERVED) t.equal(parsed[key], VALUES(key), `${format}: ${key}`)
    t.strictSame(ownKeys(parsed.nested), ['__proto__', 'deep'], `${format}: nested`)
  }
})

t.test('format env and properties', async (t) => {
  const env = only(render('objectName: e, secretPath: secret/data/app, format: env'))
  for (const key of RESERVED) t.ok(env.split('\n').includes(`${key}='${VALUES(key)}'`), `env: ${key}`)
  const properties = only(render('objectName: p, secretPath: secret/data/app, format: properties'))
  for (const key of RESERVED) t.ok(properties.split('\n').includes(`${key}=${VALUES(key)}`), `properties: ${key}`)
})

t.test('format files: one file per key', async (t) => {
  const files = render('objectName: dir, secretPath: secret/data/app, format: files')
  for (const key of RESERVED) t.equal(files.get(`dir/${key}`), VALUES(key), key)
})

t.test('templates: own names, nested names, sections and @objectName', async (t) => {
  const text = only(
    render(
      'objectName: t, secretPath: secret/data/app, template: "{{__proto__}}|{{constructor}}|{{prototype}}|' +
        '{{nested.__proto__.inner}}|{{#nested}}{{__proto__.inner}}{{/nested}}"',
    ),
  )
  t.equal(text, 'proto-value|ctor-value|prototype-value|nested-proto-value|nested-proto-value')
  const objects = parseObjects(
    '- {objectName: src, secretPath: secret/data/app, format: json}\n' +
      '- {objectName: ref, template: "{{@src.__proto__}}/{{@src.constructor}}/{{@src.prototype}}"}\n',
  )
  const rendered = await renderObjects(objects, [BODY, undefined], 420, ['src', 'ref'])
  t.equal(rendered[1]![0]!.contents.toString('utf8'), 'proto-value/ctor-value/prototype-value')
})

t.test('encoding: decoded maps keep the keys too', async (t) => {
  const body: unknown = JSON.parse(
    '{"data":{"data":{"__proto__":"cHJvdG8=","constructor":"Y3Rvcg==","prototype":"cHJvdG90eXBl"},"metadata":{}}}',
  )
  const [obj] = parseObjects('- {objectName: b, secretPath: secret/data/app, format: json, encoding: base64}')
  const parsed = JSON.parse(renderObject(obj!, body, 420, LABEL)[0]!.contents.toString('utf8')) as Record<
    string,
    unknown
  >
  t.strictSame(ownKeys(parsed), ['__proto__', 'constructor', 'prototype'])
  t.equal(parsed.__proto__, 'proto')
})
