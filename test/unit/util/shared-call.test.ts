// Work shared by several waiters, on injected time: each waiter leaves on its own deadline or
// signal, the work goes on for the others and is aborted only when none is left.
import t from 'tap'
import { Deadline } from '../../../src/util/deadline.js'
import { SETTLE_GRACE_MS, SharedCall } from '../../../src/util/shared-call.js'
import { ManualTime } from '../../support/manual-time.js'

const giveUp = (cancelled: boolean): Error => new Error(cancelled ? 'left' : 'timed out')

function held<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: Error): void } {
  let resolve!: (v: T) => void
  let reject!: (e: Error) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

const outcome = (p: Promise<unknown>): Promise<string> =>
  p.then(
    (v) => `value ${String(v)}`,
    (e: Error) => e.message,
  )

t.test('the work starts once, with the first waiter, and every waiter gets its result', async (t) => {
  const time = new ManualTime()
  let started = 0
  const answer = held<number>()
  const call = new SharedCall(() => {
    started++
    return answer.promise
  }, time)
  t.equal(started, 0, 'not before anyone waits')
  const a = call.join(Deadline.in(1000, undefined, time), giveUp)
  const b = call.join(Deadline.in(1000, undefined, time), giveUp)
  await time.advance(0)
  t.equal(started, 1)
  answer.resolve(42)
  t.same(await Promise.all([a, b]), [42, 42])
  t.equal(time.timers, 0, 'no give-up timer is left behind')
})

t.test("a waiter leaves on its own deadline; the work's deadline follows the latest live waiter", async (t) => {
  const time = new ManualTime()
  let shared: Deadline | undefined
  const answer = held<string>()
  const call = new SharedCall((d) => {
    shared = d
    return answer.promise
  }, time)
  const t0 = time.now()
  const early = outcome(call.join(Deadline.in(1_000, undefined, time), giveUp))
  const late = outcome(call.join(Deadline.in(5_000, undefined, time), giveUp))
  await time.advance(0)
  t.equal(shared?.expiresAt, t0 + 5_000, 'the latest deadline of the waiters')
  await time.advance(1_000 + SETTLE_GRACE_MS)
  t.equal(await early, 'timed out', 'the early waiter left at its own deadline (and the grace)')
  t.equal(shared?.signal?.aborted, false, 'the work goes on for the other')
  t.equal(call.waiting, 1)
  const later = outcome(call.join(Deadline.in(10_000, undefined, time), giveUp))
  t.equal(shared?.expiresAt, t0 + 11_000 + SETTLE_GRACE_MS, 'a later waiter moves the deadline')
  answer.resolve('ok')
  t.equal(await late, 'value ok')
  t.equal(await later, 'value ok')
})

t.test('a waiter whose caller leaves gets its own error; the last one leaving aborts the work', async (t) => {
  const time = new ManualTime()
  let shared: Deadline | undefined
  const call = new SharedCall((d) => {
    shared = d
    return new Promise<string>((_resolve, reject) =>
      d.signal?.addEventListener('abort', () => reject(new Error('aborted'))),
    )
  }, time)
  const one = new AbortController()
  const two = new AbortController()
  const first = outcome(call.join(Deadline.in(60_000, one.signal, time), giveUp))
  const second = outcome(call.join(Deadline.in(60_000, two.signal, time), giveUp))
  await time.advance(0)
  one.abort()
  t.equal(await first, 'left')
  t.equal(shared?.signal?.aborted, false)
  t.equal(call.joinable, true)
  two.abort()
  t.equal(await second, 'left')
  t.equal(shared?.signal?.aborted, true, 'nobody waits: the work is aborted')
  t.equal(call.joinable, false, 'and may not be joined again')
  t.throws(() => call.join(Deadline.in(1000, undefined, time), giveUp), /joined after every waiter had left/)
})

t.test('a waiter already gone or out of time never starts waiting; failures reach every waiter', async (t) => {
  const time = new ManualTime()
  const answer = held<string>()
  const call = new SharedCall(() => answer.promise, time)
  const gone = new AbortController()
  gone.abort()
  const keeper = outcome(call.join(Deadline.in(60_000, undefined, time), giveUp))
  t.equal(await outcome(call.join(Deadline.in(60_000, gone.signal, time), giveUp)), 'left')
  t.equal(await outcome(call.join(Deadline.in(0, undefined, time), giveUp)), 'timed out')
  answer.reject(new Error('Vault said no'))
  t.equal(await keeper, 'Vault said no')
})

t.test(
  'when the last waiter leaves on its deadline, the work is not joined again but ends on its own time',
  async (t) => {
    const time = new ManualTime()
    let shared: Deadline | undefined
    const answer = held<string>()
    const call = new SharedCall((d) => {
      shared = d
      return answer.promise
    }, time)
    const only = outcome(call.join(Deadline.in(1_000, undefined, time), giveUp))
    await time.advance(1_000 + SETTLE_GRACE_MS)
    t.equal(await only, 'timed out')
    t.equal(call.joinable, false, 'a new caller starts new work')
    t.equal(shared?.signal?.aborted, false, 'not aborted: its calls time out by themselves (and count as timeouts)')
    t.equal(shared?.remainingMs(), -SETTLE_GRACE_MS, "its deadline, the last waiter's, has passed")
    answer.resolve('late')
  },
)

t.test("the work failing at the last waiter's deadline: that failure, not 'timed out', is the answer", async (t) => {
  const time = new ManualTime()
  const answer = held<string>()
  const call = new SharedCall(() => answer.promise, time)
  const only = outcome(call.join(Deadline.in(1_000, undefined, time), giveUp))
  // The waiter's timer fires first; the work's own call timer, due at the same instant, a moment later.
  await time.advance(1_000)
  answer.reject(new Error('Vault is sealed'))
  t.equal(await only, 'Vault is sealed')
  t.equal(time.timers, 0, 'no give-up timer is left behind')
})

t.test("a follower whose deadline is a moment before the work's gets the work's failure", async (t) => {
  const time = new ManualTime()
  const answer = held<string>()
  const call = new SharedCall(() => answer.promise, time)
  const first = outcome(call.join(Deadline.in(1_000, undefined, time), giveUp))
  await time.advance(5)
  const second = outcome(call.join(Deadline.in(1_000, undefined, time), giveUp))
  // The work's calls end at the later deadline (the second's): the first's has passed by then.
  await time.advance(1_000)
  answer.reject(new Error('no active node (electing)'))
  t.equal(await first, 'no active node (electing)')
  t.equal(await second, 'no active node (electing)')
})

t.test('a moving deadline pushed back during the grace: the waiter waits on', async (t) => {
  const time = new ManualTime()
  const answer = held<string>()
  const call = new SharedCall(() => answer.promise, time)
  let expiresAt = time.now() + 1_000
  const moving = outcome(call.join(new Deadline(() => expiresAt, undefined, time), giveUp))
  await time.advance(1_000 + SETTLE_GRACE_MS / 2)
  // Another Mount joined the work this waiter stands for: its deadline moved.
  expiresAt = time.now() + 5_000
  await time.advance(SETTLE_GRACE_MS)
  answer.resolve('late but wanted')
  t.equal(await moving, 'value late but wanted')
})
