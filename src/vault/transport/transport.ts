/**
 * The one HTTP client for Vault: a keep-alive connection pool (undici) per
 * Vault address and TLS configuration, shared by every identity that talks
 * to that Vault; tokens never live here, each call carries its own.
 *
 * It is the only code that knows HTTP. A call returns Vault's status and
 * parsed body, or throws a typed error (call-errors.ts) or a refusal of the
 * catalogue. Its rules, which hold for every call whoever makes it:
 *
 * - Every new connection is checked before it is opened (undici's `connect`
 *   hook): to the transport's own host and port only, and only while the
 *   -vault-addr-allowlist admits the address.
 * - Redirects are never followed. A 3xx answer fails the call with
 *   VAULT_REDIRECT_REFUSED naming only the target's origin; nothing is sent
 *   there. Vault standbys forward requests to the active node by default, so
 *   a redirect means a set-up that must name the active node (or a load
 *   balancer) in vaultAddress.
 * - A body larger than -max-vault-response-size (or the call's tighter cap)
 *   is not read further: the stream is cut as soon as it passes the limit
 *   (or at once when Content-Length says so) and the call fails with
 *   VAULT_RESPONSE_TOO_LARGE. An error answer is read to MAX_ERROR_BODY_BYTES
 *   at most: only its status and a few hundred characters of errors[] count.
 * - The whole call (connect, headers and body) has one time limit, and the
 *   caller's AbortSignal ends it at once.
 * - Every call is reported to the observer: one place for login, read,
 *   renewal, revocation and health.
 * - An egress proxy (HTTPS_PROXY, VAULT_PROXY_ADDR, ...: proxy.ts) is used as
 *   the environment read at start says; the connection through it is
 *   proxy-connection.ts, behind the same guard, and its failures name it.
 */
import { Pool, buildConnector, type Dispatcher } from 'undici'
import { DEFAULT_VAULT_IDLE_CONNECTION_MS } from '../../config/config.js'
import { ProviderError, q } from '../../errors.js'
import {
  operationOfCall,
  type VaultCallEvent,
  type VaultObserver,
  type VaultOperation,
} from '../../observability/vault-observer.js'
import type { VaultConnection } from '../../request/types.js'
import type { CancelSignal } from '../../util/cancellation.js'
import { FairCache } from '../../util/fair-cache.js'
import {
  VaultCallAborted,
  VaultConnectionError,
  VaultHttpError,
  errorBodyOf,
  isTlsErrorCode,
  parseRetryAfter,
  vaultErrorsOf,
  type ConnectionFailureKind,
} from './call-errors.js'
import { SecureContexts, type TlsConnectOptions } from './secure-contexts.js'
import { DEFAULT_TRANSPORT_OPTIONS, readTlsMaterial, type TransportOptions } from './tls-files.js'
import { proxyFor, type ProxySettings } from './proxy.js'
import { proxiedConnection, type ProxiedConnection } from './proxy-connection.js'

export { DEFAULT_TRANSPORT_OPTIONS, MAX_CA_DIRECTORY_ENTRIES, type TransportOptions } from './tls-files.js'

export const MAX_SOCKETS_PER_VAULT = 64
/** Calls one namespace may have in flight on one transport; the rest of its calls wait their turn. */
export const MAX_CALLS_PER_TENANT = MAX_SOCKETS_PER_VAULT / 2
/** Requests to a unix:// Vault (an Agent socket) go to this placeholder origin. */
const UNIX_PLACEHOLDER_ORIGIN = 'http://localhost'
/**
 * An error answer is only ever shown as a few hundred characters of its
 * `errors[]`: past this many bytes it is not read (nor parsed) further, so a
 * hostile Vault's megabytes of error text cost no more than a short one.
 */
export const MAX_ERROR_BODY_BYTES = 64 * 1024
/**
 * Login, renewal and revocation answers carry a token and its policies, a
 * few KiB at most: a larger one is a hostile or broken server, and reading
 * megabytes of it for every retried login would cost every other pod.
 */
export const MAX_TOKEN_ANSWER_BYTES = 64 * 1024
const MAX_ORIGIN_CHARS = 200
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])

