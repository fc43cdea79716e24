/**
 * One identity's conversation with Vault, through its own node-vault client
 * (vault-client.ts): the client holds the identity's token, set by
 * node-vault's login and renew-self methods. Here: one login at a time, the
 * token's lifecycle (renewed at two thirds of its TTL, replaced when it
 * cannot be, revoked when the identity goes away), a single re-login when a
 * cached token is refused, and what the identity has read (secret-cache.ts).
 */
import { isProviderError, ProviderError, q, textOf, type ErrorCode, type LazyText } from '../../errors.js'
import { decodeServiceAccountJwt } from '../../identity/claims.js'
import type { Logger } from '../../observability/logger.js'
import type { VaultObserver } from '../../observability/vault-observer.js'
import { loginNamespace, type PodIdentity, type VaultConnection } from '../../request/types.js'
import type { Clock, Deadline } from '../../util/deadline.js'
import { REAL_TIMERS, SharedCall, type Timers } from '../../util/shared-call.js'
import { attemptsOf, deadlineError, saysNothingStored, SecretNotStored, vaultError } from '../failure-to-error.js'
import { apiPath, describeRequest, type VaultRequest } from '../paths.js'
import type { BreakerRegistry } from '../resilience/breaker.js'
import {
  DEFAULT_RETRY_POLICY,
  abortableSleep,
  withRetry,
  type RetryHooks,
  type RetryPolicy,
  type Sleep,
} from '../resilience/retry.js'
import { isTimeout, statusOf, VaultCallAborted } from '../transport/call-errors.js'
import { MAX_TOKEN_ANSWER_BYTES, type VaultCaller } from '../transport/transport.js'
import { createVaultClient, sendRequest, type CallOptions, type VaultClient } from '../vault-client.js'
import type { ExportedSession, ImportedEntries } from './exported.js'
import { SecretCache, type FetchOutcome, type SecretCacheOptions } from './secret-cache.js'

/** No single Vault call may take longer than this, whatever the Mount's deadline. */
export const VAULT_CALL_TIMEOUT_MS = 30_000
/** A token in use is renewed once this fraction of its TTL has passed. */
export const TOKEN_RENEW_FRACTION = 2 / 3
/** A renewal that grants less than this share of the login's TTL means the max TTL is near: log in again. */
export const MIN_TOKEN_RENEWED_SHARE = 1 / 4
/** Revocation is best effort and must not hold up anything. */
export const REVOKE_TIMEOUT_MS = 5_000

/** What a call that states no options of its own (revoke-self) is held to. */
const REVOKE_CALL: CallOptions = {
  timeoutMs: REVOKE_TIMEOUT_MS,
  maxResponseBytes: MAX_TOKEN_ANSWER_BYTES,
  operation: 'revoke',
}

export interface VaultIdentity {
  connection: VaultConnection
  authMount: string
  role: string
  audience: string
  pod: PodIdentity
}

/** The lifetime of the token the client holds (the token itself lives only in the node-vault client). */
interface TokenState {
  /** Increases with every login, so a 403 can tell whether someone already re-logged in. */
  generation: number
  obtainedAt: number
  /** The login's TTL; 0 for a token that never expires. */
  ttlMs: number
  renewable: boolean
  renewAt: number
  expiresAt: number
}

export interface SessionOptions extends SecretCacheOptions {
  logger: Logger
  /** Told about cache reuse (the transport itself reports every HTTP call). */
  observer?: VaultObserver
  /** The layer that fails fast while the address is down and sees every call's outcome. */
  breakers: Pick<BreakerRegistry, 'hooks'>
  retryPolicy?: RetryPolicy
  /** The wait between retries (injected by tests). */
  sleep?: Sleep
  clock?: Clock
  timers?: Timers
}

/** Refusals of the HTTP layer and the connection guard: they say what happened, the session says to which call. */
const TRANSPORT_REFUSALS: ReadonlySet<ErrorCode> = new Set([
  'VAULT_REDIRECT_REFUSED',
  'VAULT_RESPONSE_TOO_LARGE',
  'VAULT_ADDRESS_NOT_ALLOWED',
])

