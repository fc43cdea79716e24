/**
 * One pod identity's conversation with Vault: its own node-vault client (the
 * token holder: node-vault's login overwrites the client's token, so a client
 * is never shared between identities), one login at a time, and a single
 * re-login when a cached token is refused.
 */
import nodeVault from 'node-vault'
import { ProviderError, q } from '../errors.js'
import type { Logger } from '../observability/logger.js'
import type { HttpMethod, Json, PodIdentity, VaultConnection } from '../request/types.js'
import type { Deadline } from '../util/deadline.js'
import { statusOf, vaultError, isTimeout } from './errors.js'
import type { Transport } from './transport.js'

/** No single Vault call may take longer than this, whatever the Mount's deadline. */
export const VAULT_CALL_TIMEOUT_MS = 30_000
/** A token is replaced once this fraction of its TTL has passed (renewal comes with the token lifecycle). */
export const TOKEN_REFRESH_FRACTION = 2 / 3

export interface VaultIdentity {
  connection: VaultConnection
  authMount: string
  role: string
  audience: string
  pod: PodIdentity
}

export interface VaultRequest {
  method: HttpMethod
  /** API path without /v1/ and without query. */
  path: string
  query: Array<[string, string]>
  body?: { [key: string]: Json }
}

/** Describes a request for error messages and logs: method, path and query names, never values of the body. */
export function describeRequest(req: Pick<VaultRequest, 'method' | 'path' | 'query'>): string {
  const query = req.query.length > 0 ? `?${new URLSearchParams(req.query).toString()}` : ''
  return `${req.method} ${req.path}${query}`
}

function encodePath(path: string): string {
  return path
    .split('/')
    .map((s) => encodeURIComponent(s))
    .join('/')
}

interface TokenState {
  /** Increases with every login, so a 403 can tell whether someone already re-logged in. */
  generation: number
  obtainedAt: number
  refreshAt: number
}

export type JwtSupplier = () => Promise<string>

export class VaultSession {
  readonly identity: VaultIdentity
  private readonly transport: Transport
  private readonly client: ReturnType<typeof nodeVault>
  private readonly logger: Logger
  private token: TokenState | undefined
  private loginInFlight: Promise<TokenState> | undefined
  private generation = 0
  lastUsedAt = Date.now()

  constructor(identity: VaultIdentity, transport: Transport, logger: Logger) {
    this.identity = identity
    this.transport = transport
    this.logger = logger
    this.client = nodeVault({
      apiVersion: 'v1',
      endpoint: transport.endpoint,
      namespace: identity.connection.namespace,
      // node-vault's debug output includes request bodies (the login JWT).
      debug: () => undefined,
    })
    // node-vault falls back to VAULT_TOKEN / VAULT_NAMESPACE / VAULT_PREFIX from the
    // provider's own environment: a pod must never borrow the provider's identity.
    this.client.token = ''
    ;(this.client as unknown as { namespace?: string }).namespace = identity.connection.namespace
    ;(this.client as unknown as { pathPrefix: string }).pathPrefix = ''
  }

  private where(): string {
    return `role ${q(this.identity.role)}, auth mount ${q(this.identity.authMount)}`
  }

  private timeoutFor(deadline: Deadline, what: string): number {
    const remaining = deadline.remainingMs()
    if (remaining <= 0) {
      throw new ProviderError('DEADLINE_EXCEEDED', `${what}: the Mount ran out of time before this Vault call`)
    }
    return Math.max(1, Math.min(remaining, VAULT_CALL_TIMEOUT_MS))
  }

  private requestOptions(deadline: Deadline, what: string): Record<string, unknown> {
    return {
      timeout: this.timeoutFor(deadline, what),
      httpAgent: this.transport.httpAgent,
      httpsAgent: this.transport.httpsAgent,
    }
  }

