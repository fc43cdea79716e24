// Cancellation: what a Mount's layers listen to instead of an AbortSignal, and the AbortSignal a
// Deadline makes from it for libraries that take one.
import { once } from 'node:events'
import t from 'tap'
import { Cancellation, NEVER_CANCELLED, cancelSignalOf } from '../../../src/util/cancellation.js'
import { Deadline } from '../../../src/util/deadline.js'
import { SharedCall } from '../../../src/util/shared-call.js'

t.test('abort runs each listener once, at once, with the reason kept', async (t) => {
  const c = new Cancellation()
  const calls: string[] = []
  const a = (): void => void calls.push(`a:${String(c.aborted)}`)
  const b = (): void => void calls.push('b')
  const removed = (): void => void calls.push('removed')
  c.addAbortListener(a)
  c.addAbortListener(b)
  c.addAbortListener(removed)
  c.removeAbortListener(removed)
  t.equal(c.aborted, false)
  t.equal(c.reason, undefined)
  const why = new Error('the driver cancelled the Mount call')
  c.abort(why)
  t.same(calls, ['a:true', 'b'], 'in order, synchronously, seeing aborted')
  t.equal(c.reason, why)
  c.abort(new Error('again'))
  t.same(calls, ['a:true', 'b'], 'a second abort runs nothing')
  t.equal(c.reason, why, 'and keeps the first reason')
  c.addAbortListener(a)
  t.same(calls, ['a:true', 'b'], 'a listener added after the abort never runs')
})

t.test('a listener that throws does not stop the others; its error is reported', async (t) => {
  const reported: unknown[] = []
  const c = new Cancellation((err) => reported.push(err))
  const ran: string[] = []
  c.addAbortListener(() => {
    throw new Error('listener failed')
  })
  c.addAbortListener(() => void ran.push('second'))
  c.abort()
  t.same(ran, ['second'])
  t.same(
    reported.map((e) => (e as Error).message),
    ['listener failed'],
  )
})

t.test('NEVER_CANCELLED holds nothing and never aborts', async (t) => {
  let ran = false
  NEVER_CANCELLED.addAbortListener(() => (ran = true))
  t.equal(NEVER_CANCELLED.aborted, false)
  t.equal(ran, false)
  t.ok(Object.isFrozen(NEVER_CANCELLED))
})

t.test('an AbortSignal as a CancelSignal', async (t) => {
  const controller = new AbortController()
  const c = cancelSignalOf(controller.signal)
  let runs = 0
  const fn = (): void => void runs++
  const gone = (): void => void runs++
  c.addAbortListener(fn)
  c.addAbortListener(gone)
  c.removeAbortListener(gone)
  controller.abort('why')
  t.equal(c.aborted, true)
  t.equal(c.reason, 'why')
  t.equal(runs, 1)
})

t.test("a Deadline's AbortSignal follows its cancellation, with the reason", async (t) => {
  const c = new Cancellation()
  const d = Deadline.in(60_000, c)
  t.equal(d.cancel, c, 'the layers listen to the cancellation itself')
  const signal = d.signal
  t.equal(d.signal, signal, 'one AbortSignal per Deadline')
  t.equal(signal.aborted, false)
  const aborted = once(signal, 'abort')
  c.abort(new Error('the driver cancelled the Mount call'))
  await aborted
  t.equal(signal.aborted, true)
  t.match(String(signal.reason), /the driver cancelled the Mount call/)
  t.equal(d.cancelled, true)

  const late = Deadline.in(60_000, c)
  t.equal(late.signal.aborted, true, 'made after the abort: already aborted')
  t.equal(d.capped(10).cancel, c, 'a capped deadline keeps the cancellation')
})

t.test('a Deadline given an AbortSignal keeps it as its signal, and its cancellation follows it', async (t) => {
  const controller = new AbortController()
  const d = Deadline.in(60_000, controller.signal)
  t.equal(d.signal, controller.signal)
  t.equal(d.capped(10).signal, controller.signal)
  let ran = 0
  d.cancel.addAbortListener(() => void ran++)
  controller.abort()
  t.equal(d.cancel.aborted, true)
  t.equal(d.cancelled, true)
  t.equal(ran, 1)
})

t.test("a shared read's work listens to the shared call's Cancellation, not to an AbortSignal", async (t) => {
  const mount = new Cancellation()
  let workCancel: unknown
  const call = new SharedCall<string>(async (shared) => {
    workCancel = shared.cancel
    return 'answer'
  })
  const giveUp = (): Error => new Error('gave up')
  const answers = await Promise.all([
    call.join(Deadline.in(60_000, mount), giveUp),
    call.join(Deadline.in(60_000, mount), giveUp),
  ])
  t.same(answers, ['answer', 'answer'])
  t.ok(workCancel instanceof Cancellation, "the work listens to the shared call's cancellation")
})
