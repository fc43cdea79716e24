/** Where the package is installed and what it is called, from its package.json. */
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const RUNTIME_NAME = 'vault-csi-provider-ts'

// The same code runs from src/ (tests) and from dist/src/ (production):
// walk up to the first package.json rather than hard-coding the depth.
function findRoot(start: string): string {
  let dir = start
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return dir
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error('package.json not found above ' + start)
    dir = parent
  }
}

export const PACKAGE_ROOT = findRoot(path.dirname(fileURLToPath(import.meta.url)))

export const PACKAGE_VERSION: string = (
  JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version

export const PROTO_DIR = path.join(PACKAGE_ROOT, 'proto')
