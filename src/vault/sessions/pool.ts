/**
 * Sessions by identity, and transports by Vault connection, both bounded.
 *
 * Identity = Vault address and TLS, namespace, login namespace, auth mount, role, audience,
 * the pod's service account and — in the default `pod` scope — the pod's UID.
 * In `serviceaccount` scope the pods of one service account and role share a
 * token and coalesced reads (see docs/vault-economy.md for when that is
 * policy-equivalent). A token is only ever used for the identity that
 * obtained it.
 */
import type { IdentityScopeName } from '../../config/config.js'
import type { Logger } from '../../observability/logger.js'
import type { VaultObserver } from '../../observability/vault-observer.js'
import { FairCache } from '../../util/fair-cache.js'
import type { Time } from '../../util/time.js'
import type { BreakerRegistry } from '../resilience/breaker.js'
import type { RetryPolicy } from '../resilience/retry.js'
import { loginNamespace } from '../../request/types.js'
import type { ExportedSession, ImportedEntries } from './exported.js'
import { createSecretStore, type SecretStore } from './secret-cache.js'
import { VaultSession, type VaultIdentity } from './session.js'
import { callThrough, connectionKey, type TransportSource } from '../transport/registry.js'
import type { VaultCaller } from '../transport/transport.js'

/** Idle sessions revoked at once by a sweep. */
export const REVOKE_CONCURRENCY = 8
export type IdentityScope = IdentityScopeName

export interface SessionPoolOptions {
  /** ≤ 0 disables token caching: every Mount logs in. */
  maxSessions: number
  scope: IdentityScope
  staticFreshnessMs: number
  shareDynamic: boolean
  /** Identities unused for this long are revoked and forgotten; 0 never revokes. */
  idleRevokeMs: number
  /** false: the owner calls sweepIdle() itself (a test driving time); default: swept periodically. */
  autoSweep?: boolean
  logger: Logger
  /** Told about cache reuse; the transports report every HTTP call. */
  observer?: VaultObserver
  /** The transports (shared with the breaker's probes), built by the composition root. */
  transports: TransportSource
  /** The breaker layer around every Vault call of every session. */
  breakers: Pick<BreakerRegistry, 'hooks'>
  /** The clock, the timers waiters give up by and the waits between retries. */
  time: Time
  /** Injected by tests. */
  retryPolicy?: RetryPolicy
}
export function identityKey(id: VaultIdentity, scope: IdentityScope): string {
  return JSON.stringify([
    connectionKey(id.connection),
    id.connection.namespace ?? '',
    // The token's namespace: logins in two namespaces are two identities, whatever the reads' namespace.
    loginNamespace(id.connection),
    id.authMount,
    id.role,
    id.audience,
    id.pod.namespace,
    id.pod.serviceAccount,
    scope === 'pod' ? id.pod.uid : '',
  ])
}

export class SessionPool {
  private readonly opts: SessionPoolOptions
  private readonly sessions: FairCache<VaultSession> | undefined
  private readonly transports: TransportSource
  private sweeper: NodeJS.Timeout | undefined
  /**
   * One bounded store for what every identity has read: the memory bound is global. Built with the
   * first session: a node that mounts nothing does not hold it.
   */
  private secretStore: SecretStore | undefined
  /** Handover: the predecessor's state being taken over; new sessions wait for it (holdSessionsUntil). */
  private importing: Promise<void> | undefined
  /** Handover: this process's state went to a successor; nothing is revoked from now on. */
  private handedOver = false

  constructor(opts: SessionPoolOptions) {
    this.opts = opts
    this.transports = opts.transports
    // Evicted for room, a session is only forgotten: its pods may still use its leases. When full, the
    // namespace holding the most sessions gives one up (util/fair-cache.ts).
    this.sessions =
      opts.maxSessions > 0
        ? new FairCache<VaultSession>({ maxEntries: opts.maxSessions, onEvict: (s) => s.close() })
        : undefined
    if (this.sessions && opts.idleRevokeMs > 0 && opts.autoSweep !== false) {
      const every = Math.max(1000, Math.min(60_000, opts.idleRevokeMs / 4))
      this.sweeper = setInterval(() => void this.sweepIdle(), every)
      this.sweeper.unref()
    }
  }

  async session(id: VaultIdentity): Promise<VaultSession> {
    // Handover: the predecessor's state may hold this identity's token; wait for it rather than log in.
    if (this.importing) await this.importing
    const key = identityKey(id, this.opts.scope)
    const cached = this.sessions?.get(key)
    if (this.sessions) this.opts.observer?.cacheLookup?.('token', cached !== undefined)
    if (cached) return cached
    const session = await this.newSession(id, key)
    if (!this.sessions) return session
    // Another Mount of the same identity may have created one while we awaited.
    const raced = this.sessions.get(key)
    if (raced) return raced
    this.sessions.set(id.pod.namespace, key, session)
    return session
  }

