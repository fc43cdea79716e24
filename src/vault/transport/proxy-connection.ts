/**
 * The connection to Vault through an egress proxy (which proxy: proxy.ts),
 * as the two things the transport builds its pool from: a connector (which
 * the transport's guard runs behind, so the allow-list and the one-address
 * rule still hold for every new connection, checked before anything reaches
 * the proxy) and the dispatcher the calls go to.
 *
 * - https:// Vault: a CONNECT tunnel. The connector opens a connection to the
 *   proxy (TLS to an https:// proxy), asks `CONNECT vault-host:port`, and on
 *   a 2xx answer starts TLS with Vault over the tunnel with the transport's
 *   own material (CA, SNI / server name, client certificate, skip-verify).
 *   The TLS is end to end: the provider verifies Vault's certificate, and the
 *   proxy relays bytes it cannot read.
 * - http:// Vault: as Go's transport does, no tunnel: requests go to the
 *   proxy in absolute form (`GET http://vault:8200/v1/... HTTP/1.1`), with
 *   Proxy-Authorization when the proxy URL has credentials. The pool's
 *   origin is the proxy; it carries this Vault address's requests only.
 *
 * Failures say so (ProxyConnectionError): at the proxy (it refused, is down,
 * asked for credentials, refused the CONNECT, could not reach Vault, did not
 * answer) they name the proxy as scheme://host:port, its variable and the
 * Vault address, with a `PROXY_...` code; any other connection failure of a
 * proxied call keeps its own kind and code (a Vault TLS error stays one) and
 * adds which proxy it went through. Credentials are never in a message.
 */
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { buildConnector, type Dispatcher } from 'undici'
import { VaultConnectionError, isTlsErrorCode, type ConnectionFailureKind } from './call-errors.js'
import type { ProxyEndpoint } from './proxy.js'
import type { TlsConnectOptions } from './secure-contexts.js'

/** Opening the proxy connection, and then the proxy's answer to CONNECT, each get this long (undici's connect timeout). */
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
 * Codes of failures at the proxy itself: `PROXY_<what>@<proxy host:port>` (PROXY_ECONNREFUSED@proxy.corp:3128,
 * PROXY_407@…, PROXY_TIMEOUT@…), so that every text built from a code (the breaker's fail-fast message,
 * retry logs, doctor) names the proxy, and never its credentials.
 */
export const PROXY_CODE_PREFIX = 'PROXY_'

function proxyCode(route: ProxyRoute, what: string | number): string {
  return `${PROXY_CODE_PREFIX}${what}@${authority(route.endpoint.hostname, route.endpoint.port)}`
}

export function isProxyFailureCode(code: string | undefined): boolean {
  return code !== undefined && code.startsWith(PROXY_CODE_PREFIX)
}

/**
 * A connection failure of a call that went through an egress proxy. `atProxy`: the proxy
 * itself failed (code PROXY_...), and `reason` says how; otherwise the failure is Vault's
 * (or the tunnel's), with its own code, and only the route is added.
 */
