// Time that moves only when a test says so: the code's injected Time (src/util/time.ts), so that
// tests of renewals, deadlines, retries and probes never sleep.
import type { Time } from '../../src/util/time.js'

interface Pending {
  at: number
  seq: number
  fn: () => void
}

export class ManualTime implements Time {
  private nowMs: number
  private seq = 0
  private readonly pending = new Map<number, Pending>()

  constructor(start = 1_700_000_000_000) {
    this.nowMs = start
  }

  readonly now = (): number => this.nowMs

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq
    this.pending.set(id, { at: this.nowMs + Math.max(0, ms), seq: id, fn })
    return id
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number)
  }

  /** A timer like any other: it ends when advance() passes it, or at once when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const aborted = (): Error => new DOMException('The operation was aborted', 'AbortError')
      if (signal?.aborted) {
        reject(aborted())
        return
      }
      const onAbort = (): void => {
        this.clearTimeout(timer)
        reject(aborted())
      }
      const timer = this.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }, ms)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Timers waiting to fire. */
  get timers(): number {
    return this.pending.size
  }

  /**
   * Moves time forward by `ms`, firing due timers in order (each at its own time), and lets
   * the promise callbacks they start run before the next one fires.
   */
  async advance(ms: number): Promise<void> {
    const end = this.nowMs + ms
    for (;;) {
      await settle()
      const next = [...this.pending.values()].filter((p) => p.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0]
      if (!next) break
      this.pending.delete(next.seq)
      this.nowMs = Math.max(this.nowMs, next.at)
      next.fn()
    }
    this.nowMs = end
    await settle()
  }
}

/** Lets every queued promise callback (and the ones they queue) run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r))
}
