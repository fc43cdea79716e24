// The system's Time, as src/app.ts builds it: its sleep ends at once when the caller's signal
// aborts (the retry waits between attempts), and its timers never keep the process alive.
import t from 'tap'
import { systemTime } from '../../../src/util/time.js'

t.test('sleep ends at once when its signal aborts, and does not start for one already aborted', async (t) => {
  const time = systemTime()
  const controller = new AbortController()
  // Were its timer left running, this file would stay alive for a minute after its tests.
  const waiting = time.sleep(60_000, controller.signal).then(
    () => 'slept',
    (err: unknown) => err,
  )
  controller.abort()
  t.match(await waiting, { name: 'AbortError' })
  const after = await time.sleep(0, controller.signal).then(
    () => 'slept',
    (err: unknown) => err,
  )
  t.match(after, { name: 'AbortError' })
  t.equal(await time.sleep(1, new AbortController().signal).then(() => 'slept'), 'slept')
  t.equal(await time.sleep(1).then(() => 'slept'), 'slept', 'without a signal too')
})

t.test('a timer fires after its time unless cleared, and does not hold the process open', async (t) => {
  const time = systemTime()
  const fired: string[] = []
  const kept = time.setTimeout(() => fired.push('kept'), 1)
  const cleared = time.setTimeout(() => fired.push('cleared'), 1)
  time.clearTimeout(cleared)
  await time.sleep(20)
  t.same(fired, ['kept'])
  t.equal((kept as NodeJS.Timeout).hasRef(), false, 'unref: a waiter’s give-up timer alone never keeps Node alive')
})
