/**
 * One identity's conversation with Vault, through its own node-vault client
 * (vault-client.ts): the client holds the identity's token, set by
 * node-vault's login and renew-self methods. Here: one login at a time, the
 * token's lifecycle (renewed at two thirds of its TTL, replaced when it
 * cannot be, revoked when the identity goes away), a single re-login when a
 * cached token is refused, and reads through what the identity has kept
 * (secret-cache.ts, which the session asks and which never asks back):
 * a read takes the token first, then joins an identical read in flight or
 * starts one (shared-calls.ts), and keeps its answer. Each read states its
 * consistency (transport/consistency.ts): strong, or eventual after the
 * index of the identity's own latest login or write (read-your-writes).
 */
import { ProviderError, q, textOf, type ErrorFields, type LazyText } from '../../errors.js'
import { decodeServiceAccountJwt } from '../../identity/claims.js'
import type { Logger } from '../../observability/logger.js'
import type { VaultObserver } from '../../observability/vault-observer.js'
import { loginNamespace, type PodIdentity, type VaultConnection } from '../../request/types.js'
import { NEVER_CANCELLED } from '../../util/cancellation.js'
import type { Clock, Deadline } from '../../util/deadline.js'
import { REAL_TIMERS, type Timers } from '../../util/shared-call.js'
import { deadlineError, saysNothingStored, SecretNotStored, vaultError } from '../failure-to-error.js'
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
import type { CallConsistency } from '../transport/consistency.js'
import { MAX_TOKEN_ANSWER_BYTES, type VaultCaller } from '../transport/transport.js'
import {
  callOptions,
  createVaultClient,
  revokeSelf,
  sendRequest,
  type CallOptions,
  type MoreCallOptions,
  type VaultClient,
} from '../vault-client.js'
import type { ExportedSession, ImportedEntries } from './exported.js'
import type { Lifetime } from './lifetime.js'
import { SecretCache, type DueLease, type FetchOutcome, type SecretCacheOptions } from './secret-cache.js'
import { SharedCalls } from './shared-calls.js'

/** No single Vault call may take longer than this, whatever the Mount's deadline. */
export const VAULT_CALL_TIMEOUT_MS = 30_000
/** A token in use is renewed once this fraction of its TTL has passed. */
export const TOKEN_RENEW_FRACTION = 2 / 3
/** A renewal that grants less than this share of the login's TTL means the max TTL is near: log in again. */
export const MIN_TOKEN_RENEWED_SHARE = 1 / 4
/** Revocation is best effort and must not hold up anything. */
export const REVOKE_TIMEOUT_MS = 5_000

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

function stringField(obj: unknown, key: string): string | undefined {
  if (obj === null || typeof obj !== 'object') return undefined
  const v = (obj as Record<string, unknown>)[key]
  return typeof v === 'string' ? v : undefined
}

export type JwtSupplier = () => Promise<string>

/** The token a caller goes on with; `cached`: the one held when it came (a 403 then means it was revoked). */
interface HeldToken {
  state: TokenState
  cached: boolean
}

/** A read shared by identical reads in flight: Vault's answer, its kind, and the pod it was read for. */
interface SharedRead {
  body: unknown
  kind: Lifetime['kind']
  leaderPod: string
}

/** How a message names a namespace: nothing for the root one. */
function inNamespace(namespace: string): string {
  return namespace === '' ? '' : ` in namespace ${q(namespace)}`
}

