/**
 * Turns whatever node-vault / axios threw into a ProviderError whose message
 * a person can act on. Library errors carry the request configuration
 * (headers with the token, the login body with the JWT), so nothing of them is
 * kept but the HTTP status, Vault's `errors[]` and the socket error code.
 */
import { ProviderError, cutForScrub, scrub, type ErrorCode } from '../errors.js'

export const MAX_VAULT_ERROR_CHARS = 500
/** Vault's errors[] can echo pod input (a 200 KB roleName): at most this many entries are read... */
export const MAX_VAULT_ERRORS = 8
/** ...each cut to this length before any pattern runs on it. */
export const MAX_VAULT_ERROR_INPUT_CHARS = 4 * MAX_VAULT_ERROR_CHARS

export interface VaultFailure {
  /** HTTP status, or undefined when no answer came back. */
  status?: number
  /** Vault's own error strings, or the socket error code. */
  detail: string
  /** True when Vault's answer means it is sealed, standby or unreachable. */
  unavailable: boolean
}

const TIMEOUT_CODES = new Set(['ECONNABORTED', 'ETIMEDOUT', 'ERR_CANCELED'])

const TLS_HINTS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'Vault presents a self-signed certificate; set vaultCACertPath',
  SELF_SIGNED_CERT_IN_CHAIN: 'Vault certificate chain ends in an unknown CA; set vaultCACertPath',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'Vault certificate is not signed by a trusted CA; set vaultCACertPath',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'Vault certificate is not signed by a trusted CA; set vaultCACertPath',
  CERT_HAS_EXPIRED: 'Vault TLS certificate has expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'Vault certificate does not match the address; set vaultTLSServerName',
  EPROTO: 'TLS handshake failed (is the address http:// instead of https://?)',
}

/**
 * Vault wraps errors in Go's multierror text ("1 error occurred:\n\t* x\n\n");
 * a FailedMount event reads better as one line: "x". Linear on any input: the
 * count pattern starts only at the first digit of a run, and bullets are
 * stripped per line with an anchored pattern.
 */
export function oneLine(text: string): string {
  return text
    .replace(/(?<!\d)\d+ errors? occurred:/g, '')
    .split('\n')
    .map((line, i) => (i === 0 ? line : line.replace(/^\s*\*\s*/, '')))
    .map((part) => part.replace(/\s+/g, ' ').trim())
    .filter((part) => part !== '')
    .join('; ')
}

/** Vault's own error strings: bounded in number and length, scrubbed, each on one line. */
function vaultErrors(body: unknown): string[] {
  if (body === null || typeof body !== 'object') return []
  const errors = (body as { errors?: unknown }).errors
  if (!Array.isArray(errors)) return []
  return errors
    .slice(0, MAX_VAULT_ERRORS)
    .filter((e): e is string => typeof e === 'string')
    .map((e) => oneLine(scrub(cutForScrub(e, MAX_VAULT_ERROR_INPUT_CHARS))))
    .filter((e) => e !== '')
}

export function describeFailure(err: unknown): VaultFailure {
  const e = err as {
    response?: { statusCode?: unknown; body?: unknown }
    code?: unknown
    message?: unknown
  }
  if (e?.response && typeof e.response.statusCode === 'number') {
    const status = e.response.statusCode
    const errors = vaultErrors(e.response.body)
    let detail = errors.join('; ')
    if (detail.length > MAX_VAULT_ERROR_CHARS) detail = `${detail.slice(0, MAX_VAULT_ERROR_CHARS)}…`
    if (detail === '') detail = status === 503 ? 'Vault is sealed or in standby' : `no error text`
    return { status, detail, unavailable: status === 503 || status === 502 || status === 504 }
  }
  const code = typeof e?.code === 'string' ? e.code : undefined
  if (code && TIMEOUT_CODES.has(code)) return { detail: 'no answer in time', unavailable: true }
  if (code && TLS_HINTS[code]) return { detail: `${TLS_HINTS[code]} (${code})`, unavailable: true }
  if (code) return { detail: `connection failed (${code})`, unavailable: true }
  return { detail: 'request failed', unavailable: true }
}

export function isTimeout(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return typeof code === 'string' && TIMEOUT_CODES.has(code)
}

export function statusOf(err: unknown): number | undefined {
  const s = (err as { response?: { statusCode?: unknown } })?.response?.statusCode
  return typeof s === 'number' ? s : undefined
}

/** Which catalogue entry a Vault failure belongs to. `login` marks the auth call. */
export function classify(failure: VaultFailure, login: boolean): ErrorCode {
  const s = failure.status
  if (s === undefined) return 'VAULT_UNAVAILABLE'
  if (s === 401 || s === 403) return login ? 'VAULT_LOGIN_DENIED' : 'VAULT_PERMISSION_DENIED'
  if (s === 404) return 'VAULT_NOT_FOUND'
  if (s === 429) return 'VAULT_RATE_LIMITED'
  if (s === 400 || s === 405 || s === 422) return login ? 'VAULT_LOGIN_DENIED' : 'VAULT_BAD_REQUEST'
  if (s >= 500 || s === 412) return 'VAULT_UNAVAILABLE'
  return 'VAULT_BAD_RESPONSE'
}

export function vaultError(err: unknown, what: string, login: boolean): ProviderError {
  if (err instanceof ProviderError) return err
  const failure = describeFailure(err)
  const answer = failure.status === undefined ? failure.detail : `Vault answered ${failure.status}: ${failure.detail}`
  return new ProviderError(classify(failure, login), `${what}: ${answer}`)
}