/**
 * What makes two connections different: the address, and the TLS settings only where TLS is spoken
 * (an `http://` or `unix://` address ignores them, so they must not make another pool).
 */
export function connectionKey(conn: VaultConnection): string {
  if (!conn.address.startsWith('https://')) return JSON.stringify([conn.address])
  const t = conn.tls
  return JSON.stringify([
    conn.address,
    t.caCertPath ?? '',
    t.caDirectory ?? '',
    t.serverName ?? '',
    t.clientCertPath ?? '',
    t.clientKeyPath ?? '',
    t.skipVerify,
  ])
}

/** scheme://host:port of a Location header (relative ones resolve against the request), never its path or query. */
export function redirectOrigin(location: string | undefined, requestUrl: string): string {
  if (location === undefined || location === '') return 'no Location'
  try {
    const url = new URL(location, requestUrl)
    const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '')
    return q(`${url.protocol}//${url.hostname}${port ? `:${port}` : ''}`, MAX_ORIGIN_CHARS)
  } catch {
    return 'an unreadable Location'
  }
}

export interface VaultTransportOptions extends TransportOptions {
  /** -max-vault-response-size: no answer body is read past this. */
  maxResponseBytes: number
  /** Told about every call (metrics, the CLI's timings). */
  observer?: VaultObserver
  /**
   * -vault-idle-connection-timeout: how long an idle connection waits for the next call
   * (a shorter Keep-Alive hint from the server wins). Default DEFAULT_VAULT_IDLE_CONNECTION_MS.
   */
  idleConnectionMs?: number
  /** The egress proxy environment, read once at start (proxy.ts); absent: every address is reached directly. */
  proxy?: ProxySettings
}

/** One HTTP call to Vault. */
export interface VaultCall {
  method: string
  /** API path after `/v1/`, already encoded, with its query (`secret/data/app?version=2`). */
  path: string
  /** X-Vault-Token; none for login and sys/health. */
  token?: string
  /** X-Vault-Namespace. */
  namespace?: string
  /** Sent as JSON. */
  body?: unknown
  /** The whole call, connection to last byte. */
  timeoutMs: number
  /** The caller gave up: the call ends at once with VaultCallAborted. */
  cancel?: CancelSignal
  /** A tighter cap than -max-vault-response-size (token answers: MAX_TOKEN_ANSWER_BYTES). */
  maxResponseBytes?: number
  /** Any status is an answer (sys/health speaks in statuses); otherwise all but 200 and 204 throw VaultHttpError. */
  anyStatus?: boolean
  /** For the observer; derived from method and path when absent. */
  operation?: VaultOperation
  /**
   * The namespace whose Mount makes the call: its calls in flight on this transport are bounded
   * (MAX_CALLS_PER_TENANT), so that its slow ones cannot hold every connection of the address.
   */
  tenant?: string
}

export interface VaultAnswer {
  status: number
  /** JSON when it parses (BOM stripped), else the text; '' for no body. */
  body: unknown
  /** The Date header (doctor's clock check). */
  date?: string
}