export class VaultSession {
  readonly identity: VaultIdentity
  private readonly client: VaultClient
  private readonly logger: Logger
  private token: TokenState | undefined
  private generation = 0
  /** Expiry of recent tokens by generation: leases die with the token that created them. */
  private readonly expiryByGeneration = new Map<number, number>()
  private readonly cache: SecretCache
  /** One login (or renewal) at a time, and identical reads in flight: each shared by its waiters. */
  private readonly logins: SharedCalls<TokenState>
  private readonly reads: SharedCalls<SharedRead>
  private readonly shareDynamic: boolean
  private readonly observer: VaultObserver | undefined
  private readonly breakers: Pick<BreakerRegistry, 'hooks'>
  private readonly retryPolicy: RetryPolicy
  private readonly sleep: Sleep
  private readonly clock: Clock
  lastUsedAt: number
  /** Handed to a successor process (exportState): this process never revokes it. */
  private handedOver = false
  /**
   * The X-Vault-Index of this identity's own latest login or write: its eventual reads carry it, so
   * that a standby that has not applied it yet forwards them (read-your-writes).
   */
  private ownIndex: string | undefined
  private readonly noteOwnIndex = (index: string): void => {
    this.ownIndex = index
  }
  /** The consistency of a login, a renewal or a write: no header (standbys forward them), its index noted. */
  private readonly ownWrite: CallConsistency = { onIndex: this.noteOwnIndex }

  /** `transport` is the identity's Vault connection (shared with other identities; tokens never live there). */
  constructor(identity: VaultIdentity, transport: VaultCaller, opts: SessionOptions) {
    this.identity = identity
    this.logger = opts.logger
    this.observer = opts.observer
    this.breakers = opts.breakers
    this.retryPolicy = opts.retryPolicy ?? DEFAULT_RETRY_POLICY
    this.sleep = opts.sleep ?? abortableSleep
    this.clock = opts.clock ?? Date.now
    const time = { clock: this.clock, timers: opts.timers ?? REAL_TIMERS }
    this.logins = new SharedCalls(time)
    this.reads = new SharedCalls(time)
    this.shareDynamic = opts.shareDynamic
    this.cache = new SecretCache(opts)
    this.lastUsedAt = this.clock()
    // Its calls are held by the pods' namespace (the transport's tenant slots).
    this.client = createVaultClient(transport, identity.pod.namespace)
  }

  /** How errors name the identity. */
  private where(): string {
    return `role ${q(this.identity.role)}, auth mount ${q(this.identity.authMount)}`
  }

  /** The fields of an error about `call` (as people read it: the call and who made it). */
  private about(call: string): ErrorFields {
    return { call, address: this.identity.connection.address }
  }

  /** Login, renew-self and revoke-self go to the token's namespace; reads name theirs (readNamespace). */
  private get tokenNamespace(): string {
    return loginNamespace(this.identity.connection)
  }

  /**
   * The options of one call to `namespace`: what is left of the Mount's deadline (at most
   * VAULT_CALL_TIMEOUT_MS), its cancellation, and the deadline itself, which orders the call among
   * its namespace's waiting calls.
   */
  private callOptions(
    deadline: Deadline,
    what: LazyText,
    namespace: string,
    maxBytes?: number,
    more?: MoreCallOptions,
  ): CallOptions {
    const remaining = deadline.remainingMs()
    if (remaining <= 0) {
      throw new ProviderError(
        'DEADLINE_EXCEEDED',
        'the Mount ran out of time before this Vault call',
        this.about(textOf(what)),
      )
    }
    const timeoutMs = Math.max(1, Math.min(remaining, VAULT_CALL_TIMEOUT_MS))
    return callOptions(timeoutMs, deadline.cancel, namespace, maxBytes, { ...more, dueAt: deadline.expiresAt })
  }

  /** The address's breaker (breaker.ts) as a layer around each attempt of the retry policy (retry.ts). */
  private retryHooks(callName: string): RetryHooks {
    const breaker = this.breakers.hooks(this.identity.connection, this.identity.pod.namespace)
    return {
      beforeAttempt: breaker.beforeAttempt,
      onFailure: breaker.onFailure,
      onRetry: (attempt, delayMs, reason) =>
        this.logger.debug({ call: callName, attempt, delayMs, reason }, 'retrying Vault call'),
    }
  }

