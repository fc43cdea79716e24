/**
 * The one HTTP client for Vault: a keep-alive connection pool (undici) per Vault address and TLS
 * configuration, shared by every identity that talks to that Vault; tokens never live here, each
 * call carries its own. It is the only code that knows HTTP. A call returns Vault's status and
 * parsed body, or throws a typed error (call-errors.ts) or a refusal of the catalogue.
 *
 * Its rules hold for every call whoever makes it, each in a dispatcher of its own, composed
 * (undici's `compose`) in this order from the caller down:
 *
 *   call-observer.ts    every call is reported to the observer
 *   call-deadline.ts    the whole call has one time limit; the caller's signal ends it at once
 *   tenant-slots.ts     one namespace has at most half of the address's connections in flight
 *   no-redirects.ts     a 3xx answer fails the call; nothing is sent to its target
 *   body-caps.ts        Content-Length and the stream are held to the answer's cap; error texts to theirs
 *   node-answers.ts     one node's answer (sealed, no active node) closes its connection
 *   fresh-connection.ts a call that asks for it gets a connection of its own
 *   the pool            undici's Pool (direct, unix://) or the egress proxy's dispatcher
 *                       (proxy-connection.ts), every new connection behind connection-guard.ts
 *
 * Each transport also keeps its address's X-Vault-Index format (consistency.ts), learned from its
 * answers, for the consistency headers of its calls.
 */
import { Pool, type Dispatcher } from 'undici'
import { DEFAULT_VAULT_IDLE_CONNECTION_MS } from '../../config/config.js'
import { ProviderError, q } from '../../errors.js'
import type { Logger } from '../../observability/logger.js'
import type { AddressAllowlist } from './address-allowlist.js'
import { operationOfCall, type VaultObserver, type VaultOperation } from '../../observability/vault-observer.js'
import type { VaultConnection } from '../../request/types.js'
import { bodyCaps } from './body-caps.js'
import { callDeadline } from './call-deadline.js'
import { observeCalls } from './call-observer.js'
import { guardedConnector } from './connection-guard.js'
import { IndexRecord, type CallConsistency } from './consistency.js'
import { freshConnections } from './fresh-connection.js'
import { closeNodeAnswers } from './node-answers.js'
import { noRedirects } from './no-redirects.js'
import { proxyFor, type ProxySettings } from './proxy.js'
import { proxiedDispatcher } from './proxy-connection.js'
import type { ProxyRoute } from './proxy-failures.js'
import { AnswerHandler, TransportClosed, type VaultAnswer } from './answer.js'
import type { SecureContexts } from './secure-contexts.js'
import { MAX_SOCKETS_PER_VAULT, tenantSlots } from './tenant-slots.js'
import { readTlsMaterial, type TransportOptions } from './tls-files.js'

export { TransportClosed, type VaultAnswer } from './answer.js'
export { MAX_ERROR_BODY_BYTES, MAX_TOKEN_ANSWER_BYTES } from './body-caps.js'
export { MAX_CALLS_PER_TENANT } from './tenant-slots.js'
export { NO_OBSERVER } from './call-observer.js'
export { NO_PROXY_SETTINGS } from './proxy.js'
export { MAX_CA_DIRECTORY_ENTRIES, type TransportOptions } from './tls-files.js'

/** Requests to a unix:// Vault (an Agent socket) go to this placeholder origin. */
const UNIX_PLACEHOLDER_ORIGIN = 'http://localhost'