/** Like axios did: JSON when it parses (BOM stripped), else the text; '' for no body. */
function parseBody(buf: Buffer): unknown {
  let text = buf.toString('utf8')
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  if (text === '') return ''
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
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

/** A socket, TLS or undici failure as a typed connection error; `answering` once the headers had come. */
function connectionError(err: unknown, answering: boolean): VaultConnectionError {
  // Already typed (a failure at an egress proxy, proxy-connection.ts).
  if (err instanceof VaultConnectionError) return err
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

/** What the Vault layer needs of a transport (a fake one in unit tests). */
export interface VaultCaller {
  readonly address: string
  call(c: VaultCall): Promise<VaultAnswer>
}

/** The transport was closed (to make room) before this call went out: nothing was sent. */
export class TransportClosed extends Error {
  override readonly name = 'TransportClosed'
}

export class VaultTransport implements VaultCaller {
  readonly address: string
  private readonly pool: Dispatcher
  private readonly opts: VaultTransportOptions
  private closed = false
  /** Calls in flight and waiting, per namespace (MAX_CALLS_PER_TENANT). */
  private readonly slots = new Map<string, { active: number; waiting: Array<() => void> }>()
  /** The egress proxy the calls go through; undefined: direct. */
  private readonly via: ProxiedConnection | undefined

  private constructor(address: string, pool: Dispatcher, opts: VaultTransportOptions, via?: ProxiedConnection) {
    this.address = address
    this.pool = pool
    this.opts = opts
    this.via = via
  }

  /**
   * Reads the TLS files (capped, see tls-files.ts) and builds the connection
   * pool; nothing connects yet. `contexts`: TLS contexts shared with other
   * transports of the same material (the registry's).
   */
  static async create(
    conn: VaultConnection,
    opts: VaultTransportOptions,
    contexts: SecureContexts = new SecureContexts(),
  ): Promise<VaultTransport> {
    const address = conn.address
    if (address.startsWith('unix://')) {
      const socketPath = address.slice('unix://'.length)
      const connect = guardedConnector(address, { socketPath }, opts, UNIX_PLACEHOLDER_ORIGIN)
      return new VaultTransport(address, newPool(UNIX_PLACEHOLDER_ORIGIN, connect, opts), opts)
    }
    const route = proxyFor(address, opts.proxy)
    if (route.kind === 'refused')
      throw new ProviderError('VAULT_UNAVAILABLE', `Vault at ${q(address)}: ${route.reason}`)
    const tls = address.startsWith('https://')
      ? contexts.connectOptions(await readTlsMaterial(conn, opts), address)
      : undefined
    if (route.kind === 'proxy') {
      const via = proxiedConnection(
        address,
        { endpoint: route.endpoint, variable: route.variable, vaultAddress: address },
        tls,
      )
      const connect = guardedConnector(address, tls ?? {}, opts, via.origin, via.connect)
      return new VaultTransport(address, via.dispatcher(newPool(via.origin, connect, opts)), opts, via)
    }
    const connect = guardedConnector(address, tls ?? {}, opts, address)
    return new VaultTransport(address, newPool(address, connect, opts), opts)
  }

  /** Closes the pool's connections (in-flight calls fail). */
  async close(): Promise<void> {
    this.closed = true
    await this.pool.destroy().catch(() => undefined)
  }

  /** Takes no new call; calls under way finish, then the connections close. */
  retire(): void {
    this.closed = true
    this.pool.close().catch(() => undefined)
  }

  /** One call, reported to the observer whatever its outcome. */
  async call(c: VaultCall): Promise<VaultAnswer> {
    if (c.tenant === undefined) return this.observedCall(c)
    const tenant = c.tenant
    const waited = await this.takeSlot(tenant, c)
    try {
      // The wait for a slot counts against the call's one time limit.
      return await this.observedCall(waited === 0 ? c : { ...c, timeoutMs: Math.max(1, c.timeoutMs - waited) })
    } finally {
      this.giveSlot(tenant)
    }
  }

  /** Waits until `tenant` has fewer than MAX_CALLS_PER_TENANT calls in flight here; resolves with the ms waited. */
  private takeSlot(tenant: string, c: VaultCall): Promise<number> {
    let slots = this.slots.get(tenant)
    if (slots === undefined) {
      slots = { active: 0, waiting: [] }
      this.slots.set(tenant, slots)
    }
    if (slots.active < MAX_CALLS_PER_TENANT) {
      slots.active += 1
      return Promise.resolve(0)
    }
    const own = slots
    const started = Date.now()
    return new Promise<number>((resolve, reject) => {
      const waiter = (): void => {
        clearTimeout(timer)
        c.cancel?.removeAbortListener(onCallerGone)
        resolve(Date.now() - started)
      }
      const leave = (err: Error): void => {
        own.waiting.splice(own.waiting.indexOf(waiter), 1)
        c.cancel?.removeAbortListener(onCallerGone)
        reject(err)
      }
      const onCallerGone = (): void => leave(new VaultCallAborted())
      const timer = setTimeout(
        () =>
          leave(
            new VaultConnectionError(
              'timeout',
              'ETIMEDOUT',
              `no answer within ${c.timeoutMs} ms (this namespace's calls to the address were all in flight)`,
            ),
          ),
        Math.max(1, c.timeoutMs),
      )
      c.cancel?.addAbortListener(onCallerGone)
      own.waiting.push(waiter)
    })
  }

  /** A call of `tenant` ended: the next of its waiting calls goes, or its slot is free. */
  private giveSlot(tenant: string): void {
    const slots = this.slots.get(tenant)
    if (slots === undefined) return
    const next = slots.waiting.shift()
    if (next !== undefined) {
      next()
      return
    }
    slots.active -= 1
    if (slots.active === 0) this.slots.delete(tenant)
  }

  private async observedCall(c: VaultCall): Promise<VaultAnswer> {
    const observer = this.opts.observer
    if (!observer) return this.sendVia(c)
    const started = process.hrtime.bigint()
    const report = (ok: boolean, status: number | undefined): void => {
      const event: VaultCallEvent = {
        operation: c.operation ?? operationOfCall(c.method, c.path),
        ok,
        status,
        durationMs: Number(process.hrtime.bigint() - started) / 1e6,
        description: `${c.method.toUpperCase()} ${c.path}`,
      }
      try {
        observer.vaultCall(event)
      } catch {
        // Instrumentation never fails a call.
      }
    }
    try {
      const answer = await this.sendVia(c)
      const ok = answer.status === 200 || answer.status === 204
      report(ok, ok ? undefined : answer.status)
      return answer
    } catch (err) {
      report(false, err instanceof VaultHttpError ? err.status : undefined)
      throw err
    }
  }

  /** send(), with a connection failure through an egress proxy saying which proxy (proxy-connection.ts). */
  private sendVia(c: VaultCall): Promise<VaultAnswer> {
    const via = this.via
    if (!via) return this.send(c)
    return this.send(c).catch((err: unknown) => {
      throw via.annotate(err)
    })
  }

  /**
   * The call on undici's dispatch API: the answer's bytes arrive in handler
   * callbacks and are counted as they come, so a body past its limit is cut
   * off at once. Settled exactly once; aborting the dispatch closes its
   * connection, so nothing more of a refused answer is read.
   */
  private send(c: VaultCall): Promise<VaultAnswer> {
    const flagMax = this.opts.maxResponseBytes
    const max = c.maxResponseBytes !== undefined && c.maxResponseBytes < flagMax ? c.maxResponseBytes : flagMax
    const tooLarge = (): ProviderError =>
      new ProviderError(
        'VAULT_RESPONSE_TOO_LARGE',
        max === flagMax
          ? `Vault's answer is larger than ${max} bytes (-max-vault-response-size); it was not read further`
          : `Vault's answer is larger than ${max} bytes, the most a token answer (login, renewal) may be ` +
              `(secrets are limited by -max-vault-response-size); it was not read further`,
      )
    if (c.cancel?.aborted) return Promise.reject(new VaultCallAborted())
    if (this.closed) return Promise.reject(new TransportClosed('the connection pool was closed'))
    const headers: Record<string, string> = { accept: 'application/json' }
    if (c.token !== undefined && c.token !== '') headers['x-vault-token'] = c.token
    if (c.namespace !== undefined && c.namespace !== '') headers['x-vault-namespace'] = c.namespace
    let payload: string | undefined
    if (c.body !== undefined) {
      payload = JSON.stringify(c.body)
      headers['content-type'] = 'application/json'
    }
    const path = `/v1/${c.path.replace(/^\/+/, '')}`
    const address = this.address
    return new Promise<VaultAnswer>((resolve, reject) => {
      let controller: Dispatcher.DispatchController | undefined
      let settled = false
      let status = 0
      let answerHeaders: Record<string, string | string[] | undefined> = {}
      let isError = false
      const chunks: Buffer[] = []
      let size = 0
      const settle = (): boolean => {
        if (settled) return false
        settled = true
        clearTimeout(timer)
        c.cancel?.removeAbortListener(onCallerGone)
        return true
      }
      /** Ends the call with `err` and closes its connection. */
      const fail = (err: unknown): void => {
        if (!settle()) return
        reject(err)
        controller?.abort(err instanceof Error ? err : new Error('call ended'))
      }
      const answer = (body: unknown): void => {
        if (!settle()) return
        const date = answerHeaders.date
        const result: VaultAnswer = { status, body, date: typeof date === 'string' ? date : undefined }
        // Vault answers 200 or 204; any other status (206, 299, ...) is not an answer to use.
        if (c.anyStatus === true || status === 200 || status === 204) resolve(result)
        else {
          const retryAfter = parseRetryAfter(answerHeaders['retry-after'])
          reject(new VaultHttpError(status, vaultErrorsOf(body), retryAfter, errorBodyOf(body)))
        }
      }
      const onCallerGone = (): void => fail(new VaultCallAborted())
      const timer = setTimeout(
        () => fail(new VaultConnectionError('timeout', 'ETIMEDOUT', `no answer within ${c.timeoutMs} ms`)),
        Math.max(1, c.timeoutMs),
      )
      c.cancel?.addAbortListener(onCallerGone)
      this.pool.dispatch(
        {
          path,
          method: c.method as Dispatcher.HttpMethod,
          headers,
          body: payload,
          // The whole call has one limit (the timer above), not one per phase.
          headersTimeout: 0,
          bodyTimeout: 0,
        },
        {
          onRequestStart(ctrl) {
            controller = ctrl
            // Ended before undici got to it (timer, caller gone): it is not sent.
            if (settled) ctrl.abort(new Error('call ended'))
          },
          onResponseStart(ctrl, statusCode, hdrs) {
            // 1xx interim answers are not the answer.
            if (statusCode < 200) return
            status = statusCode
            answerHeaders = hdrs
            if (REDIRECT_STATUSES.has(status)) {
              const location = hdrs.location
              fail(
                new ProviderError(
                  'VAULT_REDIRECT_REFUSED',
                  `Vault answered ${status} with a redirect to ${redirectOrigin(
                    Array.isArray(location) ? location[0] : location,
                    `${address}${path}`,
                  )}; the provider never follows redirects, so nothing was sent there: set vaultAddress (or -vault-addr) ` +
                    'to the active Vault node or to a load balancer in front of the cluster',
                ),
              )
              return
            }
            isError = status >= 400
            const declared = Number(hdrs['content-length'])
            if (!isError && Number.isFinite(declared) && declared > max) fail(tooLarge())
          },
          onResponseData(ctrl, chunk) {
            if (settled) return
            size += chunk.length
            if (isError && size > MAX_ERROR_BODY_BYTES) {
              // The status is what classifies the failure; the text is not worth reading on.
              answer({ errors: [`(Vault's error text is longer than ${MAX_ERROR_BODY_BYTES} bytes and was not read)`] })
              ctrl.abort(new Error('error text not read further'))
              return
            }
            if (size > max) {
              fail(tooLarge())
              return
            }
            chunks.push(chunk)
          },
          onResponseEnd() {
            answer(parseBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)))
          },
          onResponseError(ctrl, err) {
            if (err instanceof ProviderError) fail(err)
            else fail(connectionError(err, status !== 0))
          },
        },
      )
    })
  }
}

