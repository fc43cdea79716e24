// Temporary directories that tests remove when they are done.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TempDir {
  path: string
  /** Removes the directory and everything in it; safe to call more than once. */
  cleanup(): Promise<void>
}

/** Creates a fresh directory under the OS temp dir (mode 0700). */
export async function makeTempDir(prefix = 'vcp-test-'): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix))
  return {
    path,
    async cleanup() {
      await rm(path, { recursive: true, force: true })
    },
  }
}

/**
 * A temp dir removed by the tap test's teardown. `t` is any object with a
 * `teardown(fn)` method (a tap Test).
 */
export async function tempDirFor(t: { teardown(fn: () => unknown): void }, prefix?: string): Promise<string> {
  const d = await makeTempDir(prefix)
  t.teardown(() => d.cleanup())
  return d.path
}
