/**
 * What a failure at an egress proxy says (which proxy: proxy.ts; the connection: proxy-connection.ts).
 * At the proxy (it refused, is down, asked for credentials, refused the CONNECT, could not reach
 * Vault, did not answer) a failure names the proxy as scheme://host:port, its variable and the
 * Vault address; any other connection failure of a proxied call keeps its own kind and code (a
 * Vault TLS error stays one) and adds which proxy it went through. Codes are plain (the socket
 * code, the proxy's HTTP status, or what the proxy did wrong); the proxy is a field of the error.
 * Credentials are never in a message.
 */
import { STATUS_CODES } from 'node:http'
import { errors } from 'undici'
import { ProviderError } from '../../errors.js'
import { VaultConnectionError, type ConnectionFailureKind } from './call-errors.js'
import type { ProxyEndpoint } from './proxy.js'
import { isTlsErrorCode } from './tls-failures.js'

/** Opening the proxy connection, and then the proxy's answer to CONNECT, each get this long. */
export const PROXY_CONNECT_TIMEOUT_MS = 10_000
/** The most of a CONNECT answer's status line and headers read. */
export const MAX_CONNECT_ANSWER_BYTES = 16 * 1024

/** Which proxy a transport's calls go through, for its connector and its messages. */
export interface ProxyRoute {
  endpoint: ProxyEndpoint
  /** The environment variable the proxy came from. */
  variable: string
  /** The Vault address (normalised), as messages name it. */
  vaultAddress: string
}

/**
 * A failure at the proxy's code as texts made of codes show it (the breaker's "last: connection
 * failed (…)"): `PROXY_ECONNREFUSED@proxy.corp:3128`, naming the proxy (`shown`: scheme://host:port)
 * and never its credentials. The one place this text is made.
 */
export function codeAtProxy(code: string, shown: string): string {
  return `PROXY_${code}@${shown.slice(shown.indexOf('//') + 2)}`
}