/**
 * The pool of one transport. Vault sends no Keep-Alive hint, so undici would close an idle
 * connection after its own default of 4 s; the idle timeout keeps it for the next Mount
 * instead (see DEFAULT_VAULT_IDLE_CONNECTION_MS), and also caps a longer hint from a proxy
 * in front of Vault (a shorter one still wins).
 */
function newPool(origin: string, connect: buildConnector.connector, opts: VaultTransportOptions): Pool {
  const idleMs = opts.idleConnectionMs ?? DEFAULT_VAULT_IDLE_CONNECTION_MS
  return new Pool(origin, {
    connections: MAX_SOCKETS_PER_VAULT,
    connect,
    keepAliveTimeout: idleMs,
    keepAliveMaxTimeout: idleMs,
  })
}

/**
 * undici's connector with a check in front: every new connection goes to
 * the transport's own host and port only (`origin`: Vault's, or the egress
 * proxy's for http:// Vault through one), and only while the allow-list
 * admits the Vault address. Redirects are never followed; this holds even
 * if some code path tried. `connect`: how a connection is opened once
 * admitted (through an egress proxy); default, straight to `origin`.
 */
export function guardedConnector(
  address: string,
  options: { socketPath?: string } | TlsConnectOptions,
  opts: TransportOptions,
  origin: string,
  connect?: buildConnector.connector,
): buildConnector.connector {
  const url = new URL(origin)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  const inner = connect ?? buildConnector({ ...options, keepAlive: true } as buildConnector.BuildOptions)
  return (connectOptions, callback) => {
    const wantHost = String(connectOptions.hostname ?? '').replace(/^\[|\]$/g, '')
    const wantPort = Number(connectOptions.port || (connectOptions.protocol === 'https:' ? 443 : 80))
    const refused =
      wantHost !== host || wantPort !== port
        ? `a connection to ${q(`${wantHost}:${String(wantPort)}`)} is not the transport's Vault address ${q(address)}`
        : opts.allowlist && !opts.allowlist.allows(address)
          ? `Vault address ${q(address)} is not in the provider's -vault-addr-allowlist`
          : undefined
    if (refused !== undefined) {
      const err = new ProviderError('VAULT_ADDRESS_NOT_ALLOWED', `${refused}; nothing was sent`)
      queueMicrotask(() => callback(err, null))
      return
    }
    inner(connectOptions, callback)
  }
}

