/**
 * A point in time by which a Mount must have answered, and the signal that
 * says its caller has gone (the driver cancelled the call, kubelet gave up).
 *
 * Every Vault and Kubernetes request of a Mount takes both: its timeout is
 * what is left of `expiresAt`, and `cancel` (`signal` for libraries that take
 * an AbortSignal) aborts it as soon as nobody waits for the answer any more.
 * The clock is injected so that tests never sleep.
 */
import { setMaxListeners } from 'node:events'
import { NEVER_CANCELLED, cancelSignalOf, type CancelSignal } from './cancellation.js'

export type Clock = () => number

/**
 * Listeners one Mount's signal may carry at once: each of its Vault calls in
 * flight (MOUNT_FETCH_CONCURRENCY) listens in the shared call it waits on, in
 * the retry wait and in the transport. Node warns of a leak past 10 by default;
 * the count here is bounded by the Mount's own concurrency, not a leak.
 */
export const MOUNT_SIGNAL_LISTENERS = 64

/** An AbortSignal that follows `cancel`, with room for a Mount's listeners. */
function abortSignalFollowing(cancel: CancelSignal): AbortSignal {
  const controller = new AbortController()
  setMaxListeners(MOUNT_SIGNAL_LISTENERS, controller.signal)
  if (cancel.aborted) controller.abort(cancel.reason)
  else cancel.addAbortListener(() => controller.abort(cancel.reason))
  return controller.signal
}

export class Deadline {
  /** When the time is up; read per use, since a shared call's deadline follows its waiters (see following()). */
  get expiresAt(): number {
    return this.expiry()
  }
  /**
   * Aborted when the caller gave up; never aborted merely because time ran out (timeouts come from
   * expiresAt). What the Mount's own layers listen to (cheap: util/cancellation.ts).
   */
  readonly cancel: CancelSignal
  /** The caller's own AbortSignal, or the one made from `cancel` at the first read of `signal`. */
  private abortSignal: AbortSignal | undefined
  private readonly given: AbortSignal | CancelSignal
  private readonly clock: Clock
  private readonly expiry: () => number

  /**
   * `expiresAt` is a point in time, or a function for a deadline whose end moves (see following());
   * `signal` says when the caller gave up (none: never).
   */
  constructor(
    expiresAt: number | (() => number),
    signal: AbortSignal | CancelSignal = NEVER_CANCELLED,
    clock: Clock = Date.now,
  ) {
    this.expiry = typeof expiresAt === 'function' ? expiresAt : () => expiresAt
    this.given = signal
    if (signal instanceof AbortSignal) {
      this.abortSignal = signal
      this.cancel = cancelSignalOf(signal)
    } else this.cancel = signal
    this.clock = clock
  }

  /**
   * The same as an AbortSignal, for libraries that take one (the Kubernetes client's requests): made
   * at the first read, one per Deadline, so listeners never pile up on an object shared by Mounts.
   */
  get signal(): AbortSignal {
    return (this.abortSignal ??= abortSignalFollowing(this.cancel))
  }

  /**
   * A deadline whose end moves: work shared by several waiters (util/shared-call.ts)
   * lasts as long as the latest of them still waits.
   */
  static following(expiry: () => number, cancel: CancelSignal, clock: Clock = Date.now): Deadline {
    return new Deadline(expiry, cancel, clock)
  }

  static in(ms: number, signal?: AbortSignal | CancelSignal, clock: Clock = Date.now): Deadline {
    return new Deadline(clock() + ms, signal, clock)
  }

  /** The earlier of this deadline and `now + ms`, with the same signal. */
  capped(ms: number): Deadline {
    return new Deadline(Math.min(this.expiresAt, this.clock() + ms), this.given, this.clock)
  }

  remainingMs(): number {
    return this.expiresAt - this.clock()
  }

  expired(): boolean {
    return this.remainingMs() <= 0
  }

  /** The caller is gone: nothing done from now on can reach it. */
  get cancelled(): boolean {
    return this.cancel.aborted
  }
}