export interface VaultTransportOptions extends TransportOptions {
  /** -max-vault-response-size: no answer body is read past this. */
  maxResponseBytes: number
  /** Told about every call (metrics, the CLI's timings; NO_OBSERVER where nobody listens). */
  observer: VaultObserver
  /**
   * -vault-idle-connection-timeout: how long an idle connection waits for the next call
   * (a shorter Keep-Alive hint from the server wins). Default DEFAULT_VAULT_IDLE_CONNECTION_MS.
   */
  idleConnectionMs?: number
  /** The egress proxy environment, read once at start (proxy.ts); NO_PROXY_SETTINGS: every address directly. */
  proxy: ProxySettings
  /** Told once per transport when strong reads cannot be forced (consistency.ts); none: not logged. */
  logger?: Pick<Logger, 'warn'>
  /**
   * Where a standby's redirect may be followed (registry.ts, callThrough): -vault-addr-allowlist,
   * only when the operator set it; undefined: redirects are never followed.
   */
  redirectTargets?: Pick<AddressAllowlist, 'allows'>
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
  /** Aborted when the caller gave up: the call ends at once with VaultCallAborted. */
  signal?: AbortSignal
  /** The deadline of the Mount the call serves (ms since the epoch): the order of its tenant's waiting calls (tenant-slots.ts). */
  dueAt?: number
  /** A tighter cap than -max-vault-response-size (token answers: MAX_TOKEN_ANSWER_BYTES). */
  maxResponseBytes?: number
  /** Any status is an answer (sys/health speaks in statuses); otherwise all but 200 and 204 throw VaultHttpError. */
  anyStatus?: boolean
  /** For the observer; derived from method and path when absent. */
  operation?: VaultOperation
  /**
   * The namespace whose Mount makes the call (PROVIDER_TENANT for the provider's own): its calls in
   * flight on this transport are bounded (MAX_CALLS_PER_TENANT), so that its slow ones cannot hold
   * every connection of the address.
   */
  tenant: string
  /** Which node of a cluster may answer, and who is told the answer's index (consistency.ts). */
  consistency?: CallConsistency
  /** Over a new connection, closed after the call (fresh-connection.ts): another node behind a Service. */
  freshConnection?: boolean
  /** Sent on from a standby's redirect (registry.ts, callThrough): never followed again. */
  redirected?: boolean
}

/** What the Vault layer needs of a transport (a fake one in unit tests). */
export interface VaultCaller {
  readonly address: string
  call(c: VaultCall): Promise<VaultAnswer>
}

/**
 * The pool of one transport. Vault sends no Keep-Alive hint, so undici would close an idle
 * connection after its own default of 4 s; the idle timeout keeps it for the next Mount
 * instead (see DEFAULT_VAULT_IDLE_CONNECTION_MS), and also caps a longer hint from a proxy
 * in front of Vault (a shorter one still wins).
 */
function poolOptions(opts: VaultTransportOptions): Pool.Options {
  const idleMs = opts.idleConnectionMs ?? DEFAULT_VAULT_IDLE_CONNECTION_MS
  return { connections: MAX_SOCKETS_PER_VAULT, keepAliveTimeout: idleMs, keepAliveMaxTimeout: idleMs }
}

/** Opens the dispatcher of a transport's connections: the pool (`connections` of them), or one for a fresh call. */
type OpenDispatcher = (connections: number) => Dispatcher

export class VaultTransport implements VaultCaller {
  readonly address: string
  private readonly base: Dispatcher
  private readonly dispatcher: Dispatcher
  private readonly origin: string
  private readonly route: ProxyRoute | undefined
  /** The address's X-Vault-Index format, from this transport's answers only. */
  private readonly index: IndexRecord
  private closed = false

  private constructor(
    address: string,
    open: OpenDispatcher,
    origin: string,
    opts: VaultTransportOptions,
    route?: ProxyRoute,
  ) {
    this.address = address
    this.base = open(MAX_SOCKETS_PER_VAULT)
    this.origin = origin
    this.route = route
    this.index = new IndexRecord(() =>
      opts.logger?.warn(
        { vaultAddress: address },
        "Vault's X-Vault-Index is in a format the provider cannot write (Vault Enterprise?): strong reads are " +
          'sent without consistency headers, and a performance standby may answer them from an older copy; point ' +
          "vaultAddress at the active node's Service (<release>-active) or turn standby reads off on the server",
      ),
    )
    // compose() wraps in order: the first is nearest the pool.
    this.dispatcher = this.base.compose(
      freshConnections(() => open(1)),
      closeNodeAnswers,
      bodyCaps(opts.maxResponseBytes),
      noRedirects(address),
      tenantSlots(),
      callDeadline,
      observeCalls(opts.observer),
    )
  }

