/**
 * How one identity's Vault token is kept. The token itself lives only in the identity's node-vault
 * client (identity-client.ts); here is its lifetime: one login (or renewal) at a time, shared by
 * every concurrent caller (shared-calls.ts); renewed at two thirds of its TTL, replaced by a login
 * when it cannot be renewed enough; a login answer not issued for the pod's service-account token
 * revoked and refused; revoked when the identity goes away; handed over, with its lifetime, to a
 * successor process (src/handover/).
 */
import { ProviderError, q } from '../../errors.js'
import { decodeServiceAccountJwt } from '../../identity/claims.js'
import type { Deadline } from '../../util/deadline.js'
import { deadlineError } from '../failure-to-error.js'
import { statusOf, VaultCallAborted } from '../transport/call-errors.js'
import type { CallConsistency } from '../transport/consistency.js'
import { MAX_TOKEN_ANSWER_BYTES } from '../transport/transport.js'
import { callOptions, revokeSelf } from '../vault-client.js'
import type { ExportedSession, TokenLifetime } from './exported.js'
import { inNamespace, type IdentityClient } from './identity-client.js'
import { SharedCalls } from './shared-calls.js'

/** A token in use is renewed once this fraction of its TTL has passed. */
export const TOKEN_RENEW_FRACTION = 2 / 3
/** A renewal that grants less than this share of the login's TTL means the max TTL is near: log in again. */
export const MIN_TOKEN_RENEWED_SHARE = 1 / 4
/** Revocation is best effort and must not hold up anything. */
export const REVOKE_TIMEOUT_MS = 5_000

export type JwtSupplier = () => Promise<string>

/** The token a caller goes on with; `cached`: the one held when it came (a 403 then means it was revoked). */
export interface HeldToken {
  generation: number
  cached: boolean
}

function stringField(obj: unknown, key: string): string | undefined {
  if (obj === null || typeof obj !== 'object') return undefined
  const v = (obj as Record<string, unknown>)[key]
  return typeof v === 'string' ? v : undefined
}

export class IdentityToken {
  private readonly client: IdentityClient
  private state: TokenLifetime | undefined
  private generation = 0
  /** Expiry of recent tokens by generation: leases die with the token that created them. */
  private readonly expiryByGeneration = new Map<number, number>()
  private readonly logins: SharedCalls<TokenLifetime>
  /** The consistency of a login or a renewal: the identity notes its index (read-your-writes, session.ts). */
  private readonly ownWrite: CallConsistency
  /** Handed to a successor process (exported): this process never revokes it. */
  private handedOver = false

  constructor(client: IdentityClient, ownWrite: CallConsistency) {
    this.client = client
    this.ownWrite = ownWrite
    this.logins = new SharedCalls(client.time)
  }

  /** The generation of the token held now; 0 when none is. */
  get current(): number {
    return this.state?.generation ?? 0
  }

  /** When each recent token expires, by generation (what it read dies with it). */
  get expiries(): ReadonlyMap<number, number> {
    return this.expiryByGeneration
  }

  private loginWhat(): string {
    const { identity } = this.client
    return `login to Vault at ${identity.connection.address}${inNamespace(this.client.tokenNamespace)} (${this.client.where()})`
  }

  /**
   * A usable token: the held one, or one from a renewal or login shared by every concurrent
   * caller: it goes on for whoever still waits, and each caller gives up on its own deadline.
   */
  async held(getJwt: JwtSupplier, deadline: Deadline): Promise<HeldToken> {
    const current = this.state
    if (current && this.client.time.now() < current.renewAt) return { generation: current.generation, cached: true }
    const giveUp = (cancelled: boolean): ProviderError => deadlineError(this.client.about(this.loginWhat()), cancelled)
    const state = await this.logins.join('token', deadline, giveUp, (shared) => this.refresh(current, getJwt, shared))
      .result
    // A renewal keeps the generation: still the token the caller came with.
    return { generation: state.generation, cached: state.generation === current?.generation }
  }

  /** The token of `generation` was refused: the next caller logs in again (unless someone already did). */
  invalidate(generation: number): void {
    if (this.state?.generation === generation) this.state = undefined
  }

  /** Renews the token if possible, else logs in; the result is held. */
  private async refresh(
    current: TokenLifetime | undefined,
    getJwt: JwtSupplier,
    deadline: Deadline,
  ): Promise<TokenLifetime> {
    let state =
      current && current.renewable && this.client.time.now() < current.expiresAt
        ? await this.renew(current, deadline)
        : undefined
    state ??= await this.login(getJwt, deadline)
    this.state = state
    return state
  }

