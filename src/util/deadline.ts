/**
 * A point in time by which a Mount must have answered, and the signal that
 * says its caller has gone (the driver cancelled the call, kubelet gave up).
 *
 * Every Vault and Kubernetes request of a Mount takes both: its timeout is
 * what is left of `expiresAt`, and `signal` aborts it as soon as nobody waits
 * for the answer any more. Time is injected so that tests never sleep.
 */
import type { Time } from './time.js'

export class Deadline {
  /** When the time is up; read per use, since a shared call's deadline follows its waiters (util/shared-call.ts). */
  get expiresAt(): number {
    return this.expiry()
  }
  /**
   * Aborted when the caller gave up; never aborted merely because time ran out (timeouts come from
   * expiresAt). None: nobody can call the work off (the CLI, a handover).
   */
  readonly signal: AbortSignal | undefined
  private readonly time: Pick<Time, 'now'>
  private readonly expiry: () => number

  /**
   * `expiresAt` is a point in time, or a function for a deadline whose end moves (a shared call's);
   * `signal` says when the caller gave up.
   */
  constructor(expiresAt: number | (() => number), signal: AbortSignal | undefined, time: Pick<Time, 'now'>) {
    this.expiry = typeof expiresAt === 'function' ? expiresAt : () => expiresAt
    this.signal = signal
    this.time = time
  }

  static in(ms: number, signal: AbortSignal | undefined, time: Pick<Time, 'now'>): Deadline {
    return new Deadline(time.now() + ms, signal, time)
  }

  remainingMs(): number {
    return this.expiresAt - this.time.now()
  }

  expired(): boolean {
    return this.remainingMs() <= 0
  }

  /** The caller is gone: nothing done from now on can reach it. */
  get cancelled(): boolean {
    return this.signal?.aborted === true
  }
}
