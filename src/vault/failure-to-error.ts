/**
 * Turns a failed Vault call into a ProviderError whose message a person can
 * act on, with the call, Vault's status, the proxy and the attempts as fields
 * (src/errors.ts composes the line). The transport's typed errors
 * (call-errors.ts) carry only the HTTP status, Vault's bounded and scrubbed
 * `errors[]` and the socket code: never the request (headers with the token,
 * the login body with the JWT).
 */
import { ProviderError, type ErrorCode, type ErrorFields } from '../errors.js'
import {
  MAX_VAULT_ERROR_CHARS,
  VaultCallAborted,
  VaultConnectionError,
  VaultHttpError,
  VaultRedirect,
  type NodeCondition,
} from './transport/call-errors.js'
import { ProxyConnectionError } from './transport/proxy-connection.js'
import { tlsHint } from './transport/tls-failures.js'

export { MAX_VAULT_ERROR_CHARS, oneLine, statusOf, isTimeout } from './transport/call-errors.js'

export interface VaultFailure {
  /** HTTP status, or undefined when no answer came back. */
  status?: number
  /** Vault's own error strings, or the socket error code. */
  detail: string
  /** True when Vault's answer means it is sealed, standby or unreachable. */
  unavailable: boolean
  /** One node's answer (a sealed node, a standby with no active node, or its redirect): not the cluster's. */
  node?: NodeCondition | 'redirect'
}

/** What one node's answer says about the cluster, as people read it. */
function nodeDetail(node: NodeCondition | 'redirect', answer: string): string {
  if (node === 'sealed') return `Vault is sealed: the node ${answer}`
  return `the Vault cluster has no active node to answer (electing a leader): a standby ${answer}`
}

export function describeFailure(err: unknown): VaultFailure {
  if (err instanceof VaultRedirect) {
    if (err.status === 308) return { status: 308, detail: `308 with a redirect to ${err.shown}`, unavailable: false }
    const answer = `redirected to ${err.shown} (307)`
    return { status: 307, detail: nodeDetail('redirect', answer), unavailable: true, node: 'redirect' }
  }
  if (err instanceof VaultHttpError && err.node !== undefined) {
    const text = err.errors.join('; ').slice(0, MAX_VAULT_ERROR_CHARS)
    const answer =
      err.node === 'behind'
        ? `that had not reached the index the request carries answered 429 instead of forwarding it`
        : `answered ${err.status}: ${text}`
    return { status: err.status, detail: nodeDetail(err.node, answer), unavailable: true, node: err.node }
  }
  if (err instanceof VaultHttpError) {
    const status = err.status
    let detail = err.errors.join('; ')
    if (detail.length > MAX_VAULT_ERROR_CHARS) detail = `${detail.slice(0, MAX_VAULT_ERROR_CHARS)}…`
    if (detail === '') detail = status === 503 ? 'Vault is sealed or in standby' : `no error text`
    return { status, detail, unavailable: status === 503 || status === 502 || status === 504 }
  }
  if (err instanceof VaultConnectionError) {
    const hint = tlsHint(err.code)
    const detail =
      err.kind === 'timeout'
        ? 'no answer in time'
        : hint !== undefined
          ? `${hint} (${err.code})`
          : `connection failed (${err.code})`
    // Through an egress proxy: which one, and whether the proxy itself failed.
    return { detail: err instanceof ProxyConnectionError ? err.describe(detail) : detail, unavailable: true }
  }
  if (err instanceof VaultCallAborted) return { detail: 'the Mount was cancelled', unavailable: true }
  return { detail: 'request failed', unavailable: true }
}

/** Which catalogue entry a Vault failure belongs to. `login` marks the auth call. */
export function classify(failure: VaultFailure, login: boolean): ErrorCode {
  const s = failure.status
  if (s === undefined || failure.node !== undefined) return 'VAULT_UNAVAILABLE'
  // A permanent redirect the provider did not follow (registry.ts): the address is probably wrong.
  if (s === 308) return 'VAULT_REDIRECT_REFUSED'
  if (s === 401 || s === 403) return login ? 'VAULT_LOGIN_DENIED' : 'VAULT_PERMISSION_DENIED'
  if (s === 404) return 'VAULT_NOT_FOUND'
  if (s === 429) return 'VAULT_RATE_LIMITED'
  if (s === 400 || s === 405 || s === 422) return login ? 'VAULT_LOGIN_DENIED' : 'VAULT_BAD_REQUEST'
  if (s >= 500 || s === 412) return 'VAULT_UNAVAILABLE'
  return 'VAULT_BAD_RESPONSE'
}

