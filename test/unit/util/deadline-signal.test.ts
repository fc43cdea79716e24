import { getMaxListeners } from 'node:events'
import t from 'tap'
import { Deadline, MOUNT_SIGNAL_LISTENERS } from '../../../src/util/deadline.js'

t.test('a Deadline without a caller has a signal of its own, with room for a Mount’s listeners', async (t) => {
  const a = Deadline.in(1000)
  const b = Deadline.in(1000)
  t.not(a.signal, b.signal, 'no signal shared between Mounts: listeners never pile up on one object')
  t.equal(getMaxListeners(a.signal), MOUNT_SIGNAL_LISTENERS)
  t.notOk(a.cancelled)
  // As many listeners as a Mount's calls in flight may add: no MaxListenersExceededWarning.
  const warnings: Error[] = []
  const onWarning = (w: Error): void => {
    warnings.push(w)
  }
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))
  const listeners = Array.from({ length: 16 }, () => () => undefined)
  for (const l of listeners) a.signal.addEventListener('abort', l)
  await new Promise((r) => setImmediate(r))
  for (const l of listeners) a.signal.removeEventListener('abort', l)
  t.same(
    warnings.map((w) => w.name),
    [],
  )
})
