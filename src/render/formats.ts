/**
 * Data-only files: a secret's data (or a selected part of it) serialised as
 * JSON, YAML, .env or Java properties. Pure and deterministic: map keys are
 * sorted at every level and nothing depends on time or on the request, so an
 * unchanged secret gives byte-identical files.
 */
import { stringify } from 'yaml'
import { ProviderError, q } from '../errors.js'
import { canonicalJson, sortedCopy } from '../util/canonical-json.js'
import { isPlainObject } from '../util/plain-object.js'

export const DATA_FORMATS = ['json', 'yaml', 'env', 'properties'] as const
export type DataFormat = (typeof DATA_FORMATS)[number]

/** Strings as they are, every other JSON value as compact canonical JSON (as `secretKey` does). */
export function scalarText(value: unknown): string {
  return typeof value === 'string' ? value : canonicalJson(value)
}

/** `what` names the object in errors; values are never quoted. */
export function formatData(value: unknown, format: DataFormat, what: string): Buffer {
  switch (format) {
    case 'json':
      return Buffer.from(`${JSON.stringify(sortedCopy(value), null, 2)}\n`, 'utf8')
    case 'yaml':
      return Buffer.from(formatYaml(value), 'utf8')
    case 'env':
      return Buffer.from(formatEnv(topLevelMap(value, 'env', what), what), 'utf8')
    case 'properties':
      return Buffer.from(formatProperties(topLevelMap(value, 'properties', what)), 'utf8')
  }
}

function topLevelMap(value: unknown, format: DataFormat, what: string): Record<string, unknown> {
  if (!isPlainObject(value)) {
    const kind = Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`
    throw new ProviderError(
      'OUTPUT_FAILED',
      `${what}: format ${q(format)} needs a map of keys, but the value is ${kind}`,
    )
  }
  return value
}

/**
 * YAML 1.2 output whose scalars also read the same under YAML 1.1 (PyYAML,
 * Go's yaml.v2, SnakeYAML): `on`, `0644`, `1:20` and the like are quoted.
 * No line folding, so long values stay on one line.
 */
export function formatYaml(value: unknown): string {
  return stringify(value, {
    version: '1.2',
    compat: 'yaml-1.1',
    sortMapEntries: true,
    lineWidth: 0,
    minContentWidth: 0,
    aliasDuplicateObjects: false,
  })
}

/** Names every POSIX shell accepts as a variable (dotenv accepts these too). */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
/** Characters that are special inside shell double quotes (dotenv would keep their backslash). */
const SHELL_DQ_SPECIAL = /[$`"\\]/

/**
 * One `.env` line per key, sorted. Quoting is chosen so that POSIX shells
 * (`set -a; . ./file`) and dotenv libraries read the same value:
 * single quotes (literal in both) unless the value holds a `'` or ends in
 * `\`; then double quotes, if the value has none of `$ \` " \\`. A value that
 * fits neither, or holds a carriage return or NUL, has no common spelling and
 * is refused, naming the key.
 */
export function formatEnv(data: Record<string, unknown>, what: string): string {
  let out = ''
  for (const key of Object.keys(data).sort()) {
    if (!ENV_NAME.test(key)) {
      throw new ProviderError(
        'OUTPUT_FAILED',
        `${what}: format "env": key ${q(key, 60)} is not a shell variable name (letters, digits and "_", not starting with a digit)`,
      )
    }
    const value = scalarText(data[key])
    out += `${key}=${envQuote(value, key, what)}\n`
  }
  return out
}

function envQuote(value: string, key: string, what: string): string {
  if (value.includes('\r') || value.includes('\0')) {
    throw new ProviderError(
      'OUTPUT_FAILED',
      `${what}: format "env": the value of key ${q(key, 60)} contains a carriage return or NUL, which .env files cannot hold`,
    )
  }
  if (!value.includes("'") && !value.endsWith('\\')) return `'${value}'`
  if (!SHELL_DQ_SPECIAL.test(value)) return `"${value}"`
  throw new ProviderError(
    'OUTPUT_FAILED',
    `${what}: format "env": the value of key ${q(key, 60)} contains a single quote (or ends in a backslash) together with one of $ \` " \\; ` +
      'no .env quoting reads such a value the same in shells and dotenv (use format json or yaml, or format files)',
  )
}

/**
 * Java `.properties` (java.util.Properties.load), sorted, no date comment.
 * Everything outside printable ASCII is written as \uXXXX, so the file reads
 * the same through load(InputStream) (ISO-8859-1) and load(Reader) (UTF-8).
 */
export function formatProperties(data: Record<string, unknown>): string {
  let out = ''
  for (const key of Object.keys(data).sort()) {
    out += `${propertiesEscape(key, true)}=${propertiesEscape(scalarText(data[key]), false)}\n`
  }
  return out
}

function propertiesEscape(text: string, isKey: boolean): string {
  let out = ''
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    const code = text.charCodeAt(i)
    switch (c) {
      case '\\':
        out += '\\\\'
        continue
      case '\t':
        out += '\\t'
        continue
      case '\n':
        out += '\\n'
        continue
      case '\r':
        out += '\\r'
        continue
      case '\f':
        out += '\\f'
        continue
      case '=':
      case ':':
      case '#':
      case '!':
        out += `\\${c}`
        continue
      case ' ':
        out += isKey || i === 0 ? '\\ ' : ' '
        continue
    }
    if (code < 0x20 || code > 0x7e) out += `\\u${code.toString(16).padStart(4, '0')}`
    else out += c
  }
  return out
}
