import t from 'tap'
import { canonicalJson } from '../../../src/util/canonical-json.js'

t.test('keys are sorted at every level, arrays keep their order', async (t) => {
  t.equal(
    canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }, 'x'], c: null } }),
    '{"a":{"c":null,"d":[{"y":2,"z":1},"x"]},"b":1}',
  )
  t.equal(canonicalJson([3, 1, 2]), '[3,1,2]')
  t.equal(canonicalJson('str"ing'), '"str\\"ing"')
  t.equal(canonicalJson(null), 'null')
  t.equal(canonicalJson({}), '{}')
  t.equal(canonicalJson({ é: 1, e: 2, E: 3, x: 4 }), '{"E":3,"e":2,"x":4,"é":1}')
  // Integer-like keys come first in numeric order (a property of JS objects);
  // still independent of insertion order, which is what matters.
  t.equal(canonicalJson({ '10': 4, b: 0, '9': 5 }), '{"9":5,"10":4,"b":0}')
  t.equal(canonicalJson({ '9': 5, b: 0, '10': 4 }), '{"9":5,"10":4,"b":0}')
})

t.test('insertion order does not matter', async (t) => {
  const a: Record<string, unknown> = {}
  const b: Record<string, unknown> = {}
  const keys = ['password', 'username', 'host', 'port', 'a', 'Z']
  keys.forEach((k, i) => (a[k] = { i, nested: { q: i, p: -i } }))
  ;[...keys]
    .reverse()
    .forEach((k) => (b[k] = { nested: { p: -keys.indexOf(k), q: keys.indexOf(k) }, i: keys.indexOf(k) }))
  t.equal(canonicalJson(a), canonicalJson(b))
})

t.test('a key named __proto__ is an ordinary key, at every level', async (t) => {
  const value: unknown = JSON.parse('{"b":1,"__proto__":{"x":1},"a":[{"__proto__":"p","constructor":"c"}]}')
  t.equal(canonicalJson(value), '{"__proto__":{"x":1},"a":[{"__proto__":"p","constructor":"c"}],"b":1}')
})
