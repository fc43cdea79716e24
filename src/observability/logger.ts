/**
 * The provider's logger: pino JSON lines, with redaction as a second line of
 * defence. The first line is that no code hands attributes, secrets, tokens,
 * request bodies or file contents to the logger at all.
 */
import { pino, type Logger, type DestinationStream } from 'pino'
import type { LogLevel } from '../config/config.js'
import { safeText, scrub } from '../errors.js'

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

const REDACT_PATHS = REDACTED_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`])

/** The longest pod-supplied string a log line carries (a roleName can be 200 KB). */
export const MAX_LOGGED_STRING_CHARS = 256

/** A pod-supplied string as it may be logged: scrubbed, then cut to MAX_LOGGED_STRING_CHARS. */
export function logString(value: string): string {
  return safeText(value, MAX_LOGGED_STRING_CHARS)
}

/** Errors are reduced to fields the provider controls; library errors can carry request config and headers. */
function safeErrorSerializer(err: unknown): Record<string, unknown> {
  if (err === null || typeof err !== 'object') return { message: scrub(String(err)) }
  const e = err as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown }
  return {
    type: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? scrub(e.message) : undefined,
    code: typeof e.code === 'string' || typeof e.code === 'number' ? e.code : undefined,
    stack: typeof e.stack === 'string' ? scrub(e.stack) : undefined,
  }
}

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level: level === 'off' ? 'silent' : level,
      base: { name: 'vault-csi-provider' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: safeErrorSerializer, error: safeErrorSerializer },
    },
    destination,
  )
}
