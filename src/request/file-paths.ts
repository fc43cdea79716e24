/**
 * The driver's rules for file paths in a MountResponse (checked again here so
 * that the user is told which object is at fault, instead of the driver's
 * anonymous refusal after the fact).
 */
import { randomBytes } from 'node:crypto'

export const MAX_PATH_BYTES = 4096
export const MAX_ELEMENT_BYTES = 255

import { unprintableKind } from '../util/printable.js'

/** Returns why `path` is not an acceptable volume-relative file path, or undefined if it is. */
export function filePathProblem(path: string): string | undefined {
  if (path === '') return 'is empty'
  // Legal in Linux file names but never intended in a SecretProviderClass: they make `ls` output,
  // logs and events lie (a bidirectional override shows a name backwards).
  const unprintable = unprintableKind(path)
  if (unprintable === 'control') return 'contains a control character'
  if (unprintable === 'bidirectional') return 'contains a bidirectional-formatting character (U+202E and the like)'
  if (path.startsWith('/')) return 'is absolute; it must be relative to the volume'
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`
  const elements = path.split('/')
  if (elements.includes('..')) return 'contains a ".." element (path traversal)'
  if (elements[0]!.startsWith('..')) return 'starts with "..", which the driver reserves for its own files'
  if (path.endsWith('/')) return 'ends with "/"'
  if (elements.includes('')) return 'contains an empty element ("//")'
  if (elements.includes('.')) return 'contains a "." element'
  for (const element of elements) {
    if (Buffer.byteLength(element) > MAX_ELEMENT_BYTES) return `has an element longer than ${MAX_ELEMENT_BYTES} bytes`
  }
  return undefined
}

/**
 * Finds paths that cannot coexist in one volume: exact duplicates, and a file
 * whose path is a directory of another file (`a` and `a/b`).
 *
 * Linear in the total length of the paths: every path's prefixes ending before
 * a "/" are hashed incrementally (one pass over the path) and looked up among
 * the paths' own hashes; only a hash hit is compared as text. Building each
 * prefix as a string instead costs the square of a path's depth (120 paths of
 * 2,000 levels took seconds). The hash is seeded per call, so no fixed set of
 * names collides on purpose.
 */
export interface ConflictOptions {
  /** Paths that are directories (a `files` or `tls` object): a path inside one is no conflict. */
  isDirectory?: (path: string) => boolean
  /** Nested pairs reported at most (a chain of n nested names has n²/2 of them); default 16. */
  maxNested?: number
}

export function pathConflicts(
  paths: readonly string[],
  opts: ConflictOptions = {},
): { duplicates: string[]; nested: Array<[string, string]> } {
  const maxNested = opts.maxNested ?? 16
  const seen = new Set<string>()
  const duplicates = new Set<string>()
  for (const p of paths) {
    if (seen.has(p)) duplicates.add(p)
    seen.add(p)
  }
  // Without a "/" inside any path no file can be another's directory: the usual flat volume
  // costs neither the random seed (a getrandom call) nor the hashing.
  let anyNested = false
  for (const p of seen) {
    if (p.indexOf('/', 1) !== -1) {
      anyNested = true
      break
    }
  }
  if (!anyNested) return { duplicates: [...duplicates], nested: [] }
  const seed = (randomBytes(4).readUInt32LE(0) | 1) >>> 0
  const step = (h: number, code: number): number => (Math.imul(h ^ code, seed) + 0x9e3779b9) >>> 0
  /** The same hash over the whole string, and its length, as one safe integer key. */
  const keyOf = (h: number, length: number): number => h + length * 0x1_0000_0000
  const byKey = new Map<number, string[]>()
  for (const p of seen) {
    let h = 0
    for (let i = 0; i < p.length; i++) h = step(h, p.charCodeAt(i))
    const key = keyOf(h, p.length)
    const list = byKey.get(key)
    if (list) list.push(p)
    else byKey.set(key, [p])
  }
  const nested: Array<[string, string]> = []
  for (const p of seen) {
    if (nested.length >= maxNested) break
    let h = 0
    for (let i = 0; i < p.length && nested.length < maxNested; i++) {
      const code = p.charCodeAt(i)
      if (code === 0x2f /* "/" */ && i > 0) {
        const candidates = byKey.get(keyOf(h, i))
        const dir = candidates?.find((c) => p.startsWith(c))
        if (dir !== undefined && !opts.isDirectory?.(dir)) nested.push([dir, p])
      }
      h = step(h, code)
    }
  }
  return { duplicates: [...duplicates], nested }
}