function transportRefusal(err: unknown, what: string): ProviderError | undefined {
  if (!isProviderError(err) || !TRANSPORT_REFUSALS.has(err.code)) return undefined
  return new ProviderError(err.code, `${what}: ${err.message}`)
}

function stringField(obj: unknown, key: string): string | undefined {
  if (obj === null || typeof obj !== 'object') return undefined
  const v = (obj as Record<string, unknown>)[key]
  return typeof v === 'string' ? v : undefined
}

export type JwtSupplier = () => Promise<string>

/** How a message names a namespace: nothing for the root one. */
function inNamespace(namespace: string): string {
  return namespace === '' ? '' : ` in namespace ${q(namespace)}`
}

export class VaultSession {
  readonly identity: VaultIdentity
  private readonly client: VaultClient
  private readonly logger: Logger
  private token: TokenState | undefined
  private loginInFlight: SharedCall<TokenState> | undefined
  private generation = 0
  /** Expiry of recent tokens by generation: leases die with the token that created them. */
  private readonly expiryByGeneration = new Map<number, number>()
  private readonly cache: SecretCache
  private readonly observer: VaultObserver | undefined
  private readonly breakers: Pick<BreakerRegistry, 'hooks'>
  private readonly retryPolicy: RetryPolicy
  private readonly sleep: Sleep
  private readonly clock: Clock
  private readonly timers: Timers
  lastUsedAt: number
  /** Handed to a successor process (exportState): this process never revokes it. */
  private handedOver = false

  /** `transport` is the identity's Vault connection (shared with other identities; tokens never live there). */
  constructor(identity: VaultIdentity, transport: VaultCaller, opts: SessionOptions) {
    this.identity = identity
    this.logger = opts.logger
    this.observer = opts.observer
    this.breakers = opts.breakers
    this.retryPolicy = opts.retryPolicy ?? DEFAULT_RETRY_POLICY
    this.sleep = opts.sleep ?? abortableSleep
    this.clock = opts.clock ?? Date.now
    this.timers = opts.timers ?? REAL_TIMERS
    this.cache = new SecretCache({ ...opts, clock: this.clock, timers: this.timers })
    this.lastUsedAt = this.clock()
    // Login, renew-self and revoke-self go to the token's namespace; reads name theirs (request()).
    this.client = createVaultClient(transport, loginNamespace(identity.connection) || undefined, REVOKE_CALL)
  }

  /** How errors name the identity. */
  private where(): string {
    return `role ${q(this.identity.role)}, auth mount ${q(this.identity.authMount)}`
  }

  /** The options of one call: what is left of the Mount's deadline (at most VAULT_CALL_TIMEOUT_MS) and its cancellation. */
  private callOptions(deadline: Deadline, what: LazyText, more: Partial<CallOptions> = {}): CallOptions {
    const remaining = deadline.remainingMs()
    if (remaining <= 0) {
      throw new ProviderError('DEADLINE_EXCEEDED', `${textOf(what)}: the Mount ran out of time before this Vault call`)
    }
    return { timeoutMs: Math.max(1, Math.min(remaining, VAULT_CALL_TIMEOUT_MS)), cancel: deadline.cancel, ...more }
  }

  /** Retries (retry.ts) with the address's breaker (breaker.ts) as a layer around each call. */
  private retried<T>(call: () => Promise<T>, deadline: Deadline, callName: string): Promise<T> {
    const breaker = this.breakers.hooks(this.identity.connection, this.identity.pod.namespace)
    const hooks: RetryHooks = {
      beforeAttempt: breaker.beforeAttempt,
      onFailure: breaker.onFailure,
      onRetry: (attempt, delayMs, reason) =>
        this.logger.debug({ call: callName, attempt, delayMs, reason }, 'retrying Vault call'),
    }
    return withRetry(call, deadline, this.retryPolicy, hooks, this.sleep)
  }