  private async login(getJwt: JwtSupplier, deadline: Deadline): Promise<TokenLifetime> {
    const { identity, vault, logger, time } = this.client
    const what = this.loginWhat()
    const jwt = await getJwt()
    const started = time.now()
    // A refused or expired token is not sent along with the login.
    vault.token = ''
    let body: unknown
    try {
      // Same retry policy and breaker as reads: a 429 or a reset during a rollout is not a failed Mount.
      // kubernetes and jwt auth take the same login request; node-vault's two methods differ only in
      // their default mount, and the mount is always named here.
      body = await this.client.retried(
        ({ freshConnection }) =>
          vault.kubernetesLogin({
            role: identity.role,
            jwt,
            mount_point: identity.authMount,
            requestOptions: this.client.options(deadline, what, this.client.tokenNamespace, MAX_TOKEN_ANSWER_BYTES, {
              consistency: this.ownWrite,
              freshConnection,
            }),
          }),
        deadline,
        'login',
      )
    } catch (err) {
      throw this.client.failure(err, what, deadline, 'login')
    }
    const auth = (body as { auth?: { client_token?: unknown; lease_duration?: unknown; metadata?: unknown } } | null)
      ?.auth
    if (!auth || typeof auth.client_token !== 'string' || auth.client_token === '') {
      vault.token = ''
      throw new ProviderError('VAULT_BAD_RESPONSE', "Vault's answer carries no client token", this.client.about(what))
    }
    const mismatch = this.identityMismatch(auth.metadata, jwt)
    if (mismatch !== undefined) {
      await this.revokeHeld('revoking a refused login token failed')
      throw new ProviderError(
        'LOGIN_IDENTITY_MISMATCH',
        `login at auth mount ${q(identity.authMount)} (role ${q(identity.role)}, Vault at ` +
          `${identity.connection.address}) was not issued for the pod's service-account token (${mismatch}); ` +
          "the provider's TLS client certificate never authenticates a pod: use a kubernetes or jwt auth mount",
        { address: identity.connection.address },
      )
    }
    const ttlSec = typeof auth.lease_duration === 'number' && auth.lease_duration > 0 ? auth.lease_duration : 0
    const now = time.now()
    this.generation += 1
    const state = this.lifetime(
      this.generation,
      now,
      ttlSec * 1000,
      (auth as { renewable?: unknown }).renewable === true,
    )
    logger.debug(
      { role: identity.role, authMount: identity.authMount, ttlSec, durationMs: now - started },
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
    const { identity } = this.client
    const role = stringField(metadata, 'role')
    if (role === undefined) {
      return stringField(metadata, 'cert_name') !== undefined || stringField(metadata, 'common_name') !== undefined
        ? 'Vault answered for a certificate identity'
        : 'the answer names no role'
    }
    if (role !== identity.role) return `the answer is for role ${q(role)}`
    const pod = identity.pod
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

  private lifetime(generation: number, obtainedAt: number, ttlMs: number, renewable: boolean): TokenLifetime {
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
  private async renew(current: TokenLifetime, deadline: Deadline): Promise<TokenLifetime | undefined> {
    const { identity, vault, logger, time } = this.client
    const what = `token renewal (${this.client.where()})`
    try {
      const body: unknown = await vault.tokenRenewSelf({
        requestOptions: this.client.options(deadline, what, this.client.tokenNamespace, MAX_TOKEN_ANSWER_BYTES, {
          consistency: this.ownWrite,
        }),
      })
      const auth = (body as { auth?: { lease_duration?: unknown; renewable?: unknown } } | null)?.auth
      const ttlSec = typeof auth?.lease_duration === 'number' ? auth.lease_duration : 0
      if (ttlSec * 1000 < current.ttlMs * MIN_TOKEN_RENEWED_SHARE) return undefined
      logger.debug({ role: identity.role, ttlSec }, 'renewed the Vault token')
      return this.lifetime(current.generation, time.now(), ttlSec * 1000, auth?.renewable === true)
    } catch (err) {
      // The caller left: no login either.
      if (err instanceof VaultCallAborted) throw err
      logger.debug({ role: identity.role, status: statusOf(err) }, 'Vault token renewal failed; logging in again')
      return undefined
    }
  }

  /** revoke-self with the token the client holds, then the client holds none. Best effort, bounded in time. */
  private async revokeHeld(failureLog: string): Promise<boolean> {
    const { vault, logger, identity } = this.client
    try {
      await revokeSelf(
        vault,
        callOptions(REVOKE_TIMEOUT_MS, undefined, this.client.tokenNamespace, MAX_TOKEN_ANSWER_BYTES),
      )
      return true
    } catch (err) {
      logger.debug({ role: identity.role, status: statusOf(err) }, failureLog)
      return false
    } finally {
      vault.token = ''
    }
  }

  /** Forgets the token without telling Vault (pods may still use its leases). */
  forget(): void {
    this.state = undefined
    this.client.vault.token = ''
  }

  /**
   * Revokes the token (and with it, in Vault, the leases it created), unless it has expired or went
   * to a successor; then forgets it. Best effort, bounded in time.
   */
  async revoke(): Promise<void> {
    const state = this.state
    if (state && this.client.time.now() < state.expiresAt && !this.handedOver) {
      if (await this.revokeHeld('revoking an idle Vault token failed')) {
        this.client.logger.debug({ role: this.client.identity.role }, 'revoked the Vault token of an idle identity')
      }
    }
    this.forget()
  }

  /**
   * Handover: the token and its lifetime, for a successor process; undefined without a live token.
   * From then on this process never revokes it: the successor owns it.
   */
  export(now: number): Pick<ExportedSession, 'token' | 'earlierTokens'> | undefined {
    const state = this.state
    const value = this.client.vault.token
    if (!state || now >= state.expiresAt || value === '') return undefined
    this.handedOver = true
    return {
      token: { value, ...state },
      earlierTokens: [...this.expiryByGeneration]
        .filter(([g]) => g !== state.generation)
        .map(([generation, expiresAt]) => ({ generation, expiresAt })),
    }
  }

  /** Handover: goes on with a predecessor's token; false when this identity already has one of its own. */
  import(exported: Pick<ExportedSession, 'token' | 'earlierTokens'>): boolean {
    if (this.state !== undefined || this.generation !== 0) return false
    const { value, ...state } = exported.token
    this.generation = state.generation
    for (const e of exported.earlierTokens) this.expiryByGeneration.set(e.generation, e.expiresAt)
    this.expiryByGeneration.set(state.generation, state.expiresAt)
    this.state = state
    this.client.vault.token = value
    return true
  }
}
