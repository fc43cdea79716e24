/**
 * The driver's rules for file paths in a MountResponse (checked again here so
 * that the user is told which object is at fault, instead of the driver's
 * anonymous refusal after the fact).
 */

export const MAX_PATH_BYTES = 4096
export const MAX_ELEMENT_BYTES = 255

// Control characters are legal in Linux file names but never intended in a
// SecretProviderClass, and they make `ls` output and logs lie.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/

/** Returns why `path` is not an acceptable volume-relative file path, or undefined if it is. */
export function filePathProblem(path: string): string | undefined {
  if (path === '') return 'is empty'
  if (CONTROL_CHARS.test(path)) return 'contains a control character'
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
 */
export function pathConflicts(paths: readonly string[]): { duplicates: string[]; nested: Array<[string, string]> } {
  const seen = new Set<string>()
  const duplicates = new Set<string>()
  for (const p of paths) {
    if (seen.has(p)) duplicates.add(p)
    seen.add(p)
  }
  const nested: Array<[string, string]> = []
  for (const p of seen) {
    const parts = p.split('/')
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/')
      if (seen.has(dir)) nested.push([dir, p])
    }
  }
  return { duplicates: [...duplicates], nested }
}