export function defaultTransportOptions(maxResponseBytes: number): VaultTransportOptions {
  return { ...DEFAULT_TRANSPORT_OPTIONS, maxResponseBytes }
}

/** The tenant of the provider's own calls (the breaker's probes of the default address, /health/vault). */
export const PROVIDER_TENANT = ''

/** Where sessions and the breaker's probes get the transport of a connection. */
export interface TransportSource {
  /** `tenant`: the namespace whose Mount needs it (PROVIDER_TENANT for the provider's own calls). */
  get(conn: VaultConnection, tenant?: string): Promise<VaultCaller>
}

/**
 * One call through the transport `source` has for `conn` now: a pool closed to make room between the
 * lookup and the call is looked up again (its replacement is built), so a session never holds a
 * closed pool.
 */
export async function callThrough(
  source: TransportSource,
  conn: VaultConnection,
  tenant: string,
  call: VaultCall,
): Promise<VaultAnswer> {
  const own: VaultCall = { ...call, tenant }
  try {
    return await (await source.get(conn, tenant)).call(own)
  } catch (err) {
    if (!(err instanceof TransportClosed)) throw err
    return (await source.get(conn, tenant)).call(own)
  }
}

export const MAX_TRANSPORTS = 64
/** Pools one namespace holds at most: what its pools and their connections hold in memory is bounded by this. */
export const MAX_TRANSPORTS_PER_TENANT = 16

