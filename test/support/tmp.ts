// Temporary directories that tests remove when they are done.
import { mkdtempSync, rmSync } from 'node:fs'
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

/**
 * The directory of this test process under the OS temp dir, removed when the process exits
 * (test files run in processes of their own): for what helpers make on every call, such as
 * Mount targets, provider sockets and logs, which no test removes one by one. Set
 * VCP_KEEP_TEST_DIRS=1 to keep them for a look after a failure.
 */
let processDir: string | undefined
function ownProcessDir(): string {
  if (processDir === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'vcp-run-'))
    if (process.env.VCP_KEEP_TEST_DIRS !== '1')
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    processDir = dir
  }
  return processDir
}

/** A fresh directory inside this test process's own, which goes with the process. */
export function processTempDir(prefix: string): Promise<string> {
  return mkdtemp(join(ownProcessDir(), prefix))
}