  private loginWhat(): string {
    return `login to Vault at ${this.identity.connection.address}${inNamespace(loginNamespace(this.identity.connection))} (${this.where()})`
  }

  /** The namespace a request reads in ('' the root namespace). */
  private readNamespace(req: VaultRequest): string {
    return req.namespace ?? this.identity.connection.namespace ?? ''
  }

  private async login(getJwt: JwtSupplier, deadline: Deadline): Promise<TokenState> {
    const what = this.loginWhat()
    const jwt = await getJwt()
    const started = this.clock()
    // A refused or expired token is not sent along with the login.
    this.client.token = ''
    let body: unknown
    try {
      // Same retry policy and breaker as reads: a 429 or a reset during a rollout is not a failed Mount.
      // kubernetes and jwt auth take the same login request; node-vault's two methods differ only in
      // their default mount, and the mount is always named here.
      body = await this.retried(
        () =>
          this.client.kubernetesLogin({
            role: this.identity.role,
            jwt,
            mount_point: this.identity.authMount,
            requestOptions: {
              vault: this.callOptions(deadline, what, { maxResponseBytes: MAX_TOKEN_ANSWER_BYTES, operation: 'login' }),
            },
          }),
        deadline,
        'login',
      )
    } catch (err) {
      if (err instanceof VaultCallAborted || (isTimeout(err) && deadline.expired())) {
        throw deadlineError(what, err instanceof VaultCallAborted)
      }
      throw transportRefusal(err, what) ?? vaultError(err, what, true)
    }
    const auth = (body as { auth?: { client_token?: unknown; lease_duration?: unknown; metadata?: unknown } } | null)
      ?.auth
    if (!auth || typeof auth.client_token !== 'string' || auth.client_token === '') {
      this.client.token = ''
      throw new ProviderError('VAULT_BAD_RESPONSE', `${what}: Vault's answer carries no client token`)
    }
    const mismatch = this.identityMismatch(auth.metadata, jwt)
    if (mismatch !== undefined) {
      await this.revokeHeldToken('revoking a refused login token failed')
      throw new ProviderError(
        'LOGIN_IDENTITY_MISMATCH',
        `login at auth mount ${q(this.identity.authMount)} (role ${q(this.identity.role)}, Vault at ` +
          `${this.identity.connection.address}) was not issued for the pod's service-account token (${mismatch}); ` +
          "the provider's TLS client certificate never authenticates a pod: use a kubernetes or jwt auth mount",
      )
    }
    const ttlSec = typeof auth.lease_duration === 'number' && auth.lease_duration > 0 ? auth.lease_duration : 0
    const now = this.clock()
    this.generation += 1
    const state = this.tokenState(
      this.generation,
      now,
      ttlSec * 1000,
      (auth as { renewable?: unknown }).renewable === true,
    )
    this.logger.debug(
      { role: this.identity.role, authMount: this.identity.authMount, ttlSec, durationMs: now - started },
      'logged in to Vault',
    )
    return state
  }

  /**
   * Why a login answer was not issued for the pod's JWT, or undefined when it
   * was. kubernetes and jwt auth both put the role into auth.metadata, and
   * kubernetes auth the service account it verified; an answer without the
   * role came from a method that ignored the JWT (cert auth answers for the
   * provider's own TLS client certificate).
   */
  private identityMismatch(metadata: unknown, jwt: string): string | undefined {
    const role = stringField(metadata, 'role')
    if (role === undefined) {
      return stringField(metadata, 'cert_name') !== undefined || stringField(metadata, 'common_name') !== undefined
        ? 'Vault answered for a certificate identity'
        : 'the answer names no role'
    }
    if (role !== this.identity.role) return `the answer is for role ${q(role)}`
    const pod = this.identity.pod
    const ns = stringField(metadata, 'service_account_namespace')
    if (ns !== undefined && ns !== pod.namespace) return `the answer is for namespace ${q(ns)}`
    const sa = stringField(metadata, 'service_account_name')
    if (sa !== undefined && sa !== pod.serviceAccount) return `the answer is for service account ${q(sa)}`
    const uid = stringField(metadata, 'service_account_uid')
    if (uid !== undefined) {
      let jwtUid: string | undefined
      try {
        jwtUid = decodeServiceAccountJwt(jwt).serviceAccount.uid
      } catch {
        jwtUid = undefined
      }
      if (jwtUid !== undefined && uid !== jwtUid) return 'the answer is for another service account UID'
    }
    return undefined
  }