/**
 * The transports of the process, one per connection (connectionKey), bounded: when a new one needs
 * room, the tenant holding the most gives up its least recently used (util/fair-cache.ts), which
 * finishes the calls under way and then closes; past MAX_TRANSPORTS_PER_TENANT a namespace gives up
 * its own. A namespace that names many addresses or TLS variants pushes out only its own pools.
 * Transports of the same TLS material share one TLS context (secure-contexts.ts).
 */
export class TransportRegistry implements TransportSource {
  private readonly opts: VaultTransportOptions
  private readonly transports: FairCache<Promise<VaultTransport>>
  private readonly contexts = new SecureContexts()

  constructor(opts: VaultTransportOptions, max = MAX_TRANSPORTS, maxPerTenant = MAX_TRANSPORTS_PER_TENANT) {
    this.opts = opts
    this.transports = new FairCache<Promise<VaultTransport>>({
      maxEntries: max,
      maxEntriesPerTenant: maxPerTenant,
      onEvict: (p) => {
        p.then(
          (t) => t.retire(),
          () => undefined,
        )
      },
    })
  }

  get(conn: VaultConnection, tenant = PROVIDER_TENANT): Promise<VaultTransport> {
    const key = connectionKey(conn)
    let t = this.transports.get(key)
    if (!t) {
      t = VaultTransport.create(conn, this.opts, this.contexts)
      // A failed set-up (unreadable CA file) must not stay cached.
      t.catch(() => this.transports.delete(key))
      this.transports.set(tenant, key, t)
    }
    return t
  }

  /** Pools held by `tenant` (for tests and metrics). */
  heldBy(tenant: string): number {
    return this.transports.sizeOf(tenant)
  }

  close(): void {
    for (const [, t] of this.transports.entries()) {
      t.then(
        (transport) => transport.close(),
        () => undefined,
      )
    }
    this.transports.clear()
  }
}
