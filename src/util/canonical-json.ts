/**
 * Deterministic compact JSON: object keys sorted at every level, so that an
 * unchanged secret always renders to the same bytes (the driver rewrites
 * files, and users' watchers fire, only when bytes change).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortedCopy(value))
}

/**
 * A copy of a JSON value with the keys of every object in sorted order. The
 * copies have no prototype, so that a key named `__proto__` (a legal key in
 * a Vault secret, and an own property after JSON.parse) stays an ordinary key
 * instead of setting the copy's prototype and vanishing from the output.
 */
export function sortedCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedCopy)
  if (value !== null && typeof value === 'object') {
    const source = value as Record<string, unknown>
    const out = Object.create(null) as Record<string, unknown>
    for (const key of Object.keys(source).sort()) out[key] = sortedCopy(source[key])
    return out
  }
  return value
}
