// What the image runs, read from the Dockerfile itself so that the benchmark and the tests that
// measure or start the daemon "as the image runs it" (memory, stack traces, adversarial suites)
// follow any change made there: the ENTRYPOINT (node, its flags, the daemon's script).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../src/package-info.js'

/**
 * The ENTRYPOINT of the Dockerfile in `root` (default this package's) as argv: `node`, its flags,
 * the daemon's script relative to the WORKDIR. The last exec-form ENTRYPOINT line wins, as in Docker.
 */
export function imageEntrypoint(root = PACKAGE_ROOT): string[] {
  const lines = readFileSync(join(root, 'Dockerfile'), 'utf8').split('\n')
  const entrypoint = lines.filter((l) => l.startsWith('ENTRYPOINT ')).at(-1)
  const argv = entrypoint?.slice('ENTRYPOINT '.length).trim()
  if (argv === undefined || !argv.startsWith('[')) throw new Error(`${root}/Dockerfile: no exec-form ENTRYPOINT`)
  return JSON.parse(argv) as string[]
}

/** Node's flags in the image's ENTRYPOINT, between `node` and the script (the heap flags). */
export function imageNodeFlags(root = PACKAGE_ROOT): string[] {
  return imageEntrypoint(root)
    .slice(1, -1)
    .filter((a) => a.startsWith('--'))
}