  /** revoke-self with the token the client holds, then the client holds none. Best effort, bounded in time. */
  private async revokeHeldToken(failureLog: string): Promise<boolean> {
    try {
      await this.client.tokenRevokeSelf()
      return true
    } catch (err) {
      this.logger.debug({ role: this.identity.role, status: statusOf(err) }, failureLog)
      return false
    } finally {
      this.client.token = ''
    }
  }

  private tokenState(generation: number, obtainedAt: number, ttlMs: number, renewable: boolean): TokenState {
    const expiresAt = ttlMs === 0 ? Number.POSITIVE_INFINITY : obtainedAt + ttlMs
    this.expiryByGeneration.set(generation, expiresAt)
    // Only the current and the previous token can still own live leases worth tracking.
    for (const g of this.expiryByGeneration.keys()) if (g < generation - 1) this.expiryByGeneration.delete(g)
    return {
      generation,
      obtainedAt,
      ttlMs,
      renewable,
      renewAt: ttlMs === 0 ? Number.POSITIVE_INFINITY : obtainedAt + ttlMs * TOKEN_RENEW_FRACTION,
      expiresAt,
    }
  }

  tokenExpiresAt(generation: number): number {
    return this.expiryByGeneration.get(generation) ?? 0
  }

  /** renew-self; undefined when the token could not be extended enough to be worth keeping. */
  private async renew(current: TokenState, deadline: Deadline): Promise<TokenState | undefined> {
    const what = `token renewal (${this.where()})`
    try {
      const body: unknown = await this.client.tokenRenewSelf({
        requestOptions: {
          vault: this.callOptions(deadline, what, { maxResponseBytes: MAX_TOKEN_ANSWER_BYTES, operation: 'renew' }),
        },
      })
      const auth = (body as { auth?: { lease_duration?: unknown; renewable?: unknown } } | null)?.auth
      const ttlSec = typeof auth?.lease_duration === 'number' ? auth.lease_duration : 0
      if (ttlSec * 1000 < current.ttlMs * MIN_TOKEN_RENEWED_SHARE) return undefined
      this.logger.debug({ role: this.identity.role, ttlSec }, 'renewed the Vault token')
      return this.tokenState(current.generation, this.clock(), ttlSec * 1000, auth?.renewable === true)
    } catch (err) {
      // The caller left: no login either.
      if (err instanceof VaultCallAborted) throw err
      this.logger.debug(
        { role: this.identity.role, status: statusOf(err) },
        'Vault token renewal failed; logging in again',
      )
      return undefined
    }
  }

  /** Renews the token if possible, else logs in. */
  private async refresh(current: TokenState | undefined, getJwt: JwtSupplier, deadline: Deadline): Promise<TokenState> {
    if (current && current.renewable && this.clock() < current.expiresAt) {
      const renewed = await this.renew(current, deadline)
      if (renewed) return renewed
    }
    return this.login(getJwt, deadline)
  }