/** The error of a call (`fields`: which, and to which address) that ran out of the Mount's time, or whose caller left. */
export function deadlineError(fields: ErrorFields, cancelled: boolean): ProviderError {
  return new ProviderError(
    cancelled ? 'CANCELLED' : 'DEADLINE_EXCEEDED',
    cancelled
      ? 'the driver cancelled the Mount before Vault answered'
      : "Vault did not answer before the Mount's deadline",
    fields,
  )
}

/** Refusals of the HTTP layer and the connection guard: they say what happened, the call's fields say to which call. */
const TRANSPORT_REFUSALS: ReadonlySet<ErrorCode> = new Set([
  'VAULT_REDIRECT_REFUSED',
  'VAULT_RESPONSE_TOO_LARGE',
  'VAULT_ADDRESS_NOT_ALLOWED',
])

/**
 * The error of a failed call (`fields`: which, and to which address); `login` marks the auth call.
 * Any other ProviderError (the breaker failing fast, a TLS file that cannot be read) already says
 * what it is about and goes up as it is.
 */
export function vaultError(err: unknown, fields: ErrorFields, login: boolean): ProviderError {
  if (err instanceof ProviderError) return TRANSPORT_REFUSALS.has(err.code) ? err.within(fields) : err
  if (err instanceof VaultCallAborted) return deadlineError(fields, true)
  const failure = describeFailure(err)
  const code = classify(failure, login)
  const answer =
    failure.status === undefined || failure.node !== undefined
      ? failure.detail
      : code === 'VAULT_REDIRECT_REFUSED'
        ? `Vault answered ${failure.detail}, a permanent redirect the provider does not follow (nothing was sent ` +
          'there): the address is probably wrong'
        : `Vault answered ${failure.status}: ${failure.detail}`
  const attempts = attemptsOf(err)
  // A person is told how often a call was tried when Vault stayed unavailable: what retries are for (a
  // login's count only after one node's answers: then it says how long the cluster had no active node).
  const retried = code === 'VAULT_UNAVAILABLE' && attempts > 1 && (!login || failure.node !== undefined)
  return new ProviderError(code, answer, {
    ...fields,
    vaultStatus: failure.status,
    proxy: err instanceof ProxyConnectionError ? err.proxy : undefined,
    attempts: retried ? attempts : undefined,
  })
}

/**
 * A 404 that is Vault's own answer that nothing is stored at the path read: `{"errors":[]}` (KV v1
 * and v2 for a secret or version that does not exist), or KV v2's envelope for a deleted or
 * destroyed version. Not a 404 with a reason (`namespace not found`, `no handler for route`: a
 * namespace or mount that is not there), nor one whose body is not Vault's (a proxy, an ingress,
 * another web server at the address).
 */
export function saysNothingStored(err: unknown): boolean {
  if (!(err instanceof VaultHttpError) || err.status !== 404) return false
  const body = err.body
  return (body.kind === 'errors' && body.entries === 0) || body.kind === 'response'
}

/**
 * VAULT_NOT_FOUND of an object's own read, made only when Vault said that nothing is stored there
 * (saysNothingStored): the one failure `optional: true` skips. Every other 404 (a login, a lease
 * renewal, a namespace, another server) is a plain ProviderError of the same code. More context
 * (within()) keeps it one.
 */
export class SecretNotStored extends ProviderError {
  constructor(detail: string, fields: ErrorFields) {
    super('VAULT_NOT_FOUND', detail, fields)
  }

  override within(fields: ErrorFields): SecretNotStored {
    return new SecretNotStored(this.detail, { ...fields, ...this.fields })
  }
}

/** How many attempts the retry layer made for a failed call (1 for anything it did not retry). */
function attemptsOf(err: unknown): number {
  return err instanceof VaultHttpError || err instanceof VaultConnectionError || err instanceof VaultRedirect
    ? err.attempts
    : 1
}
