import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import dotenv from 'dotenv'
import { parse as parseYaml } from 'yaml'
import { ProviderError } from '../../../src/errors.js'
import { formatData, formatEnv, formatProperties, formatYaml } from '../../../src/render/formats.js'
import { thrown } from '../../support/thrown.js'

const WHAT = 'object "x" (GET secret/data/app)'

/** Values that need care in .env files: quotes, $, newlines, #, backslashes, spaces. */
const AWKWARD: Record<string, string> = {
  PLAIN: 'simple',
  EMPTY: '',
  SPACES: '  padded value  ',
  DOLLAR: 'pa$$word $HOME ${USER}',
  HASH: 'value # not a comment',
  NEWLINES: 'line one\nline two\n\nline four',
  DOUBLE: 'say "hi"',
  SINGLE: "it's",
  SINGLE_NL: "it's\nmulti # line",
  BACKSLASH: 'C:\\path\\n\\t',
  BACKTICK: 'run `id`',
  EQUALS: 'a=b=c',
  PEM: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
  UNICODE: 'héllo ☃ 😀',
}

t.test('json: pretty, sorted at every level, newline-terminated', async (t) => {
  const out = formatData({ b: 1, a: { d: [true, null], c: 'x' } }, 'json', WHAT).toString()
  t.equal(out, '{\n  "a": {\n    "c": "x",\n    "d": [\n      true,\n      null\n    ]\n  },\n  "b": 1\n}\n')
})

t.test('yaml: sorted, YAML 1.1-ambiguous strings quoted, reads back the same under 1.1 and 1.2', async (t) => {
  const data = { z: 'on', y: '0644', x: 'yes', w: 'a\nb\n', v: 12, u: ['1:20', null], t: '~', s: 'plain text' }
  const out = formatYaml(data)
  t.equal(Object.keys(parseYaml(out)).join(','), 's,t,u,v,w,x,y,z')
  t.strictSame(parseYaml(out, { version: '1.1' }), data)
  t.strictSame(parseYaml(out, { version: '1.2' }), data)
  t.match(out, /^"?z"?: "on"$/m)
  t.match(out, /^w: \|\n {2}a\n {2}b\n/m, 'multi-line values as block scalars')
})

t.test('env: every awkward value reads back the same through dotenv (both parsers) and POSIX sh', async (t) => {
  const out = formatEnv(AWKWARD, WHAT)
  t.equal(out.split('\n')[0], "BACKSLASH='C:\\path\\n\\t'", 'sorted, single-quoted')
  t.match(out, /^SINGLE="it's"$/m, 'double quotes only for values with a single quote')
  t.strictSame(dotenv.parse(out), AWKWARD, 'dotenv default parser')
  t.strictSame(dotenv.parse(out, { fast: true }), AWKWARD, 'dotenv fast parser')
  const dir = t.testdir({})
  const file = join(dir, 'app.env')
  writeFileSync(file, out)
  const keys = Object.keys(AWKWARD)
  for (const shell of ['sh', 'bash']) {
    const script = `set -a; . "$1"; ${keys.map((k) => `printf '%s\\0' "$${k}"`).join('; ')}`
    const printed = execFileSync(shell, ['-c', script, 'sh', file]).toString('utf8').split('\0').slice(0, -1)
    t.strictSame(Object.fromEntries(keys.map((k, i) => [k, printed[i]])), AWKWARD, shell)
  }
})

t.test('env: non-string values as compact JSON; refusals name the key, never the value', async (t) => {
  t.equal(formatEnv({ N: 5, B: true, O: { b: 1, a: 2 } }, WHAT), `B='true'\nN='5'\nO='{"a":2,"b":1}'\n`)
  const bad = (data: Record<string, unknown>): string => thrown(() => formatEnv(data, WHAT), ProviderError).message
  t.match(bad({ 'my-key': 'v' }), /object "x".*format "env": key "my-key" is not a shell variable name/)
  t.match(bad({ '1ST': 'v' }), /key "1ST" is not a shell variable name/)
  t.match(bad({ CR: 'a\rsecret' }), /key "CR" contains a carriage return or NUL/)
  const both = bad({ MIX: `it's $Zq9v` })
  t.match(both, /key "MIX" contains a single quote .* together with one of/)
  t.notMatch(both, /Zq9v/)
  t.match(bad({ TRAIL: 'dir\\' }), /key "TRAIL" .*ends in a backslash/)
  t.equal(thrown(() => formatData('str', 'env', WHAT), ProviderError).code, 'OUTPUT_FAILED')
  t.match(
    thrown(() => formatData(['a'], 'properties', WHAT), ProviderError).message,
    /needs a map of keys, but the value is an array/,
  )
})

t.test('properties: escapes per java.util.Properties, no date comment', async (t) => {
  const out = formatProperties({
    'db.url': 'jdbc:postgresql://h:5432/app?ssl=true',
    'key with space': ' lead and trail ',
    multi: 'a\nb\tc\\d',
    unicode: 'é☃😀',
    '#hash': '!bang=eq:colon',
    n: 3,
  })
  t.equal(
    out,
    [
      '\\#hash=\\!bang\\=eq\\:colon',
      'db.url=jdbc\\:postgresql\\://h\\:5432/app?ssl\\=true',
      'key\\ with\\ space=\\ lead and trail ',
      'multi=a\\nb\\tc\\\\d',
      'n=3',
      'unicode=\\u00e9\\u2603\\ud83d\\ude00',
      '',
    ].join('\n'),
  )
  t.match(out, /^[\x20-\x7e\n]*$/, 'pure printable ASCII')
})

t.test('deterministic: same data, any key order, same bytes', async (t) => {
  const a = { b: { y: 1, x: 2 }, a: 'v' }
  const b = { a: 'v', b: { x: 2, y: 1 } }
  for (const f of ['json', 'yaml', 'env', 'properties'] as const) {
    const data = f === 'env' || f === 'properties' ? { B: 'x', A: 'y' } : a
    const same = f === 'env' || f === 'properties' ? { A: 'y', B: 'x' } : b
    t.ok(formatData(data, f, WHAT).equals(formatData(same, f, WHAT)), f)
  }
})

t.test('a key named __proto__ is an ordinary key in every format', async (t) => {
  const data = JSON.parse('{"__proto__": "p", "a": "x"}') as Record<string, unknown>
  t.equal(formatData(data, 'json', WHAT).toString(), '{\n  "__proto__": "p",\n  "a": "x"\n}\n')
  t.equal(formatData(data, 'yaml', WHAT).toString(), '__proto__: p\na: x\n')
  t.equal(formatData(data, 'env', WHAT).toString(), "__proto__='p'\na='x'\n")
  t.equal(formatData(data, 'properties', WHAT).toString(), '__proto__=p\na=x\n')
})
