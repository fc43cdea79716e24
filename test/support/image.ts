// What the image runs, read from the Dockerfile itself so that the benchmark and the tests that
// measure "as the image runs it" (memory, adversarial suites) follow any change made there: the
// ENTRYPOINT (node, its V8 flags, the daemon's script) and the runtime stage's ENV lines.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../src/package-info.js'

/** The image's ENTRYPOINT (Dockerfile) as argv: `node`, V8 flags, the daemon's script. */
export function imageEntrypoint(): string[] {
  const dockerfile = readFileSync(join(PACKAGE_ROOT, 'Dockerfile'), 'utf8')
  const m = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)
  if (!m) throw new Error('Dockerfile: no exec-form ENTRYPOINT')
  return JSON.parse(m[1]!) as string[]
}

/**
 * The arguments the image's build fills V8's code caches with: the runtime stage's RUN after its
 * USER runs the ENTRYPOINT's node and script, followed by these (`-fill-code-cache`).
 */
export function imageCacheFill(): string[] {
  const dockerfile = readFileSync(join(PACKAGE_ROOT, 'Dockerfile'), 'utf8')
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))
  const afterUser = runtime.slice(runtime.search(/^USER\s/m))
  const m = /^RUN\s+(\[.*\])\s*$/m.exec(afterUser)
  if (!m) throw new Error('Dockerfile: no exec-form RUN after the runtime stage’s USER')
  const run = JSON.parse(m[1]!) as string[]
  const entrypoint = imageEntrypoint()
  if (run.slice(0, entrypoint.length).join('\0') !== entrypoint.join('\0')) {
    throw new Error('Dockerfile: the RUN after USER does not run the ENTRYPOINT')
  }
  return run.slice(entrypoint.length)
}

/** The value of an `ENV NAME=value` line of the Dockerfile's runtime stage (the last one), or undefined. */
export function imageEnv(name: string): string | undefined {
  const dockerfile = readFileSync(join(PACKAGE_ROOT, 'Dockerfile'), 'utf8')
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))
  return [...runtime.matchAll(/^ENV\s+(\w+)=(\S+)\s*$/gm)].filter((m) => m[1] === name).at(-1)?.[2]
}

/** The V8 flags the image runs the daemon with: the Dockerfile's ENTRYPOINT, between `node` and the script. */
export function imageNodeFlags(): string[] {
  return imageEntrypoint()
    .slice(1)
    .filter((a) => a.startsWith('--') && a !== '--enable-source-maps')
}
