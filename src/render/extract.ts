/**
 * From a Vault response to what an object reads: one key of the secret, the
 * secret's data without the envelope, or the whole response. Pure.
 */
import { ProviderError, q } from '../errors.js'
import { canonicalJson } from '../util/canonical-json.js'
import { isPlainObject } from '../util/plain-object.js'

const MAX_LISTED_KEYS = 20

/** Fields of the response envelope that differ on every read of the same secret. */
const PER_REQUEST_FIELDS = ['request_id'] as const

function listKeys(obj: Record<string, unknown>): string {
  const keys = Object.keys(obj).sort()
  if (keys.length === 0) return 'the secret has no keys'
  const shown = keys.slice(0, MAX_LISTED_KEYS).map((k) => q(k, 60))
  const more = keys.length > MAX_LISTED_KEYS ? `, and ${keys.length - MAX_LISTED_KEYS} more` : ''
  return `keys present: ${shown.join(', ')}${more}`
}

function responseObject(body: unknown, what: string): Record<string, unknown> {
  if (body === '' || body === undefined || body === null) {
    throw new ProviderError(
      'VAULT_BAD_RESPONSE',
      `${what}: Vault answered with an empty body (no secret at this path?)`,
    )
  }
  if (!isPlainObject(body)) {
    throw new ProviderError('VAULT_BAD_RESPONSE', `${what}: Vault's answer is not a JSON object`)
  }
  return body
}

/** The response's `data`, or an error saying why there is none. */
export function responseData(body: unknown, what: string): Record<string, unknown> {
  const data = responseObject(body, what).data
  if (!isPlainObject(data)) {
    throw new ProviderError('VAULT_BAD_RESPONSE', `${what}: Vault's answer has no "data" object`)
  }
  return data
}

/**
 * The value of `secretKey`: inside `data.data` for KV v2 responses, else in
 * `data`. Strings are returned as they are; other JSON values as compact JSON.
 */
export function extractKey(body: unknown, secretKey: string, what: string): { value: string; isString: boolean } {
  const scope = secretData(body, what, () => `no key ${q(secretKey)} to read`)
  if (!Object.prototype.hasOwnProperty.call(scope, secretKey)) {
    throw new ProviderError('SECRET_KEY_NOT_FOUND', `${what}: secretKey ${q(secretKey)} not found; ${listKeys(scope)}`)
  }
  const value = scope[secretKey]
  if (typeof value === 'string') return { value, isString: true }
  return { value: canonicalJson(value), isString: false }
}

/**
 * The secret's own data, without the response envelope: `data.data` for KV v2
 * responses, else `data` (KV v1, PKI, database credentials...). A deleted or
 * destroyed KV v2 version is an error; `missing` says what could not be read
 * (a function: made only for the error, not on every read).
 */
export function secretData(
  body: unknown,
  what: string,
  missing: () => string = () => 'no data to read',
): Record<string, unknown> {
  const data = responseData(body, what)
  if (isPlainObject(data.data)) return data.data
  if (data.data === null && isPlainObject(data.metadata)) {
    const meta = data.metadata
    const state = meta.destroyed === true ? 'destroyed' : meta.deletion_time ? 'deleted' : 'empty'
    throw new ProviderError('VAULT_NOT_FOUND', `${what}: this KV version is ${state}; ${missing()}`)
  }
  return data
}

/** The whole response as JSON, minus per-request fields, so unchanged secrets give identical bytes. */
export function wholeResponse(body: unknown, what: string): string {
  const copy: Record<string, unknown> = { ...responseObject(body, what) }
  for (const field of PER_REQUEST_FIELDS) {
    if (field in copy) copy[field] = ''
  }
  return canonicalJson(copy)
}