  private async login(getJwt: JwtSupplier, deadline: Deadline): Promise<TokenState> {
    const what = `login to Vault at ${this.identity.connection.address} (${this.where()})`
    const jwt = await getJwt()
    const started = Date.now()
    let body: unknown
    try {
      body = await this.client.request({
        path: `/auth/${encodePath(this.identity.authMount)}/login`,
        method: 'POST',
        json: { jwt, role: this.identity.role },
        headers: {},
        ...this.requestOptions(deadline, what),
      })
    } catch (err) {
      if (isTimeout(err) && deadline.expired()) {
        throw new ProviderError('DEADLINE_EXCEEDED', `${what}: Vault did not answer before the Mount's deadline`)
      }
      throw vaultError(err, what, true)
    }
    const auth = (body as { auth?: { client_token?: unknown; lease_duration?: unknown } } | null)?.auth
    if (!auth || typeof auth.client_token !== 'string' || auth.client_token === '') {
      throw new ProviderError('VAULT_BAD_RESPONSE', `${what}: Vault's answer carries no client token`)
    }
    const ttlSec = typeof auth.lease_duration === 'number' && auth.lease_duration > 0 ? auth.lease_duration : 0
    this.client.token = auth.client_token
    const now = Date.now()
    this.generation += 1
    const state: TokenState = {
      generation: this.generation,
      obtainedAt: now,
      refreshAt: ttlSec === 0 ? Number.POSITIVE_INFINITY : now + ttlSec * 1000 * TOKEN_REFRESH_FRACTION,
    }
    this.logger.debug(
      { role: this.identity.role, authMount: this.identity.authMount, ttlSec, durationMs: now - started },
      'logged in to Vault',
    )
    return state
  }

  /** A usable token: the cached one, or one from a login shared by every concurrent caller. */
  private async ensureToken(getJwt: JwtSupplier, deadline: Deadline): Promise<TokenState> {
    const current = this.token
    if (current && Date.now() < current.refreshAt) return current
    if (!this.loginInFlight) {
      this.loginInFlight = this.login(getJwt, deadline)
        .then((state) => {
          this.token = state
          return state
        })
        .finally(() => {
          this.loginInFlight = undefined
        })
    }
    return this.loginInFlight
  }

  private invalidate(generation: number): void {
    if (this.token?.generation === generation) this.token = undefined
  }

  /**
   * Sends one request with the identity's token. A 403 on a token that this
   * call did not just obtain means it was revoked or expired behind our back:
   * log in again once and retry once.
   */
  async request(req: VaultRequest, getJwt: JwtSupplier, deadline: Deadline, label: string): Promise<unknown> {
    this.lastUsedAt = Date.now()
    const callStartedAt = Date.now()
    const token = await this.ensureToken(getJwt, deadline)
    try {
      return await this.send(req, deadline, label)
    } catch (err) {
      const wasCached = token.obtainedAt < callStartedAt
      if (statusOf(err) !== 403 || !wasCached) throw this.readError(err, req, label, deadline)
      this.logger.debug({ role: this.identity.role }, 'cached Vault token refused; logging in again')
      this.invalidate(token.generation)
      await this.ensureToken(getJwt, deadline)
      try {
        return await this.send(req, deadline, label)
      } catch (retryErr) {
        throw this.readError(retryErr, req, label, deadline)
      }
    }
  }

  private readError(err: unknown, req: VaultRequest, label: string, deadline: Deadline): ProviderError {
    const what = `${label}: ${describeRequest(req)} (${this.where()})`
    if (isTimeout(err) && deadline.expired()) {
      return new ProviderError('DEADLINE_EXCEEDED', `${what}: Vault did not answer before the Mount's deadline`)
    }
    return vaultError(err, what, false)
  }

  private async send(req: VaultRequest, deadline: Deadline, label: string): Promise<unknown> {
    const query = req.query.length > 0 ? `?${new URLSearchParams(req.query).toString()}` : ''
    const options: Record<string, unknown> = {
      path: `/${encodePath(req.path)}${query}`,
      method: req.method,
      headers: {},
      ...this.requestOptions(deadline, `${label}: ${describeRequest(req)}`),
    }
    if (req.body !== undefined) options.json = req.body
    return this.client.request(options as { path: string; method: string })
  }

  /** Forget the token locally (revocation comes with the token lifecycle work). */
  close(): void {
    this.client.token = ''
    this.token = undefined
  }
}