  /**
   * A usable token: the cached one, or one from a renewal or login shared by
   * every concurrent caller (util/shared-call.ts): it goes on for whoever
   * still waits, and each caller gives up on its own deadline.
   */
  private ensureToken(getJwt: JwtSupplier, deadline: Deadline): Promise<TokenState> {
    const current = this.token
    if (current && this.clock() < current.renewAt) return Promise.resolve(current)
    const inFlight = this.loginInFlight
    if (inFlight?.joinable) return inFlight.join(deadline, (cancelled) => deadlineError(this.loginWhat(), cancelled))
    const flight = new SharedCall<TokenState>(
      (shared) =>
        this.refresh(current, getJwt, shared).then((state) => {
          this.token = state
          return state
        }),
      { clock: this.clock, timers: this.timers },
    )
    this.loginInFlight = flight
    const joined = flight.join(deadline, (cancelled) => deadlineError(this.loginWhat(), cancelled))
    void flight.done.then(() => {
      if (this.loginInFlight === flight) this.loginInFlight = undefined
    })
    return joined
  }

  private invalidate(generation: number): void {
    if (this.token?.generation === generation) this.token = undefined
  }

  /** One request with the identity's token: GET and POST through node-vault's read and write, the rest through its generic request. */
  async request(req: VaultRequest, getJwt: JwtSupplier, deadline: Deadline, label: string): Promise<unknown> {
    const path = apiPath(req)
    const namespace = this.readNamespace(req)
    const send = (options: CallOptions): Promise<unknown> => {
      const vault = { ...options, namespace }
      if (req.method === 'GET' && req.body === undefined) return this.client.read(path, { vault })
      if (req.method === 'POST') return this.client.write(path, req.body, { vault })
      return sendRequest(this.client, req.method, path, req.body, vault)
    }
    return this.withToken(send, describeRequest(req) + inNamespace(namespace), getJwt, deadline, label, true)
  }

  /**
   * Sends one call with the identity's token, under the retry policy (resilience/retry.ts) with the
   * address's breaker (resilience/breaker.ts) as a layer. A 403 on a token that was already cached
   * when this call began means it was revoked or expired behind our back: log in again once and
   * retry once.
   */
  private async withToken(
    send: (vault: CallOptions) => Promise<unknown>,
    callName: string,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
    ownRead = false,
  ): Promise<unknown> {
    this.lastUsedAt = this.clock()
    const what = (): string => `${label}: ${callName}`
    // Options rebuilt per attempt: the timeout is what is left of the Mount's deadline.
    const attempt = (): Promise<unknown> =>
      this.retried(() => send(this.callOptions(deadline, what)), deadline, callName)
    const cachedGeneration = this.token?.generation
    const token = await this.ensureToken(getJwt, deadline)
    try {
      return await attempt()
    } catch (err) {
      const wasCached = token.generation === cachedGeneration
      if (statusOf(err) !== 403 || !wasCached) throw this.callError(err, callName, label, deadline, ownRead)
      this.logger.debug({ role: this.identity.role }, 'cached Vault token refused; logging in again')
      this.invalidate(token.generation)
      await this.ensureToken(getJwt, deadline)
      try {
        return await attempt()
      } catch (retryErr) {
        throw this.callError(retryErr, callName, label, deadline, ownRead)
      }
    }
  }

  /** `ownRead`: the call is the objects' own read, whose "nothing stored here" `optional` may skip. */
  private callError(
    err: unknown,
    callName: string,
    label: string,
    deadline: Deadline,
    ownRead: boolean,
  ): ProviderError {
    const what = `${label}: ${callName} (${this.where()})`
    if (err instanceof VaultCallAborted || (isTimeout(err) && deadline.expired())) {
      return deadlineError(what, err instanceof VaultCallAborted)
    }
    const refused = transportRefusal(err, what)
    if (refused) return refused
    const failed = vaultError(err, what, false)
    if (ownRead && saysNothingStored(err)) return new SecretNotStored(failed.message)
    const attempts = attemptsOf(err)
    if (attempts <= 1 || failed.code !== 'VAULT_UNAVAILABLE') return failed
    return new ProviderError(failed.code, `${failed.message} (after ${attempts} attempts)`)
  }

