/**
 * The syntax of `template`: a Mustache template whose names use the key-path
 * syntax (request/key-path.ts) and `@objectName` references. Part of the
 * SecretProviderClass language, so the request parser checks every template
 * here before a Mount reads Vault; render/template.ts renders parsed
 * templates. Pure.
 */
import Mustache from 'mustache'
import { q } from '../errors.js'
import { KeyPathSyntaxError, parseKeyPath, type KeyStep } from './key-path.js'

export const MAX_TEMPLATE_LENGTH = 64 * 1024
export class TemplateSyntaxError extends Error {}

export type Token = [string, string, number, number, Token[]?, number?]

export interface ParsedName {
  /** `@name`: the objectName referenced; undefined for names in the object's own data. */
  object?: string
  /** Empty for `.` (the current item) and for `@name` alone. */
  steps: KeyStep[]
  text: string
}

export function parseName(raw: string): ParsedName {
  const text = raw.trim()
  if (text === '.') return { steps: [], text }
  try {
    if (text.startsWith('@')) {
      const steps = parseKeyPath(text.slice(1))
      const first = steps[0]
      if (typeof first !== 'string') throw new KeyPathSyntaxError('must start with an objectName after "@"')
      return { object: first, steps: steps.slice(1), text }
    }
    return { steps: parseKeyPath(text), text }
  } catch (err) {
    if (err instanceof KeyPathSyntaxError) throw new TemplateSyntaxError(`name ${q(text, 80)} ${err.message}`)
    throw err
  }
}

export function parseTokens(template: string): Token[] {
  if (template.length > MAX_TEMPLATE_LENGTH) {
    throw new TemplateSyntaxError(`is longer than ${MAX_TEMPLATE_LENGTH} characters`)
  }
  try {
    // A Writer of its own: the library's default writer caches every template it sees.
    return new Mustache.Writer().parse(template) as Token[]
  } catch (err) {
    throw new TemplateSyntaxError(
      `is not a valid Mustache template: ${err instanceof Error ? err.message : 'parse error'}`,
    )
  }
}

/**
 * Checks a template without data: syntax, names, no partials. Returns the
 * objectNames it references with `@`, in order of first use.
 */
export function checkTemplate(template: string): string[] {
  const refs = new Set<string>()
  const walk = (tokens: Token[]): void => {
    for (const token of tokens) {
      const [type, value] = token
      if (type === '>') throw new TemplateSyntaxError(`uses a partial ({{> ${value.trim()}}}), which is not supported`)
      if (type === 'name' || type === '&' || type === '#' || type === '^') {
        const name = parseName(value)
        if (name.object !== undefined) refs.add(name.object)
      }
      if ((type === '#' || type === '^') && token[4]) walk(token[4])
    }
  }
  walk(parseTokens(template))
  return [...refs]
}
