/**
 * Following key paths (`secretKeyPath`, the names inside templates) through
 * a secret's data; their syntax is request/key-path.ts. Pure.
 */
import { q } from '../errors.js'
import { formatKeyPath, type KeyStep } from '../request/key-path.js'
import { isPlainObject } from '../util/plain-object.js'

const MAX_LISTED_KEYS = 20

/** What exists at a level, for a "not found" message: key names or array size, never values. */
export function describeLevel(value: unknown): string {
  if (Array.isArray(value)) return `it is an array of ${value.length} item${value.length === 1 ? '' : 's'}`
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort()
    if (keys.length === 0) return 'it has no keys'
    const shown = keys.slice(0, MAX_LISTED_KEYS).map((k) => q(k, 60))
    const more = keys.length > MAX_LISTED_KEYS ? `, and ${keys.length - MAX_LISTED_KEYS} more` : ''
    return `keys present: ${shown.join(', ')}${more}`
  }
  if (value === null) return 'it is null'
  return `it is a ${typeof value}, which has no keys`
}

export type SelectResult = { ok: true; value: unknown } | { ok: false; problem: string }

/**
 * Follows `steps` from `root`, own properties only. On failure, `problem`
 * names the step that was not found, where the walk stopped, and what exists
 * there (key names, never values).
 */
export function selectPath(root: unknown, steps: readonly KeyStep[]): SelectResult {
  let current = root
  for (let n = 0; n < steps.length; n++) {
    const step = steps[n]!
    const where = n === 0 ? 'at the top level' : `at ${formatKeyPath(steps.slice(0, n))}`
    if (typeof step === 'number') {
      if (!Array.isArray(current)) {
        const hint = isPlainObject(current) ? ` (for a key named "${step}" write ["${step}"])` : ''
        return { ok: false, problem: `[${step}] indexes an array, but ${where} ${describeLevel(current)}${hint}` }
      }
      if (step >= current.length) return { ok: false, problem: `no item [${step}] ${where}; ${describeLevel(current)}` }
      current = current[step]
      continue
    }
    if (!isPlainObject(current) || !Object.prototype.hasOwnProperty.call(current, step)) {
      const hint = Array.isArray(current) && /^\d+$/.test(step) ? ` (write [${step}] to index it)` : ''
      return { ok: false, problem: `no key ${q(step, 60)} ${where}; ${describeLevel(current)}${hint}` }
    }
    current = current[step]
  }
  return { ok: true, value: current }
}
