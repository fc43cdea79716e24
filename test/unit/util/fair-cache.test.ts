// A cache shared by tenants: when full, the tenant holding the most gives up its least recently used entry.
import t from 'tap'
import { FairCache } from '../../../src/util/fair-cache.js'

t.test('a tenant that fills the cache evicts only its own entries', async (t) => {
  const evicted: string[] = []
  const cache = new FairCache<number>({ maxEntries: 10, onEvict: (_v, key) => evicted.push(key) })
  cache.set('victim', 'v1', 1)
  cache.set('victim', 'v2', 2)
  for (let i = 0; i < 1000; i++) cache.set('attacker', `a${i}`, i)
  t.equal(cache.size, 10)
  t.equal(cache.get('v1'), 1, "the victim's entries stay")
  t.equal(cache.get('v2'), 2)
  t.equal(cache.sizeOf('attacker'), 8)
  t.ok(
    evicted.every((k) => k.startsWith('a')),
    'only the attacker lost entries',
  )
  t.same(evicted.slice(0, 3), ['a0', 'a1', 'a2'], 'its least recently used first')
})

t.test('least recently used within a tenant; get() counts as use, peek() does not', async (t) => {
  const cache = new FairCache<string>({ maxEntries: 3 })
  cache.set('a', 'k1', 'x')
  cache.set('a', 'k2', 'y')
  cache.set('a', 'k3', 'z')
  cache.get('k1')
  cache.peek('k2')
  cache.set('a', 'k4', 'w')
  t.same([...cache.keys()].sort(), ['k1', 'k3', 'k4'], 'k2 was the least recently used')
})

t.test('by size: the tenant holding the most bytes gives up entries', async (t) => {
  const cache = new FairCache<string>({ maxEntries: 100, maxSize: 100, sizeOf: (v) => v.length })
  cache.set('small', 's', 'x'.repeat(10))
  cache.set('big', 'b1', 'x'.repeat(50))
  cache.set('big', 'b2', 'x'.repeat(50))
  t.equal(cache.has('s'), true)
  t.equal(cache.has('b1'), false)
  t.equal(cache.calculatedSize, 60)
  cache.set('big', 'huge', 'x'.repeat(500))
  t.equal(cache.has('huge'), false, 'an entry larger than the whole bound does not stay')
  t.equal(cache.has('s'), true)
})

t.test('delete and clear drop entries without telling onEvict', async (t) => {
  const evicted: string[] = []
  const cache = new FairCache<number>({ maxEntries: 5, onEvict: (_v, k) => evicted.push(k) })
  cache.set('a', 'x', 1)
  t.equal(cache.delete('x'), true)
  t.equal(cache.delete('x'), false)
  cache.set('a', 'y', 2)
  cache.clear()
  t.equal(cache.size, 0)
  t.same(evicted, [])
})
