/**
 * "Nobody waits for this any more", said once: what a Mount's calls listen
 * to so that they stop when the driver gives up (see deadline.ts).
 *
 * A flag and a small set of callbacks, like an AbortController's signal but
 * cheaper to make on Node 20, where a Mount needs several (bench/NOTES.md);
 * a real AbortSignal is made from it only where a library needs one
 * (Deadline.signal).
 */

/** The listening side. */
export interface CancelSignal {
  readonly aborted: boolean
  /** Why, once aborted. */
  readonly reason: unknown
  /** `fn` runs once, synchronously, when it aborts; never if it already has (check `aborted` first). */
  addAbortListener(fn: () => void): void
  removeAbortListener(fn: () => void): void
}

/** Where a listener's error goes: thrown outside abort(), as an EventTarget reports it. */
function reportLater(err: unknown): void {
  queueMicrotask(() => {
    throw err
  })
}

export class Cancellation implements CancelSignal {
  private listeners: Set<() => void> | undefined
  private done = false
  private why: unknown = undefined
  private readonly onListenerError: (err: unknown) => void

  /** `onListenerError` is injected by tests. */
  constructor(onListenerError: (err: unknown) => void = reportLater) {
    this.onListenerError = onListenerError
  }

  get aborted(): boolean {
    return this.done
  }

  get reason(): unknown {
    return this.why
  }

  /**
   * Runs every listener once; a second call does nothing. A listener that throws does not stop the
   * others, and its error is thrown afterwards outside this call (reportLater).
   */
  abort(reason?: unknown): void {
    if (this.done) return
    this.done = true
    this.why = reason
    const listeners = this.listeners
    this.listeners = undefined
    if (listeners === undefined) return
    for (const fn of listeners) {
      try {
        fn()
      } catch (err) {
        this.onListenerError(err)
      }
    }
  }

  addAbortListener(fn: () => void): void {
    if (this.done) return
    ;(this.listeners ??= new Set()).add(fn)
  }

  removeAbortListener(fn: () => void): void {
    this.listeners?.delete(fn)
  }
}

/** For work nobody can call off (the CLI, tests): holds no listeners. */
export const NEVER_CANCELLED: CancelSignal = Object.freeze({
  aborted: false,
  reason: undefined,
  addAbortListener: (): void => undefined,
  removeAbortListener: (): void => undefined,
})

/** An AbortSignal as a CancelSignal (its listeners are the signal's own). */
class AbortSignalCancel implements CancelSignal {
  private readonly signal: AbortSignal

  constructor(signal: AbortSignal) {
    this.signal = signal
  }

  get aborted(): boolean {
    return this.signal.aborted
  }

  get reason(): unknown {
    return this.signal.reason as unknown
  }

  addAbortListener(fn: () => void): void {
    this.signal.addEventListener('abort', fn, { once: true })
  }

  removeAbortListener(fn: () => void): void {
    this.signal.removeEventListener('abort', fn)
  }
}

export function cancelSignalOf(signal: AbortSignal): CancelSignal {
  return new AbortSignalCancel(signal)
}