  /**
   * Reads the TLS files (capped, see tls-files.ts) and builds the connection pool; nothing
   * connects yet. `contexts`: TLS contexts shared with other transports of the same material.
   * Built by the registry (registry.ts) only.
   */
  static async create(
    conn: VaultConnection,
    opts: VaultTransportOptions,
    contexts: SecureContexts,
  ): Promise<VaultTransport> {
    const address = conn.address
    const pool = poolOptions(opts)
    if (address.startsWith('unix://')) {
      const socketPath = address.slice('unix://'.length)
      const connect = guardedConnector(address, { socketPath }, opts, UNIX_PLACEHOLDER_ORIGIN)
      const open: OpenDispatcher = (connections) => new Pool(UNIX_PLACEHOLDER_ORIGIN, { ...pool, connections, connect })
      return new VaultTransport(address, open, UNIX_PLACEHOLDER_ORIGIN, opts)
    }
    const decision = proxyFor(address, opts.proxy)
    if (decision.kind === 'refused')
      throw new ProviderError('VAULT_UNAVAILABLE', `Vault at ${q(address)}: ${decision.reason}`)
    const tls = address.startsWith('https://')
      ? contexts.connectOptions(await readTlsMaterial(conn, opts), address)
      : undefined
    const origin = new URL(address).origin
    if (decision.kind === 'proxy') {
      const route = { endpoint: decision.endpoint, variable: decision.variable, vaultAddress: address }
      const open: OpenDispatcher = (connections) =>
        proxiedDispatcher(address, route, tls, opts, { ...pool, connections })
      return new VaultTransport(address, open, origin, opts, route)
    }
    const connect = guardedConnector(address, tls ?? {}, opts, address)
    const open: OpenDispatcher = (connections) => new Pool(address, { ...pool, connections, connect })
    return new VaultTransport(address, open, origin, opts)
  }

  /** Closes the pool's connections (in-flight calls fail). */
  async close(): Promise<void> {
    this.closed = true
    await this.base.destroy().catch(() => undefined)
  }

  /** Takes no new call; calls under way finish, then the connections close. */
  retire(): void {
    this.closed = true
    this.base.close().catch(() => undefined)
  }

  /** One call through the chain; settled exactly once. */
  call(c: VaultCall): Promise<VaultAnswer> {
    if (this.closed) return Promise.reject(new TransportClosed('the connection pool was closed'))
    const headers: Record<string, string> = { accept: 'application/json' }
    if (c.token !== undefined && c.token !== '') headers['x-vault-token'] = c.token
    if (c.namespace !== undefined && c.namespace !== '') headers['x-vault-namespace'] = c.namespace
    Object.assign(headers, this.index.headers(c.consistency))
    let body: string | undefined
    if (c.body !== undefined) {
      body = JSON.stringify(c.body)
      headers['content-type'] = 'application/json'
    }
    const options = {
      origin: this.origin,
      path: `/v1/${c.path.replace(/^\/+/, '')}`,
      method: c.method as Dispatcher.HttpMethod,
      headers,
      body,
      // The whole call has one limit (call-deadline.ts), not one per phase.
      headersTimeout: 0,
      bodyTimeout: 0,
      // What the interceptors read.
      timeoutMs: c.timeoutMs,
      callerSignal: c.signal,
      tenant: c.tenant,
      dueAt: c.dueAt,
      maxResponseBytes: c.maxResponseBytes,
      freshConnection: c.freshConnection,
      observed: {
        operation: c.operation ?? operationOfCall(c.method, c.path),
        description: `${c.method.toUpperCase()} ${c.path}`,
      },
    }
    const learn = (header: string | string[] | undefined): void => {
      const index = this.index.learn(header)
      if (index !== undefined) c.consistency?.onIndex?.(index)
    }
    return new Promise<VaultAnswer>((resolve, reject) => {
      this.dispatcher.dispatch(options, new AnswerHandler(c.anyStatus === true, resolve, reject, this.route, learn))
    })
  }
}
