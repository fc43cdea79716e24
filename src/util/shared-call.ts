/**
 * Work shared by several waiters, each of which gives up on its own
 * deadline. The session's one login at a time and the secret cache's
 * coalesced identical reads run on it.
 *
 * - The work starts when the first waiter joins, and runs under a deadline
 *   of its own: the latest deadline among the waiters still there (it moves
 *   as waiters join and leave), with a signal aborted once none is left.
 * - A waiter leaves when its deadline passes or its signal aborts (its
 *   caller left): it is rejected with the error it chose, and the work goes
 *   on for the others. A follower therefore never fails for the leader's
 *   deadline, nor waits past its own (but for the grace below).
 * - When the last waiter leaves before the work is done, nobody may join
 *   the work any more (the owner starts a new one for the next caller). If
 *   that waiter's caller left, the work is aborted (its signal aborts, so
 *   its Vault calls stop at once). If its deadline passed, so has the work's
 *   (the latest of its waiters'): its calls end on their own time limits,
 *   and fail as timeouts, which is what they are (the breaker counts them).
 *   The signal only ever means "nobody is there any more", as a Deadline's
 *   signal does.
 * - A waiter gives the work SETTLE_GRACE_MS past its deadline before
 *   leaving: the Mounts sharing a login or a read start within moments of
 *   each other, the work's calls end at the latest of their deadlines, and
 *   the work's failure (a sealed node, an election) says more than "out of
 *   time". Timers that fire together run in no fixed order.
 *
 * Time is injected, so tests never sleep.
 */
import { Deadline } from './deadline.js'
import type { Time } from './time.js'

/** How long past its deadline a waiter waits for the work's own failure (well within the Mount's 2 s margin). */
export const SETTLE_GRACE_MS = 500

/** One caller waiting for the shared call, until its own deadline. */
interface Waiter {
  readonly deadline: Deadline
}

export class SharedCall<T> {
  private readonly work: (deadline: Deadline) => Promise<T>
  private readonly time: Time
  /** Made when the work starts; aborted when the last waiter's caller left before the work was done. */
  private controller: AbortController | undefined
  private readonly waiters = new Set<Waiter>()
  private latest = 0
  private outcome: Promise<T> | undefined
  private settled = false
  private abandoned = false

  constructor(work: (deadline: Deadline) => Promise<T>, time: Time) {
    this.work = work
    this.time = time
  }

  /** False once every waiter has left before the work finished: start a new one instead. */
  get joinable(): boolean {
    return !this.abandoned
  }

  /** Waiters still there. */
  get waiting(): number {
    return this.waiters.size
  }

  /** The work's own outcome, whoever waits (for owners that clean up after it). */
  get done(): Promise<unknown> {
    return (this.outcome ?? Promise.resolve()).then(
      () => undefined,
      () => undefined,
    )
  }

  private latestExpiry(): number {
    if (this.waiters.size === 0) return this.latest
    let max = Number.NEGATIVE_INFINITY
    for (const w of this.waiters) max = Math.max(max, w.deadline.expiresAt)
    this.latest = max
    return max
  }

  /**
   * Waits for the work (starting it if this is the first waiter) until it
   * settles, `deadline` passes or its caller leaves; `giveUp(cancelled)` is
   * the error this waiter gets when it leaves.
   */
  join(deadline: Deadline, giveUp: (cancelled: boolean) => Error): Promise<T> {
    if (!this.joinable) throw new Error('SharedCall: joined after every waiter had left')
    // A moving deadline (a shared call waiting on another) is followed as it moves: read per use.
    const waiter: Waiter = { deadline }
    this.waiters.add(waiter)
    if (this.outcome === undefined) {
      this.controller = new AbortController()
      const shared = new Deadline(() => this.latestExpiry(), this.controller.signal, this.time)
      this.outcome = Promise.resolve().then(() => this.work(shared))
      this.outcome.then(
        () => (this.settled = true),
        () => (this.settled = true),
      )
    }
    const outcome = this.outcome
    return new Promise<T>((resolve, reject) => {
      let timer: unknown
      let finished = false
      const finish = (): boolean => {
        if (finished) return false
        finished = true
        this.time.clearTimeout(timer)
        deadline.signal?.removeEventListener('abort', onAbort)
        // Remembered before the waiter goes: with nobody left, the work's deadline stays the last one it had.
        this.latestExpiry()
        this.waiters.delete(waiter)
        return true
      }
      const leave = (cancelled: boolean): void => {
        if (!finish()) return
        if (this.waiters.size === 0 && !this.settled) {
          this.abandoned = true
          if (cancelled) this.controller?.abort(new Error('every waiter left'))
        }
        reject(giveUp(cancelled))
      }
      const onAbort = (): void => leave(true)
      const arm = (fired: boolean): void => {
        const left = deadline.remainingMs()
        if (left > 0) {
          // Re-checked when it fires: a moving deadline may have been pushed back meanwhile.
          timer = this.time.setTimeout(() => arm(true), left)
        } else if (fired) {
          // The work ends now on its own time limits: a moment for its own failure to arrive (unless
          // this waiter's moving deadline is pushed back meanwhile: then it waits again).
          const after = (): void => (deadline.remainingMs() > 0 ? arm(true) : leave(false))
          timer = this.time.setTimeout(after, SETTLE_GRACE_MS)
        } else leave(false)
      }
      if (deadline.cancelled) {
        leave(true)
        return
      }
      deadline.signal?.addEventListener('abort', onAbort)
      arm(false)
      outcome.then(
        (value) => {
          if (finish()) resolve(value)
        },
        (err: unknown) => {
          if (finish()) reject(err)
        },
      )
    })
  }
}
