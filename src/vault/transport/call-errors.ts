/**
 * What a Vault call can fail with, as types: the one vocabulary the retry
 * policy, the breaker, the error messages and the observers read. The
 * transport (typedFailure below, answer.ts, proxy-failures.ts) is the only
 * code that turns sockets and HTTP into these; nothing else looks at a
 * library's error shape.
 *
 * The refusals of the transport (a redirect, a body over its cap, an address
 * the allow-list refuses) are not here: they are ProviderErrors of the
 * catalogue from the start, because their texts are final.
 */
import { ProviderError, cutForScrub, scrub } from '../../errors.js'
import { isTlsErrorCode } from './tls-failures.js'

export const MAX_VAULT_ERROR_CHARS = 500
/** Vault's errors[] can echo pod input (a 200 KB roleName): at most this many entries are read... */
export const MAX_VAULT_ERRORS = 8
/** ...each cut to this length before any pattern runs on it. */
export const MAX_VAULT_ERROR_INPUT_CHARS = 4 * MAX_VAULT_ERROR_CHARS

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

/** Vault's own error strings from an answer's body: bounded in number and length, scrubbed, each on one line. */
export function vaultErrorsOf(body: unknown): string[] {
  if (body === null || typeof body !== 'object') return []
  const errors = (body as { errors?: unknown }).errors
  if (!Array.isArray(errors)) return []
  return errors
    .slice(0, MAX_VAULT_ERRORS)
    .filter((e): e is string => typeof e === 'string')
    .map((e) => oneLine(scrub(cutForScrub(e, MAX_VAULT_ERROR_INPUT_CHARS))))
    .filter((e) => e !== '')
}

/** Common to every typed failure: how many attempts the retry layer made before giving up. */
abstract class VaultCallError extends Error {
  /** Set by the retry layer (retry.ts) on the error it finally throws; 1 when the call was tried once. */
  attempts = 1
}

/** Retry-After as delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: unknown, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value
  if (typeof text !== 'string' && typeof text !== 'number') return undefined
  const s = String(text).trim()
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000)
  const at = Date.parse(s)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * The shape of a failed answer's body, kept (the body is not) so that the layers above can tell
 * Vault's own answer from a proxy's or another web server's: Vault's JSON error list and how many
 * entries it had, Vault's response envelope (KV v2 answers 404 with a deleted version's metadata),
 * or anything else (HTML, text, JSON of another shape).
 */
export type ErrorBody = { kind: 'errors'; entries: number } | { kind: 'response' } | { kind: 'other' }

export function errorBodyOf(body: unknown): ErrorBody {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { kind: 'other' }
  const { errors, request_id: requestId } = body as { errors?: unknown; request_id?: unknown }
  if (Array.isArray(errors)) return { kind: 'errors', entries: errors.length }
  if (typeof requestId === 'string' && 'data' in body) return { kind: 'response' }
  return { kind: 'other' }
}

/**
 * What an answer says about the node that gave it rather than the request: another node of the
 * cluster (another connection through a Service) may answer it. `sealed`: 503 "Vault is sealed";
 * `no-active-node`: a standby that knows no active node to forward to (500 "local node not active
 * but active cluster node not found", 503 about standby mode); `behind`: a standby that has not
 * reached the X-Vault-Index a request carries and did not forward it (429 with an empty errors[]).
 * A standby's 307 to the active node is the fourth kind: VaultRedirect.
 */
export type NodeCondition = 'sealed' | 'no-active-node' | 'behind'

/** Vault's words for a standby that has no active node to forward to (OpenBao 2.7, Vault). */
const NO_ACTIVE_NODE_TEXT = 'active cluster node not found'

export function nodeConditionOf(status: number, errors: readonly string[], body: ErrorBody): NodeCondition | undefined {
  if (body.kind !== 'errors') return undefined
  if (status === 503 && errors.some((e) => /\bsealed\b/i.test(e))) return 'sealed'
  if (status === 503 && errors.some((e) => /\bstandby\b/i.test(e))) return 'no-active-node'
  if (status === 500 && errors.some((e) => e.includes(NO_ACTIVE_NODE_TEXT))) return 'no-active-node'
  if (status === 429 && body.entries === 0) return 'behind'
  return undefined
}

