/**
 * Time as the provider's parts see it: the clock, timers and a wait. One real one is built by the
 * composition root (src/app.ts, systemTime) and handed down; tests hand down one that moves only
 * when they say (test/support/manual-time.ts), so that nothing in them sleeps.
 */
import { setTimeout as wait } from 'node:timers/promises'

export interface Time {
  /** Milliseconds since the epoch, as Date.now: deadlines, token and lease lifetimes. */
  now(): number
  /** Runs `fn` after `ms`; the timer alone never keeps the process alive (a waiter's give-up, a probe). */
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
  /** Resolves after `ms`; rejects at once (an AbortError) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
}

/** The system's clock and Node's timers. */
export function systemTime(): Time {
  return {
    now: Date.now,
    setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
    clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
    sleep: (ms, signal) => wait(ms, undefined, { signal }),
  }
}
