// The depth of a parsed answer, found without recursion.
import t from 'tap'
import { nestedDeeperThan } from '../../../src/util/json-depth.js'

function nested(levels: number): unknown {
  let v: unknown = 'leaf'
  for (let i = 0; i < levels; i++) v = i % 2 === 0 ? [v] : { k: v }
  return v
}

t.test('scalars are level 0, each array or object one more', async (t) => {
  t.equal(nestedDeeperThan('x', 0), false)
  t.equal(nestedDeeperThan(null, 0), false)
  t.equal(nestedDeeperThan({}, 0), true)
  t.equal(nestedDeeperThan({ data: { data: { k: 'v' } } }, 3), false)
  t.equal(nestedDeeperThan({ data: { data: { k: 'v' } } }, 2), true)
  t.equal(nestedDeeperThan(nested(64), 64), false)
  t.equal(nestedDeeperThan(nested(65), 64), true)
})

t.test('a value nested 200,000 levels deep is measured, not walked recursively', async (t) => {
  const deep = JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)) as unknown
  t.equal(nestedDeeperThan(deep, 64), true)
  t.equal(nestedDeeperThan([1, [2, [3]], { a: [{ b: 'c' }] }], 4), false)
})