/** Vault (or a proxy in front of it) answered with a status that is not success. */
export class VaultHttpError extends VaultCallError {
  override readonly name = 'VaultHttpError'
  readonly status: number
  /** Vault's errors[], already bounded and scrubbed (vaultErrorsOf). */
  readonly errors: readonly string[]
  /** Retry-After in ms, when the answer carried a readable one. */
  readonly retryAfterMs: number | undefined
  /** A 503 whose errors say Vault is sealed. */
  readonly sealed: boolean
  /** What the body was (errorBodyOf); 'other' when the thrower did not say. */
  readonly body: ErrorBody
  /** The answer is about the node, not the request (nodeConditionOf): another node may answer. */
  readonly node: NodeCondition | undefined

  constructor(status: number, errors: readonly string[], retryAfterMs?: number, body: ErrorBody = { kind: 'other' }) {
    super(`Vault answered ${status}`)
    this.status = status
    this.errors = errors
    this.retryAfterMs = retryAfterMs
    this.body = body
    this.sealed = status === 503 && errors.some((e) => /sealed/i.test(e))
    this.node = nodeConditionOf(status, errors, body)
  }
}

/**
 * A 307 or 308 whose Location is the request's own path and query, in the request's scheme (or
 * https for http): what a cluster's standby answers when it sends a client to the active node,
 * and during an election to the old leader's address. Nothing was sent to the Location; the
 * transport's caller may follow it once (registry.ts, callThrough), else it is a node's answer
 * that another connection may not get (a 307) or a refusal (a 308).
 */
export class VaultRedirect extends VaultCallError {
  override readonly name = 'VaultRedirect'
  readonly status: 307 | 308
  /** The Location's origin as messages show it (quoted, bounded): never its path or query. */
  readonly shown: string
  /** The Location's origin (`scheme://host[:port]`, no default port), the address a followed call goes to. */
  readonly target: string

  constructor(status: 307 | 308, target: string, shown: string) {
    super(`Vault answered ${status} with a redirect to ${shown}`)
    this.status = status
    this.target = target
    this.shown = shown
  }
}

/**
 * No (complete) answer came back. `kind` is what the retry policy and the
 * breaker decide on; `code` is the socket or TLS code people and the TLS
 * table read (ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT, ...).
 */
export type ConnectionFailureKind =
  | 'timeout' // no answer within the call's time
  | 'tls' // the handshake failed: a configuration problem, not a blip
  | 'refused' // nothing listens (ECONNREFUSED, a missing unix socket)
  | 'reset' // the peer hung up before answering
  | 'truncated' // the peer hung up in the middle of its answer
  | 'dns' // the name does not resolve (yet)
  | 'unreachable' // no route
  | 'other'

export class VaultConnectionError extends VaultCallError {
  override readonly name = 'VaultConnectionError'
  readonly kind: ConnectionFailureKind
  readonly code: string

  constructor(kind: ConnectionFailureKind, code: string, message: string) {
    super(message)
    this.kind = kind
    this.code = code
  }
}

/** The caller gave up (the driver cancelled the Mount): nobody waits for this call any more. */
export class VaultCallAborted extends VaultCallError {
  override readonly name = 'VaultCallAborted'
  constructor() {
    super('the caller gave up before Vault answered')
  }
}

const KIND_OF_CODE: Readonly<Record<string, ConnectionFailureKind>> = {
  ECONNREFUSED: 'refused',
  // A unix socket that is not there (the Vault Agent is not running).
  ENOENT: 'refused',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  ETIMEDOUT: 'timeout',
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  ENETDOWN: 'unreachable',
}

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/**
 * A failed call's error as this vocabulary: a socket, TLS or undici failure becomes a typed
 * connection error (`answering`: the headers had come); refusals of the catalogue and errors
 * already typed stay as they are.
 */
export function typedFailure(err: unknown, answering: boolean): Error {
  if (err instanceof VaultCallError || err instanceof ProviderError) return err
  let code = codeOf(err)
  // undici reports a closed socket as UND_ERR_SOCKET, with the system error (if any) as its cause.
  if (code === 'UND_ERR_SOCKET') code = codeOf((err as { cause?: unknown }).cause) ?? 'ECONNRESET'
  if (code === undefined) return new VaultConnectionError('other', 'error', 'the connection failed')
  if (isTlsErrorCode(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) {
    return new VaultConnectionError('tls', code, `TLS failed (${code})`)
  }
  const kind = KIND_OF_CODE[code] ?? 'other'
  if (answering && (kind === 'reset' || kind === 'other')) {
    return new VaultConnectionError('truncated', code, `the answer was cut short (${code})`)
  }
  return new VaultConnectionError(kind, code, `connection failed (${code})`)
}

export function statusOf(err: unknown): number | undefined {
  return err instanceof VaultHttpError ? err.status : undefined
}

export function isTimeout(err: unknown): boolean {
  return err instanceof VaultConnectionError && err.kind === 'timeout'
}
