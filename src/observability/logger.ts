/**
 * The provider's logger: pino JSON lines, with redaction as a second line of
 * defence. The first line is that no code hands attributes, secrets, tokens,
 * request bodies or file contents to the logger at all.
 */
import { pino, type Logger, type DestinationStream } from 'pino'
import type { LogLevel } from '../config/config.js'
import { safeText, scrub } from '../errors.js'
import type { StackMapper } from './stack-map.js'

export type { Logger }

/** Keys that must never reach a log line, at any depth pino's redaction reaches. */
export const REDACTED_KEYS = [
  'attributes',
  'secrets',
  'token',
  'jwt',
  'client_token',
  'contents',
  'data',
  'headers',
  'config',
  'request',
  'response',
  'body',
  'secretArgs',
  'password',
]

/** How deep redaction looks: a key at the top of a log object, one level down, or two (`k`, `*.k`, `*.*.k`). */
export const REDACT_DEPTH = 3

/** What a redacted value becomes. */
export const REDACTED = '[redacted]'

const REDACTED_SET: ReadonlySet<string> = new Set(REDACTED_KEYS)
const NONE: ReadonlySet<string> = new Set()

/** Plain objects, arrays and errors: what JSON shows by its keys (a Buffer or a Map is not walked key by key). */
function walkable(v: unknown): v is object {
  if (v === null || typeof v !== 'object') return false
  const proto: unknown = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null || Array.isArray(v) || v instanceof Error
}

/**
 * `value` with every REDACTED_KEYS entry within `depth` levels replaced by
 * REDACTED: the same object when nothing matches (the usual case: no copy),
 * otherwise copies of just the objects on the way to a match.
 *
 * Why not pino's `redact` option: it takes fixed paths, and a key to hide may
 * sit at any depth; wildcard paths for every depth cost more than the line
 * (bench/NOTES.md). This walk checks each key once against a Set. Top-level keys
 * with a serializer (`err`, `error`: `serialized`) are left to it; it runs
 * after this and keeps only fields the provider controls (an Error's own
 * message and stack are not enumerable: a copy here would lose them).
 */
export function redactKeys(value: object, depth = REDACT_DEPTH, serialized: ReadonlySet<string> = NONE): object {
  if (Array.isArray(value)) {
    let out: unknown[] | undefined
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i]
      const next = depth > 1 && walkable(v) ? redactKeys(v, depth - 1) : v
      if (next !== v) (out ??= [...value])[i] = next
    }
    return out ?? value
  }
  let out: Record<string, unknown> | undefined
  const record = value as Record<string, unknown>
  for (const key of Object.keys(record)) {
    const v = record[key]
    let next = v
    if (REDACTED_SET.has(key)) next = REDACTED
    else if (depth > 1 && walkable(v) && !serialized.has(key)) next = redactKeys(v, depth - 1)
    if (next !== v) (out ??= { ...record })[key] = next
  }
  return out ?? value
}

/** The longest pod-supplied string a log line carries (a roleName can be 200 KB). */
export const MAX_LOGGED_STRING_CHARS = 256

/** A pod-supplied string as it may be logged: scrubbed, then cut to MAX_LOGGED_STRING_CHARS. */
export function logString(value: string): string {
  return safeText(value, MAX_LOGGED_STRING_CHARS)
}

/**
 * Errors are reduced to fields the provider controls; library errors can carry request config and headers.
 * `mapStack` leads the stack's frames back to src/ (observability/stack-map.ts).
 */
function safeErrorSerializer(mapStack: StackMapper): (err: unknown) => Record<string, unknown> {
  return (err) => {
    if (err === null || typeof err !== 'object') return { message: scrub(String(err)) }
    const e = err as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown }
    return {
      type: typeof e.name === 'string' ? e.name : 'Error',
      message: typeof e.message === 'string' ? scrub(e.message) : undefined,
      code: typeof e.code === 'string' || typeof e.code === 'number' ? e.code : undefined,
      stack: typeof e.stack === 'string' ? scrub(mapStack(e.stack)) : undefined,
    }
  }
}

const SERIALIZED_KEYS: ReadonlySet<string> = new Set(['err', 'error'])

export function createLogger(
  level: LogLevel,
  destination?: DestinationStream,
  mapStack: StackMapper = (stack) => stack,
): Logger {
  const serializer = safeErrorSerializer(mapStack)
  return pino(
    {
      level: level === 'off' ? 'silent' : level,
      base: { name: 'vault-csi-provider' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        bindings: (bindings) => redactKeys(bindings) as Record<string, unknown>,
        log: (object) => redactKeys(object, REDACT_DEPTH, SERIALIZED_KEYS) as Record<string, unknown>,
      },
      serializers: { err: serializer, error: serializer },
    },
    destination,
  )
}
