import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { mapBounded } from '../../../src/util/bounded.js'

t.test('results come back in item order, whatever the timing', async (t) => {
  const delays = [30, 5, 20, 0, 10, 1]
  const out = await mapBounded(delays, 3, async (d, i) => {
    await sleep(d)
    return `${i}:${d}`
  })
  t.strictSame(out, ['0:30', '1:5', '2:20', '3:0', '4:10', '5:1'])
})

t.test('at most `limit` calls are in flight', async (t) => {
  for (const limit of [1, 2, 4, 10]) {
    let active = 0
    let peak = 0
    const started: number[] = []
    const items = Array.from({ length: 9 }, (_, i) => i)
    await mapBounded(items, limit, async (item) => {
      started.push(item)
      active++
      peak = Math.max(peak, active)
      await sleep(2 + (item % 3))
      active--
      return item
    })
    t.equal(peak, Math.min(limit, items.length), `limit ${limit}`)
    t.strictSame(started, items, `limit ${limit}: started in item order`)
  }
})

t.test('a limit below 1 still makes progress, one at a time', async (t) => {
  for (const limit of [0, -5]) {
    let active = 0
    let peak = 0
    const out = await mapBounded([1, 2, 3], limit, async (x) => {
      active++
      peak = Math.max(peak, active)
      await sleep(1)
      active--
      return x * 2
    })
    t.strictSame(out, [2, 4, 6])
    t.equal(peak, 1)
  }
})

t.test('empty input', async (t) => {
  let calls = 0
  t.strictSame(
    await mapBounded([], 4, async () => {
      calls++
      return 1
    }),
    [],
  )
  t.equal(calls, 0)
})

t.test('the first failure in item order is thrown, after every item ran', async (t) => {
  const finished: number[] = []
  const first = new Error('item 1 failed')
  const later = new Error('item 3 failed')
  const rejection = mapBounded([0, 1, 2, 3, 4], 5, async (i) => {
    // Item 3 fails first in time; item 1 fails later but comes first in order.
    if (i === 3) {
      await sleep(1)
      finished.push(i)
      throw later
    }
    if (i === 1) {
      await sleep(25)
      finished.push(i)
      throw first
    }
    await sleep(i === 4 ? 40 : 5)
    finished.push(i)
    return i
  })
  await t.rejects(rejection, first)
  t.strictSame([...finished].sort(), [0, 1, 2, 3, 4], 'every item ran to completion')
})

t.test('synchronous throws are failures of their item', async (t) => {
  const err = new TypeError('sync')
  await t.rejects(
    mapBounded([0, 1, 2], 2, (i) => {
      if (i === 2) throw err
      return Promise.resolve(i)
    }),
    err,
  )
})

t.test('non-Error rejections are rethrown as they are', async (t) => {
  try {
    await mapBounded([0, 1], 1, async (i) => {
      if (i === 1) throw 'plain string'
      return i
    })
    t.fail('should have thrown')
  } catch (e) {
    t.equal(e, 'plain string')
  }
})
