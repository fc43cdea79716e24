/**
 * Key paths: the syntax of `secretKeyPath` and of the names inside templates,
 * part of the SecretProviderClass language, so it lives with the request
 * parser (which checks every path before a Mount reads Vault); render/select.ts
 * follows parsed paths through data. Pure.
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
