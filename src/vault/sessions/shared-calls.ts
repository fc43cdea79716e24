/**
 * Work in flight by key, each shared by its waiters (util/shared-call.ts): a session's one login at
 * a time, and its identical reads. A caller joins the work under its key, or starts it when none is
 * there or the last one was abandoned (every waiter left before it finished).
 */
import type { Deadline } from '../../util/deadline.js'
import { SharedCall } from '../../util/shared-call.js'
import type { Time } from '../../util/time.js'

export interface Joined<T> {
  /** This caller started the work (the others joined it). */
  led: boolean
  result: Promise<T>
}

export class SharedCalls<T> {
  private readonly inflight = new Map<string, SharedCall<T>>()
  private readonly time: Time

  constructor(time: Time) {
    this.time = time
  }

  /**
   * Waits for the work under `key` until it settles or this caller's `deadline` passes (or its
   * caller leaves): then `giveUp(cancelled)` is its error, and the work goes on for the others.
   * `work` runs under the latest deadline of those still waiting, when this caller starts it.
   */
  join(
    key: string,
    deadline: Deadline,
    giveUp: (cancelled: boolean) => Error,
    work: (shared: Deadline) => Promise<T>,
  ): Joined<T> {
    const pending = this.inflight.get(key)
    if (pending?.joinable) return { led: false, result: pending.join(deadline, giveUp) }
    const call = new SharedCall(work, this.time)
    this.inflight.set(key, call)
    const result = call.join(deadline, giveUp)
    void call.done.then(() => {
      if (this.inflight.get(key) === call) this.inflight.delete(key)
    })
    return { led: true, result }
  }
}
