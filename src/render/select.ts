/**
 * Key paths: `secretKeyPath` and the names inside templates. Pure.
 *
 * Syntax: `a.b[0].c`, with bracket quoting for keys that contain dots,
 * brackets or start with a digit: `["tls.crt"]`, `a['x.y'].z`. A bare
 * bracketed integer indexes an array; every other step names a map key.
 * Inside quotes, `\` escapes the quote character and `\` itself.
 */
import { q } from '../errors.js'

/** A map key (string) or an array index (number). */
export type KeyStep = string | number

export const MAX_KEY_PATH_LENGTH = 1024
const MAX_LISTED_KEYS = 20

/** Thrown by parseKeyPath: `message` says what is wrong and where (0-based character offset). */
export class KeyPathSyntaxError extends Error {}

export function parseKeyPath(text: string): KeyStep[] {
  if (text.length === 0) throw new KeyPathSyntaxError('is empty')
  if (text.length > MAX_KEY_PATH_LENGTH)
    throw new KeyPathSyntaxError(`is longer than ${MAX_KEY_PATH_LENGTH} characters`)
  const steps: KeyStep[] = []
  let i = 0
  const fail = (what: string): never => {
    throw new KeyPathSyntaxError(`${what} at character ${i + 1}`)
  }
  const readName = (): string => {
    const start = i
    while (i < text.length && text[i] !== '.' && text[i] !== '[' && text[i] !== ']') i++
    if (i === start) fail('expects a key name')
    return text.slice(start, i)
  }
  const readBracket = (): KeyStep => {
    i++ // '['
    const quote = text[i]
    if (quote === '"' || quote === "'") {
      i++
      let out = ''
      for (;;) {
        if (i >= text.length) fail(`has an unclosed ${quote}`)
        const c = text[i]!
        if (c === '\\') {
          const next = text[i + 1]
          if (next !== quote && next !== '\\') fail(`has a "\\" that escapes neither ${quote} nor "\\"`)
          out += next
          i += 2
          continue
        }
        if (c === quote) break
        out += c
        i++
      }
      i++ // closing quote
      if (text[i] !== ']') fail('expects "]" after the quoted key')
      i++
      return out
    }
    const start = i
    while (i < text.length && text[i]! >= '0' && text[i]! <= '9') i++
    const digits = text.slice(start, i)
    if (digits === '' || (digits.length > 1 && digits.startsWith('0')) || text[i] !== ']') {
      fail('expects an array index such as [0] or a quoted key such as ["a.b"] inside [ ]')
    }
    i++
    const index = Number(digits)
    if (!Number.isSafeInteger(index)) fail('has an array index that is too large')
    return index
  }

  steps.push(text[0] === '[' ? readBracket() : readName())
  while (i < text.length) {
    const c = text[i]
    if (c === '.') {
      i++
      steps.push(readName())
    } else if (c === '[') {
      steps.push(readBracket())
    } else {
      fail(`has an unexpected ${q(c!)}`)
    }
  }
  return steps
}

const PLAIN_KEY = /^[^.[\]"'\d][^.[\]]*$/

/** The canonical text of a path, for messages: `a.b[0]["x.y"]`. */
export function formatKeyPath(steps: readonly KeyStep[]): string {
  let out = ''
  steps.forEach((step, n) => {
    if (typeof step === 'number') out += `[${step}]`
    else if (PLAIN_KEY.test(step)) out += n === 0 ? step : `.${step}`
    else out += `[${JSON.stringify(step)}]`
  })
  return out
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

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
