import type { Test } from 'tap'

/**
 * Counts the AbortControllers made from now until the test ends (the global is swapped for a
 * counting subclass and put back at teardown): the Mount path must make none (~7 µs each on
 * Node 20, see src/util/cancellation.ts).
 */
export function countAbortControllers(t: Test): { readonly made: number } {
  const Original = globalThis.AbortController
  const counter = { made: 0 }
  globalThis.AbortController = class extends Original {
    constructor() {
      super()
      counter.made += 1
    }
  }
  t.teardown(() => {
    globalThis.AbortController = Original
  })
  return counter
}