  /**
   * Reads through the identity's cache: coalesced with identical reads in
   * flight, and for leased or issued secrets, the pod's earlier answer while
   * it is good (see secret-cache.ts).
   */
  fetch(
    req: VaultRequest,
    requestKey: string,
    podUid: string,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
  ): Promise<FetchOutcome> {
    this.lastUsedAt = this.clock()
    const namespace = this.readNamespace(req)
    const giveUp = (cancelled: boolean): ProviderError =>
      deadlineError(`${label}: ${describeRequest(req)}${inNamespace(namespace)} (${this.where()})`, cancelled)
    const outcome = this.cache.fetch(requestKey, podUid, req.method !== 'GET', deadline, giveUp, {
      // A coalesced read runs under its own deadline: the latest of its waiters' (util/shared-call.ts).
      read: async (shared) => {
        const body = await this.request(req, getJwt, shared, label)
        return { body, tokenGeneration: this.token?.generation ?? 0 }
      },
      renewLease: async (leaseId) => {
        const body = (await this.withToken(
          // A lease lives in the namespace it was read in.
          (vault) => this.client.renew({ lease_id: leaseId, requestOptions: { vault: { ...vault, namespace } } }),
          'PUT sys/leases/renew',
          getJwt,
          deadline,
          `${label}: lease renewal`,
        )) as { lease_duration?: unknown; renewable?: unknown } | null
        return {
          ttlMs: typeof body?.lease_duration === 'number' ? body.lease_duration * 1000 : 0,
          renewable: body?.renewable === true,
        }
      },
      tokenExpiresAt: (generation) => this.tokenExpiresAt(generation),
    })
    return outcome.then((o) => {
      this.report(o)
      return o
    })
  }

  private report(o: FetchOutcome): void {
    const observer = this.observer
    if (!observer) return
    try {
      const reused = o.source !== 'vault'
      observer.cacheLookup?.('response', reused)
      if (o.kind !== 'static') observer.leaseReuse?.(reused)
    } catch {
      // Instrumentation never fails a Mount.
    }
  }

  /** Forgets the token and what was read with it, without telling Vault (pods may still use its leases). */
  close(): void {
    this.token = undefined
    this.client.token = ''
    this.cache.clear()
  }

  /**
   * Revokes the token (and with it, in Vault, the leases it created): for an
   * identity whose pods are gone. Best effort, bounded in time.
   */
  async revoke(): Promise<void> {
    const token = this.token
    if (token && this.clock() < token.expiresAt && !this.handedOver) {
      if (await this.revokeHeldToken('revoking an idle Vault token failed')) {
        this.logger.debug({ role: this.identity.role }, 'revoked the Vault token of an idle identity')
      }
    }
    this.close()
  }

  /**
   * Handover (src/handover/): the token, its lifetime and what this identity has read, for a
   * successor process that goes on with them; undefined without a live token. From then on this
   * process never revokes the token: the successor owns it.
   */
  exportState(now = this.clock()): ExportedSession | undefined {
    const token = this.token
    if (!token || now >= token.expiresAt || this.client.token === '') return undefined
    this.handedOver = true
    return {
      identity: this.identity,
      token: { value: this.client.token, ...token },
      earlierTokens: [...this.expiryByGeneration]
        .filter(([g]) => g !== token.generation)
        .map(([generation, expiresAt]) => ({ generation, expiresAt })),
      lastUsedAt: this.lastUsedAt,
      entries: this.cache.exportEntries(),
    }
  }

  /**
   * Handover: goes on with a predecessor's token and reads as if it had made them (renews,
   * re-logs in and revokes as usual). Undefined when this session already has a token of its own.
   */
  importState(state: ExportedSession, now = this.clock()): ImportedEntries | undefined {
    if (this.token !== undefined || this.generation !== 0) return undefined
    const { value, ...token } = state.token
    this.generation = token.generation
    for (const e of state.earlierTokens) this.expiryByGeneration.set(e.generation, e.expiresAt)
    this.expiryByGeneration.set(token.generation, token.expiresAt)
    this.token = token
    this.client.token = value
    this.lastUsedAt = state.lastUsedAt
    return this.cache.importEntries(state.entries, now, (g) => this.tokenExpiresAt(g))
  }
}
