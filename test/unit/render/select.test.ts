import t from 'tap'
import { selectPath } from '../../../src/render/select.js'
import { KeyPathSyntaxError, formatKeyPath, parseKeyPath } from '../../../src/request/key-path.js'
import { thrown } from '../../support/thrown.js'

t.test('parseKeyPath: dots, indexes and quoted keys', async (t) => {
  t.strictSame(parseKeyPath('a'), ['a'])
  t.strictSame(parseKeyPath('a.b.c'), ['a', 'b', 'c'])
  t.strictSame(parseKeyPath('hosts[0].name'), ['hosts', 0, 'name'])
  t.strictSame(parseKeyPath('["tls.crt"]'), ['tls.crt'])
  t.strictSame(parseKeyPath(`a['x.y'].z[12]`), ['a', 'x.y', 'z', 12])
  t.strictSame(parseKeyPath('a["q\\"uote"]'), ['a', 'q"uote'])
  t.strictSame(parseKeyPath("a['back\\\\slash']"), ['a', 'back\\slash'])
  t.strictSame(parseKeyPath('a["0"]'), ['a', '0'], 'a quoted number is a key')
  t.strictSame(parseKeyPath('with space.and-dash/slash'), ['with space', 'and-dash/slash'])
})

t.test('parseKeyPath: syntax errors say what and where', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['', /is empty/],
    ['a.', /expects a key name at character 3/],
    ['.a', /expects a key name at character 1/],
    ['a..b', /expects a key name at character 3/],
    ['a[', /array index .* at character 3/],
    ['a[01]', /array index/],
    ['a[-1]', /array index/],
    ['a["x"', /expects "\]"/],
    ['a["x', /unclosed "/],
    ['a["\\n"]', /escapes neither/],
    ['a]', /unexpected "\]"/],
    ['a[0]b', /unexpected "b"/],
  ]
  for (const [text, expected] of cases) {
    t.match(thrown(() => parseKeyPath(text), KeyPathSyntaxError).message, expected, JSON.stringify(text))
  }
})

t.test('formatKeyPath round-trips through parseKeyPath', async (t) => {
  for (const steps of [['a', 'b'], ['tls.crt'], ['a', 0, 'b'], ['0'], ['q"x', 'y[z]'], ["it's"]] as Array<
    Array<string | number>
  >) {
    t.strictSame(parseKeyPath(formatKeyPath(steps)), steps, formatKeyPath(steps))
  }
  t.equal(formatKeyPath(['a', 'b.c', 1]), 'a["b.c"][1]')
})

t.test('selectPath walks maps and arrays, own keys only', async (t) => {
  const data = { a: { b: [{ c: 'deep' }, 'x'] }, 'k.dot': { v: 1 }, empty: {} }
  t.strictSame(selectPath(data, ['a', 'b', 0, 'c']), { ok: true, value: 'deep' })
  t.strictSame(selectPath(data, ['k.dot', 'v']), { ok: true, value: 1 })
  t.strictSame(selectPath(data, ['a']), { ok: true, value: { b: [{ c: 'deep' }, 'x'] } })
  t.match(selectPath(data, ['constructor']), { ok: false }, 'prototype members are not keys')
  t.match(selectPath(data, ['a', 'toString']), { ok: false })
})

t.test('selectPath: a miss names the step, where it stopped and the keys there, never values', async (t) => {
  const data = { db: { host: 'h-secret', port: 5432 }, list: ['v-secret'], s: 'str-secret' }
  const problem = (steps: Array<string | number>): string => {
    const r = selectPath(data, steps)
    if (r.ok) throw new Error('expected a miss')
    return r.problem
  }
  t.equal(problem(['nope']), 'no key "nope" at the top level; keys present: "db", "list", "s"')
  t.equal(problem(['db', 'user']), 'no key "user" at db; keys present: "host", "port"')
  t.equal(problem(['list', 3]), 'no item [3] at list; it is an array of 1 item')
  t.match(problem(['list', '0']), /no key "0" at list; it is an array of 1 item \(write \[0\] to index it\)/)
  t.match(
    problem(['db', 0]),
    /\[0\] indexes an array, but at db keys present: "host", "port" \(for a key named "0" write \["0"\]\)/,
  )
  t.equal(problem(['s', 'x']), 'no key "x" at s; it is a string, which has no keys')
  for (const p of [problem(['nope']), problem(['db', 'user']), problem(['list', 3]), problem(['s', 'x'])]) {
    t.notMatch(p, /secret/)
  }
})