  /**
   * A failed call's error (`call`: which, as people read it). `kind`: the auth call, the objects'
   * own read (whose "nothing stored here" `optional` may skip: SecretNotStored), or another call.
   */
  private failure(err: unknown, call: string, deadline: Deadline, kind: 'login' | 'read' | 'other'): ProviderError {
    const fields = this.about(call)
    if (err instanceof VaultCallAborted || (isTimeout(err) && deadline.expired())) {
      return deadlineError(fields, err instanceof VaultCallAborted)
    }
    const failed = vaultError(err, fields, kind === 'login')
    return kind === 'read' && saysNothingStored(err) ? new SecretNotStored(failed.detail, failed.fields) : failed
  }

  private loginWhat(): string {
    return `login to Vault at ${this.identity.connection.address}${inNamespace(this.tokenNamespace)} (${this.where()})`
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
      body = await withRetry(
        (_n, { freshConnection }) =>
          this.client.kubernetesLogin({
            role: this.identity.role,
            jwt,
            mount_point: this.identity.authMount,
            requestOptions: this.callOptions(deadline, what, this.tokenNamespace, MAX_TOKEN_ANSWER_BYTES, {
              consistency: this.ownWrite,
              freshConnection,
            }),
          }),
        deadline,
        this.retryPolicy,
        this.retryHooks('login'),
        this.sleep,
      )
    } catch (err) {
      throw this.failure(err, what, deadline, 'login')
    }
    const auth = (body as { auth?: { client_token?: unknown; lease_duration?: unknown; metadata?: unknown } } | null)
      ?.auth
    if (!auth || typeof auth.client_token !== 'string' || auth.client_token === '') {
      this.client.token = ''
      throw new ProviderError('VAULT_BAD_RESPONSE', "Vault's answer carries no client token", this.about(what))
    }
    const mismatch = this.identityMismatch(auth.metadata, jwt)
    if (mismatch !== undefined) {
      await this.revokeHeldToken('revoking a refused login token failed')
      throw new ProviderError(
        'LOGIN_IDENTITY_MISMATCH',
        `login at auth mount ${q(this.identity.authMount)} (role ${q(this.identity.role)}, Vault at ` +
          `${this.identity.connection.address}) was not issued for the pod's service-account token (${mismatch}); ` +
          "the provider's TLS client certificate never authenticates a pod: use a kubernetes or jwt auth mount",
        { address: this.identity.connection.address },
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
      const options = callOptions(REVOKE_TIMEOUT_MS, NEVER_CANCELLED, this.tokenNamespace, MAX_TOKEN_ANSWER_BYTES)
      await revokeSelf(this.client, options)
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

  /** renew-self; undefined when the token could not be extended enough to be worth keeping. */
  private async renew(current: TokenState, deadline: Deadline): Promise<TokenState | undefined> {
    const what = `token renewal (${this.where()})`
    try {
      const body: unknown = await this.client.tokenRenewSelf({
        requestOptions: this.callOptions(deadline, what, this.tokenNamespace, MAX_TOKEN_ANSWER_BYTES, {
          consistency: this.ownWrite,
        }),
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

  /** Renews the token if possible, else logs in; the session holds the result. */
  private async refresh(current: TokenState | undefined, getJwt: JwtSupplier, deadline: Deadline): Promise<TokenState> {
    let state =
      current && current.renewable && this.clock() < current.expiresAt ? await this.renew(current, deadline) : undefined
    state ??= await this.login(getJwt, deadline)
    this.token = state
    return state
  }

  /**
   * A usable token: the cached one, or one from a renewal or login shared by every concurrent
   * caller (shared-calls.ts): it goes on for whoever still waits, and each caller gives up on its
   * own deadline. `cached`: it is the token held when the caller came.
   */
  private async held(getJwt: JwtSupplier, deadline: Deadline): Promise<HeldToken> {
    const current = this.token
    if (current && this.clock() < current.renewAt) return { state: current, cached: true }
    const giveUp = (cancelled: boolean): ProviderError => deadlineError(this.about(this.loginWhat()), cancelled)
    const state = await this.logins.join('token', deadline, giveUp, (shared) => this.refresh(current, getJwt, shared))
      .result
    // A renewal keeps the generation: still the token the caller came with.
    return { state, cached: state.generation === current?.generation }
  }

  private invalidate(generation: number): void {
    if (this.token?.generation === generation) this.token = undefined
  }

  /** One request with the identity's token, taken first on the caller's own deadline. */
  async request(req: VaultRequest, getJwt: JwtSupplier, deadline: Deadline, label: string): Promise<unknown> {
    const token = await this.held(getJwt, deadline)
    return this.send(req, this.consistencyOf(req), token, getJwt, deadline, label)
  }

  /**
   * What a request asks of a cluster's nodes (transport/consistency.ts): its read consistency
   * (strong unless it says otherwise), after this identity's own latest login or write when
   * eventual; a request that is not a plain GET is a write whose answer's index is noted.
   */
  private consistencyOf(req: VaultRequest): CallConsistency {
    const mode = req.consistency ?? 'strong'
    const after = mode === 'eventual' ? this.ownIndex : undefined
    const write = !(req.method === 'GET' && req.body === undefined)
    return { mode, ...(after === undefined ? {} : { after }), ...(write ? { onIndex: this.noteOwnIndex } : {}) }
  }

  /** GET and POST through node-vault's read and write, the rest through its generic request. */
  private send(
    req: VaultRequest,
    consistency: CallConsistency,
    token: HeldToken,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
  ): Promise<unknown> {
    const path = apiPath(req)
    const namespace = this.readNamespace(req)
    const call = (options: CallOptions): Promise<unknown> => {
      if (req.method === 'GET' && req.body === undefined) return this.client.read(path, options)
      if (req.method === 'POST') return this.client.write(path, req.body, options)
      return sendRequest(this.client, req.method, path, req.body, options)
    }
    const callName = describeRequest(req) + inNamespace(namespace)
    return this.withToken(call, callName, namespace, consistency, token, getJwt, deadline, label, 'read')
  }

  /**
   * Sends one call with `token`, under the retry policy (resilience/retry.ts) with the address's
   * breaker (resilience/breaker.ts) as a layer. A 403 on a token that was already cached when the
   * caller came means it was revoked or expired behind our back: log in again once and retry once.
   */
  private async withToken<T>(
    send: (options: CallOptions) => Promise<T>,
    callName: string,
    namespace: string,
    consistency: CallConsistency,
    token: HeldToken,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
    kind: 'read' | 'other',
  ): Promise<T> {
    this.lastUsedAt = this.clock()
    const what = (): string => `${label}: ${callName}`
    const hooks = this.retryHooks(callName)
    for (let again = false; ; again = true) {
      try {
        // Options made per attempt: the timeout is what is left of the Mount's deadline; after one
        // node's answer, a connection of the attempt's own (perhaps another node behind a Service).
        const attempt = (_n: number, { freshConnection }: { freshConnection: boolean }): Promise<T> =>
          send(this.callOptions(deadline, what, namespace, undefined, { consistency, freshConnection }))
        return await withRetry(attempt, deadline, this.retryPolicy, hooks, this.sleep)
      } catch (err) {
        if (again || statusOf(err) !== 403 || !token.cached) {
          throw this.failure(err, `${label}: ${callName} (${this.where()})`, deadline, kind)
        }
        this.logger.debug({ role: this.identity.role }, 'cached Vault token refused; logging in again')
        this.invalidate(token.state.generation)
        await this.held(getJwt, deadline)
      }
    }
  }

  /**
   * Reads through the identity's cache: what it keeps for the pod (a due lease renewed), else the
   * token first, then Vault's answer, shared with identical reads in flight, and kept.
   */
  async fetch(
    req: VaultRequest,
    requestKey: string,
    podUid: string,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
  ): Promise<FetchOutcome> {
    this.lastUsedAt = this.clock()
    const found = this.cache.lookup(requestKey, podUid, this.clock(), this.expiryByGeneration)
    let outcome = found.kind === 'hit' ? found.outcome : undefined
    if (found.kind === 'renewDue')
      outcome = await this.renewed(found.lease, req, requestKey, podUid, getJwt, deadline, label)
    outcome ??= await this.read(req, requestKey, podUid, getJwt, deadline, label)
    this.report(outcome)
    return outcome
  }

  /** A due lease renewed and served again; undefined when it could not be (a new one is read). */
  private async renewed(
    lease: DueLease,
    req: VaultRequest,
    requestKey: string,
    podUid: string,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
  ): Promise<FetchOutcome | undefined> {
    // A lease lives in the namespace it was read in.
    const namespace = this.readNamespace(req)
    try {
      const token = await this.held(getJwt, deadline)
      const body = (await this.withToken(
        (options) => this.client.renew({ lease_id: lease.leaseId, requestOptions: options }),
        'PUT sys/leases/renew',
        namespace,
        this.ownWrite,
        token,
        getJwt,
        deadline,
        `${label}: lease renewal`,
        'other',
      )) as { lease_duration?: unknown; renewable?: unknown } | null
      const granted = {
        ttlMs: typeof body?.lease_duration === 'number' ? body.lease_duration * 1000 : 0,
        renewable: body?.renewable === true,
      }
      if (this.cache.extend(lease, granted, this.clock()))
        return { body: lease.body, source: 'renewed', kind: 'leased' }
    } catch {
      // Not renewable after all, revoked, or Vault refused: issue a new one.
    }
    this.cache.drop(lease)
    const found = this.cache.lookup(requestKey, podUid, this.clock(), this.expiryByGeneration)
    return found.kind === 'hit' ? found.outcome : undefined
  }

  /**
   * Vault's answer, read once for every identical read in flight: the token first, each caller on
   * its own deadline; then the read, shared (it runs under the latest deadline of its waiters).
   * An answer that turns out to be another pod's credential is not served: this pod reads its own.
   */
  private async read(
    req: VaultRequest,
    requestKey: string,
    podUid: string,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
  ): Promise<FetchOutcome> {
    const token = await this.held(getJwt, deadline)
    const giveUp = (cancelled: boolean): ProviderError =>
      deadlineError(
        this.about(`${label}: ${describeRequest(req)}${inNamespace(this.readNamespace(req))} (${this.where()})`),
        cancelled,
      )
    // Taken once: a read joins only one that carries the same index (one started before this
    // identity's latest write does not answer a read made after it).
    const consistency = this.consistencyOf(req)
    const readKey = consistency.after === undefined ? requestKey : `${requestKey}\n${consistency.after}`
    const readAndKeep = async (shared: Deadline): Promise<SharedRead> => {
      const body = await this.send(req, consistency, token, getJwt, shared, label)
      const kind = this.cache.store(
        requestKey,
        podUid,
        body,
        req.method !== 'GET',
        this.token?.generation ?? 0,
        this.clock(),
      )
      return { body, kind, leaderPod: podUid }
    }
    const first = this.reads.join(`read|${readKey}`, deadline, giveUp, readAndKeep)
    const s = await first.result
    if (first.led || s.kind === 'static' || this.shareDynamic || s.leaderPod === podUid) {
      return { body: s.body, source: first.led ? 'vault' : 'coalesced', kind: s.kind }
    }
    // Someone else's credential: this pod gets its own, one read per pod.
    const own = this.reads.join(`own|${podUid}|${readKey}`, deadline, giveUp, readAndKeep)
    const o = await own.result
    return { body: o.body, source: own.led ? 'vault' : 'coalesced', kind: o.kind }
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
    return this.cache.importEntries(state.entries, now, this.expiryByGeneration)
  }
}