/** host:port as a CONNECT target or Host header (brackets around IPv6). */
export function authority(hostname: string, port: number | string): string {
  const host = hostname.replace(/^\[|\]$/g, '')
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/**
 * A connection failure of a call that went through an egress proxy. `atProxy`: the proxy
 * itself failed, and `reason` says how; otherwise the failure is Vault's (or the tunnel's),
 * and only the route is added.
 */
export class ProxyConnectionError extends VaultConnectionError {
  /** The proxy as every message shows it: scheme://host:port. */
  readonly proxy: string
  readonly variable: string
  readonly vaultAddress: string
  readonly atProxy: boolean
  readonly reason: string

  constructor(kind: ConnectionFailureKind, code: string, route: ProxyRoute, atProxy: boolean, reason: string) {
    super(kind, code, atProxy ? reason : `connection failed (${code}) through the proxy ${route.endpoint.shown}`)
    this.proxy = route.endpoint.shown
    this.variable = route.variable
    this.vaultAddress = route.vaultAddress
    this.atProxy = atProxy
    this.reason = reason
  }

  /** The failure for people: `base` is what the same failure says without a proxy. */
  describe(base: string): string {
    if (this.atProxy) {
      return `cannot reach Vault at ${this.vaultAddress} through the proxy ${this.proxy} (${this.variable}): ${this.reason}`
    }
    return `${base} (Vault at ${this.vaultAddress}, through the proxy ${this.proxy} from ${this.variable})`
  }
}

/** A failed call's error, saying which proxy it went through (a failure at the proxy says so already). */
export function throughProxy(route: ProxyRoute, err: Error): Error {
  return err instanceof VaultConnectionError && !(err instanceof ProxyConnectionError)
    ? Object.assign(new ProxyConnectionError(err.kind, err.code, route, false, ''), { attempts: err.attempts })
    : err
}

/** What to do instead of going through the proxy, for the variable it came from. */
function bypass(route: ProxyRoute): string {
  return route.variable.startsWith('BAO_') || route.variable.startsWith('VAULT_')
    ? `or unset ${route.variable} (NO_PROXY does not apply to it)`
    : 'or list the Vault host in NO_PROXY'
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : 'error'
}

const KIND_OF_PROXY_CODE: Readonly<Record<string, ConnectionFailureKind>> = {
  ECONNREFUSED: 'refused',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  ETIMEDOUT: 'timeout',
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  ENETDOWN: 'unreachable',
}

/** A failure to open the connection to the proxy (TCP, or TLS to an https:// proxy). */
export function proxyLegFailure(route: ProxyRoute, err: unknown): ProxyConnectionError {
  const code = codeOf(err)
  const tls =
    isTlsErrorCode(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.includes('CERT')
  const kind: ConnectionFailureKind = tls ? 'tls' : (KIND_OF_PROXY_CODE[code] ?? 'other')
  const reason: Record<ConnectionFailureKind, string> = {
    refused: `the proxy refused the connection (${code}): check that it listens at ${route.endpoint.shown}`,
    dns: `the proxy's host name does not resolve (${code}): check ${route.variable}`,
    timeout: `the proxy did not accept the connection within ${PROXY_CONNECT_TIMEOUT_MS / 1000} s`,
    reset: `the proxy closed the connection (${code})`,
    truncated: `the proxy closed the connection (${code})`,
    unreachable: `no route to the proxy (${code})`,
    tls:
      `the TLS handshake with the https:// proxy failed (${code}): its certificate must be trusted by the ` +
      "system's CAs (add a CA with NODE_EXTRA_CA_CERTS)",
    other: `connecting to the proxy failed (${code})`,
  }
  return new ProxyConnectionError(kind, code, route, true, reason[kind])
}

/** The proxy's non-2xx answer to CONNECT (or, for http:// Vault, its own error answer) as a failure. */
export function proxyAnswerFailure(route: ProxyRoute, status: number, target: string): ProxyConnectionError {
  const answer = `${status}${STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : ''}`
  const code = String(status)
  // 407 is the proxy's way to ask; some (tinyproxy, to CONNECT) answer 401.
  if (status === 407 || status === 401) {
    const reason = route.endpoint.hasCredentials
      ? `the proxy refused the user and password in ${route.variable} (${answer})`
      : `the proxy asks for credentials (${answer}): put them in ${route.variable} as http://user:password@host:port`
    return new ProxyConnectionError('other', code, route, true, reason)
  }
  if (status >= 500) {
    return new ProxyConnectionError(
      'unreachable',
      code,
      route,
      true,
      `the proxy could not reach Vault at ${target} (${answer})`,
    )
  }
  return new ProxyConnectionError(
    'other',
    code,
    route,
    true,
    `the proxy refused to connect to ${target} (${answer}): allow it in the proxy (CONNECT to port ${target.slice(target.lastIndexOf(':') + 1)}), ${bypass(route)}`,
  )
}

/** A failure while asking the proxy for a tunnel to `target`, before its answer came. */
export function tunnelFailure(route: ProxyRoute, err: unknown, target: string): Error {
  // The guard's refusal, or a failure already typed (connecting to the proxy, http-proxy.ts).
  if (err instanceof ProviderError || err instanceof ProxyConnectionError) return err
  const code = codeOf(err)
  const failed = (kind: ConnectionFailureKind, what: string, reason: string): ProxyConnectionError =>
    new ProxyConnectionError(kind, what, route, true, reason)
  // undici's parser found no HTTP answer, or one past its size limit.
  if (err instanceof errors.HTTPParserError)
    return failed('other', 'BAD_ANSWER', `the proxy's answer to CONNECT ${target} is not HTTP`)
  if (code === 'UND_ERR_HEADERS_OVERFLOW') {
    return failed(
      'other',
      'BAD_ANSWER',
      `the proxy's answer to CONNECT ${target} is longer than ${MAX_CONNECT_ANSWER_BYTES} bytes`,
    )
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT') {
    return failed(
      'timeout',
      'TIMEOUT',
      `the proxy did not answer CONNECT ${target} within ${PROXY_CONNECT_TIMEOUT_MS / 1000} s`,
    )
  }
  if (code === 'UND_ERR_SOCKET') {
    return failed('reset', 'CLOSED', `the proxy closed the connection before answering CONNECT ${target}`)
  }
  return proxyLegFailure(route, err)
}