export class ProxyConnectionError extends VaultConnectionError {
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
function proxyLegFailure(route: ProxyRoute, err: unknown): ProxyConnectionError {
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
  return new ProxyConnectionError(kind, proxyCode(route, code), route, true, reason[kind])
}

/** The proxy's non-2xx answer to CONNECT (or, for http:// Vault, its own error answer) as a failure. */
function proxyAnswerFailure(route: ProxyRoute, status: number, target: string): ProxyConnectionError {
  const answer = `${status}${STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : ''}`
  const code = proxyCode(route, status)
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

/** host:port as a CONNECT target or Host header (brackets around IPv6). */
function authority(hostname: string, port: number | string): string {
  const host = hostname.replace(/^\[|\]$/g, '')
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/**
 * Asks the proxy on `socket` for a tunnel to `target` and waits for its answer; `done`
 * once, with no error when the tunnel is open. Nothing past the answer's empty line may
 * come before the client speaks (TLS): such bytes are refused, not passed on.
 */
function openTunnel(
  socket: Socket,
  target: string,
  route: ProxyRoute,
  done: (err?: ProxyConnectionError) => void,
): void {
  let received: Buffer = Buffer.alloc(0)
  let finished = false
  const finish = (err?: ProxyConnectionError): void => {
    if (finished) return
    finished = true
    clearTimeout(timer)
    socket.removeListener('data', onData)
    socket.removeListener('error', onError)
    socket.removeListener('close', onClose)
    socket.removeListener('end', onClose)
    if (err) socket.destroy()
    done(err)
  }
  const failed = (kind: ConnectionFailureKind, code: string, reason: string): void =>
    finish(new ProxyConnectionError(kind, proxyCode(route, code), route, true, reason))
  const onData = (chunk: Buffer): void => {
    received = received.length === 0 ? chunk : Buffer.concat([received, chunk])
    const end = received.indexOf('\r\n\r\n')
    if (end === -1) {
      if (received.length > MAX_CONNECT_ANSWER_BYTES) {
        failed(
          'other',
          'BAD_ANSWER',
          `the proxy's answer to CONNECT ${target} is longer than ${MAX_CONNECT_ANSWER_BYTES} bytes`,
        )
      }
      return
    }
    // Stop reading here: what follows belongs to TLS.
    socket.pause()
    const statusLine = received.subarray(0, received.indexOf('\r\n')).toString('latin1')
    const m = /^HTTP\/\d\.\d (\d{3})(?: |$)/.exec(statusLine)
    if (!m) {
      failed('other', 'BAD_ANSWER', `the proxy's answer to CONNECT ${target} is not HTTP`)
      return
    }
    const status = Number(m[1])
    if (status < 200 || status > 299) {
      finish(proxyAnswerFailure(route, status, target))
      return
    }
    if (received.length > end + 4) {
      failed(
        'other',
        'BAD_ANSWER',
        `the proxy sent data after its answer to CONNECT ${target}, before Vault's TLS handshake`,
      )
      return
    }
    finish()
  }
  const onError = (err: Error): void => finish(proxyLegFailure(route, err))
  const onClose = (): void =>
    failed('reset', 'CLOSED', `the proxy closed the connection before answering CONNECT ${target}`)
  const timer = setTimeout(
    () =>
      failed(
        'timeout',
        'TIMEOUT',
        `the proxy did not answer CONNECT ${target} within ${PROXY_CONNECT_TIMEOUT_MS / 1000} s`,
      ),
    PROXY_CONNECT_TIMEOUT_MS,
  )
  socket.on('data', onData)
  socket.on('error', onError)
  socket.on('close', onClose)
  socket.on('end', onClose)
  const auth = route.endpoint.authorizationHeader()
  socket.write(
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n` + (auth ? `Proxy-Authorization: ${auth}\r\n` : '') + '\r\n',
  )
}

/** The connection to the proxy itself: TCP, or TLS (system CAs, the proxy's name) for an https:// proxy. */
function proxyConnector(
  route: ProxyRoute,
): (callback: (err: ProxyConnectionError | null, socket: Socket | null) => void) => void {
  const e = route.endpoint
  const connect = buildConnector({ keepAlive: true, timeout: PROXY_CONNECT_TIMEOUT_MS })
  return (callback) => {
    connect(
      { hostname: e.hostname, host: authority(e.hostname, e.port), protocol: e.protocol, port: String(e.port) },
      (err, socket) => {
        if (err || !socket) callback(proxyLegFailure(route, err), null)
        else callback(null, socket)
      },
    )
  }
}

/** What a transport needs to reach Vault through a proxy. */
export interface ProxiedConnection {
  route: ProxyRoute
  /** The pool's origin: Vault's own (CONNECT tunnel) or the proxy's (http:// Vault, absolute-form requests). */
  origin: string
  /** Opens a connection; the transport's guard runs in front of it. */
  connect: buildConnector.connector
  /** The pool as calls are sent to it. */
  dispatcher(pool: Dispatcher): Dispatcher
  /** A failed call's error, saying which proxy it went through. */
  annotate(err: unknown): unknown
}

/** The connection through `route` to `address` (https:// or http://); `tls`: the transport's TLS options for https://. */
export function proxiedConnection(
  address: string,
  route: ProxyRoute,
  tls: TlsConnectOptions | undefined,
): ProxiedConnection {
  const vault = new URL(address)
  const annotate = (err: unknown): unknown =>
    err instanceof VaultConnectionError && !(err instanceof ProxyConnectionError)
      ? Object.assign(new ProxyConnectionError(err.kind, err.code, route, false, ''), { attempts: err.attempts })
      : err
  const toProxy = proxyConnector(route)
  if (vault.protocol === 'https:') {
    // TLS with Vault over the tunnel: the same options as a direct connection (tls-files.ts).
    const toVault = buildConnector({ ...(tls ?? {}), keepAlive: true } as buildConnector.BuildOptions)
    const connect: buildConnector.connector = (options, callback) => {
      const target = authority(String(options.hostname), options.port || 443)
      toProxy((err, socket) => {
        if (err || !socket) {
          callback(err ?? new Error('no socket'), null)
          return
        }
        openTunnel(socket, target, route, (tunnelErr) => {
          if (tunnelErr) callback(tunnelErr, null)
          else toVault({ ...options, httpSocket: socket }, callback)
        })
      })
    }
    return { route, origin: vault.origin, connect, dispatcher: (pool) => pool, annotate }
  }
  // http:// Vault: the pool talks to the proxy; each request names Vault in absolute form.
  const proxyOrigin = `${route.endpoint.protocol}//${authority(route.endpoint.hostname, route.endpoint.port)}`
  const connect: buildConnector.connector = (_options, callback) => {
    toProxy((err, socket) => (err || !socket ? callback(err ?? new Error('no socket'), null) : callback(null, socket)))
  }
  const host = authority(vault.hostname, vault.port || 80)
  const auth = route.endpoint.authorizationHeader()
  const absoluteForm: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
    const headers: Record<string, string> = {
      ...((opts.headers ?? {}) as Record<string, string>),
      host,
      ...(auth ? { 'proxy-authorization': auth } : {}),
    }
    return dispatch({ ...opts, path: `${vault.origin}${opts.path}`, headers }, proxyAnswerGuard(handler, route, host))
  }
  return { route, origin: proxyOrigin, connect, dispatcher: (pool) => pool.compose(absoluteForm), annotate }
}

/**
 * For http:// Vault through a proxy: an error answer that is not Vault's (Vault's errors are
 * JSON) is the proxy's own (407, its ACL's 403, 502/503 when it cannot reach Vault), and fails
 * the call as a proxy failure instead of reading as Vault's answer.
 */
function proxyAnswerGuard(
  handler: Dispatcher.DispatchHandler,
  route: ProxyRoute,
  target: string,
): Dispatcher.DispatchHandler {
  return {
    onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
    onRequestUpgrade: (controller, status, headers, socket) =>
      handler.onRequestUpgrade?.(controller, status, headers, socket),
    onResponseStart: (controller, status, headers, message) => {
      const type = headers['content-type']
      const json = (Array.isArray(type) ? type[0] : type)?.toLowerCase().startsWith('application/json') === true
      if (status === 407 || (status >= 400 && !json)) {
        controller.abort(proxyAnswerFailure(route, status, target))
        return
      }
      handler.onResponseStart?.(controller, status, headers, message)
    },
    onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
    onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
    onResponseError: (controller, err) => handler.onResponseError?.(controller, err),
  }
}