  private async newSession(id: VaultIdentity, key: string): Promise<VaultSession> {
    const tenant = id.pod.namespace
    // Built (TLS files read) now, so that a bad file fails here; then looked up again for every call:
    // a connection pool closed to make room never strands a session (transport.ts, TransportRegistry).
    await this.transports.get(id.connection, tenant)
    const transports = this.transports
    const caller: VaultCaller = {
      address: id.connection.address,
      call: (c) => callThrough(transports, id.connection, c),
    }
    return new VaultSession(id, caller, {
      logger: this.opts.logger,
      observer: this.opts.observer,
      breakers: this.opts.breakers,
      staticFreshnessMs: this.opts.staticFreshnessMs,
      shareDynamic: this.opts.shareDynamic && this.opts.scope === 'serviceaccount',
      store: (this.secretStore ??= createSecretStore()),
      prefix: `${key}\n`,
      tenant,
      time: this.opts.time,
      retryPolicy: this.opts.retryPolicy,
    })
  }

  /** Revokes and forgets identities whose pods have not mounted for the idle time: they are gone. */
  async sweepIdle(now = this.opts.time.now()): Promise<number> {
    if (!this.sessions || this.handedOver) return 0
    const idle: Array<[string, VaultSession]> = []
    for (const [key, s] of this.sessions.entries()) {
      if (now - s.lastUsedAt >= this.opts.idleRevokeMs) idle.push([key, s])
    }
    // Forget first, so no new Mount picks up a token being revoked.
    for (const [key] of idle) this.sessions.delete(key)
    // A few at a time: one slow Vault (each revocation waits up to its timeout) delays the others little.
    const queue = idle.map(([, s]) => s)
    const revokeNext = async (): Promise<void> => {
      for (let s = queue.shift(); s !== undefined; s = queue.shift()) await s.revoke()
    }
    await Promise.all(Array.from({ length: Math.min(REVOKE_CONCURRENCY, queue.length) }, revokeNext))
    return idle.length
  }

  get size(): number {
    return this.sessions?.size ?? 0
  }

  /** Secrets held across identities, and their approximate bytes (bounded by the store); for metrics and soak checks. */
  get cachedSecrets(): { entries: number; bytes: number } {
    return { entries: this.secretStore?.size ?? 0, bytes: this.secretStore?.calculatedSize ?? 0 }
  }

  /**
   * Handover (src/handover/): every identity with a live token, for a successor process. From
   * then on this pool revokes nothing (its sweeper stops): the successor owns those tokens.
   */
  exportState(now = this.opts.time.now()): ExportedSession[] {
    this.handedOver = true
    if (this.sweeper) clearInterval(this.sweeper)
    const out: ExportedSession[] = []
    for (const [, s] of this.sessions?.entries() ?? []) {
      const state = s.exportState(now)
      if (state) out.push(state)
    }
    return out
  }

  /**
   * Handover: one identity of a predecessor, taken over as if this process had logged in. Refused
   * when this pool keeps no sessions, is full, or already has that identity; expired when its
   * token ended in transit.
   */
  async importState(
    state: ExportedSession,
    now = this.opts.time.now(),
  ): Promise<{ outcome: 'taken_over' | 'refused' | 'expired'; entries?: ImportedEntries }> {
    if (!this.sessions || this.sessions.size >= this.opts.maxSessions) return { outcome: 'refused' }
    if (now >= state.token.expiresAt) return { outcome: 'expired' }
    const key = identityKey(state.identity, this.opts.scope)
    if (this.sessions.has(key)) return { outcome: 'refused' }
    const session = await this.newSession(state.identity, key)
    // A Mount may have made this identity meanwhile (one that did not wait): its own session stays.
    if (this.sessions.has(key)) return { outcome: 'refused' }
    const entries = session.importState(state, now)
    if (entries === undefined) return { outcome: 'refused' }
    this.sessions.set(state.identity.pod.namespace, key, session)
    return { outcome: 'taken_over', entries }
  }

  /** Handover: sessions asked for until `done` settles wait for it (the caller bounds how long). */
  holdSessionsUntil(done: Promise<unknown>): void {
    const held = done.then(
      () => undefined,
      () => undefined,
    )
    this.importing = held
    void held.then(() => {
      if (this.importing === held) this.importing = undefined
    })
  }

  close(): void {
    if (this.sweeper) clearInterval(this.sweeper)
    this.sessions?.clear()
    this.secretStore?.clear()
  }
}
