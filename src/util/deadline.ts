/**
 * A point in time by which a Mount must have answered, and the signal that
 * says its caller has gone (the driver cancelled the call, kubelet gave up).
 *
 * Every Vault and Kubernetes request of a Mount takes both: its timeout is
 * what is left of `expiresAt`, and `signal` aborts it as soon as nobody waits
 * for the answer any more. The clock is injected so that tests never sleep.
 */
import { setMaxListeners } from 'node:events'

export type Clock = () => number

/**
 * Listeners one Mount's signal may carry at once: each of its Vault calls in
 * flight (MOUNT_FETCH_CONCURRENCY) listens in the shared call it waits on, in
 * the retry wait and in the transport. Node warns of a leak past 10 by default;
 * the count here is bounded by the Mount's own concurrency, not a leak.
 */
export const MOUNT_SIGNAL_LISTENERS = 64

/** The signal a Deadline with no caller of its own carries (the CLI, tests): never aborted, one per Deadline. */
function neverAborted(): AbortSignal {
  const signal = new AbortController().signal
  setMaxListeners(MOUNT_SIGNAL_LISTENERS, signal)
  return signal
}

export class Deadline {
  /** When the time is up; read per use, since a shared call's deadline follows its waiters (see following()). */
  get expiresAt(): number {
    return this.expiry()
  }
  /** Aborted when the caller gave up; never aborted merely because time ran out (timeouts come from expiresAt). */
  readonly signal: AbortSignal
  private readonly clock: Clock
  private readonly expiry: () => number

  /** `expiresAt` is a point in time, or a function for a deadline whose end moves (see following()). */
  constructor(expiresAt: number | (() => number), signal: AbortSignal = neverAborted(), clock: Clock = Date.now) {
    this.expiry = typeof expiresAt === 'function' ? expiresAt : () => expiresAt
    this.signal = signal
    this.clock = clock
  }

  /**
   * A deadline whose end moves: work shared by several waiters (util/shared-call.ts)
   * lasts as long as the latest of them still waits.
   */
  static following(expiry: () => number, signal: AbortSignal, clock: Clock = Date.now): Deadline {
    return new Deadline(expiry, signal, clock)
  }

  static in(ms: number, signal?: AbortSignal, clock: Clock = Date.now): Deadline {
    return new Deadline(clock() + ms, signal, clock)
  }

  /** The earlier of this deadline and `now + ms`, with the same signal. */
  capped(ms: number): Deadline {
    return new Deadline(Math.min(this.expiresAt, this.clock() + ms), this.signal, this.clock)
  }

  remainingMs(): number {
    return this.expiresAt - this.clock()
  }

  expired(): boolean {
    return this.remainingMs() <= 0
  }

  /** The caller is gone: nothing done from now on can reach it. */
  get cancelled(): boolean {
    return this.signal.aborted
  }
}
