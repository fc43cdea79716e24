/**
 * Sessions by identity, and transports by Vault connection, both bounded.
 *
 * Identity = Vault address and TLS, namespace, auth mount, role, audience,
 * the pod's service account and — in the default `pod` scope — the pod's UID.
 * In `serviceaccount` scope the pods of one service account and role share a
 * token and coalesced reads (see docs/vault-economy.md for when that is
 * policy-equivalent). A token is only ever used for the identity that
 * obtained it.
 */
import { LRUCache } from 'lru-cache'
import type { IdentityScopeName } from '../config/config.js'
import type { Logger } from '../observability/logger.js'
import type { VaultObserver } from '../observability/vault-observer.js'
import { DEFAULT_MAX_VAULT_RESPONSE_BYTES } from '../config/config.js'
import { createVaultRequester, type VaultRequester } from './http.js'
import {
  connectionKey,
  createTransport,
  DEFAULT_TRANSPORT_OPTIONS,
  destroyTransport,
  type Transport,
  type TransportOptions,
} from './transport.js'
import { createSecretStore, type SecretStore } from './secret-cache.js'
import { loadNodeVault, VaultSession, type VaultIdentity } from './session.js'

export const MAX_TRANSPORTS = 64
export type IdentityScope = IdentityScopeName

export interface SessionPoolOptions {
  /** ≤ 0 disables token caching: every Mount logs in. */
  maxSessions: number
  scope: IdentityScope
  staticFreshnessMs: number
  shareDynamic: boolean
  /** Identities unused for this long are revoked and forgotten; 0 never revokes. */
  idleRevokeMs: number
  logger: Logger
  /** Handed to every session: told about each Vault call. */
  observer?: VaultObserver
  /** -max-tls-file-size, -tls-file-dirs, the operator's TLS files and the allow-list's connect check. */
  transport?: TransportOptions
  /** -max-vault-response-size */
  maxVaultResponseBytes?: number
}

export function identityKey(id: VaultIdentity, scope: IdentityScope): string {
  return JSON.stringify([
    connectionKey(id.connection),
    id.connection.namespace ?? '',
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
  private readonly sessions: LRUCache<string, VaultSession> | undefined
  private readonly transports: LRUCache<string, Promise<Transport>>
  private sweeper: NodeJS.Timeout | undefined
  /** One bounded store for what every identity has read: the memory bound is global. */
  private readonly secrets: SecretStore = createSecretStore()
  private readonly requester: VaultRequester

  constructor(opts: SessionPoolOptions) {
    this.opts = opts
    this.requester = createVaultRequester({
      maxResponseBytes: opts.maxVaultResponseBytes ?? DEFAULT_MAX_VAULT_RESPONSE_BYTES,
    })
    // Evicted for room, a session is only forgotten: its pods may still use its leases.
    this.sessions =
      opts.maxSessions > 0
        ? new LRUCache<string, VaultSession>({
            max: opts.maxSessions,
            dispose: (s, _key, reason) => {
              if (reason === 'evict') s.close()
            },
          })
        : undefined
    this.transports = new LRUCache<string, Promise<Transport>>({
      max: MAX_TRANSPORTS,
      dispose: (p) => {
        p.then(destroyTransport, () => undefined)
      },
    })
    if (this.sessions && opts.idleRevokeMs > 0) {
      const every = Math.max(1000, Math.min(60_000, opts.idleRevokeMs / 4))
      this.sweeper = setInterval(() => void this.sweepIdle(), every)
      this.sweeper.unref()
    }
  }

  private transport(id: VaultIdentity): Promise<Transport> {
    const key = connectionKey(id.connection)
    let t = this.transports.get(key)
    if (!t) {
      t = createTransport(id.connection, this.opts.transport ?? DEFAULT_TRANSPORT_OPTIONS)
      // A failed set-up (unreadable CA file) must not stay cached.
      t.catch(() => this.transports.delete(key))
      this.transports.set(key, t)
    }
    return t
  }

  async session(id: VaultIdentity): Promise<VaultSession> {
    const key = identityKey(id, this.opts.scope)
    const cached = this.sessions?.get(key)
    if (this.sessions) this.opts.observer?.cacheLookup?.('token', cached !== undefined)
    if (cached) return cached
    const session = new VaultSession(
      id,
      await this.transport(id),
      {
        logger: this.opts.logger,
        observer: this.opts.observer,
        requester: this.requester,
        staticFreshnessMs: this.opts.staticFreshnessMs,
        shareDynamic: this.opts.shareDynamic && this.opts.scope === 'serviceaccount',
        store: this.secrets,
        prefix: `${key}\n`,
      },
      await loadNodeVault(),
    )
    if (!this.sessions) return session
    // Another Mount of the same identity may have created one while we awaited.
    const raced = this.sessions.get(key)
    if (raced) return raced
    this.sessions.set(key, session)
    return session
  }

  /** Revokes and forgets identities whose pods have not mounted for the idle time: they are gone. */
  async sweepIdle(now = Date.now()): Promise<number> {
    if (!this.sessions) return 0
    const idle: Array<[string, VaultSession]> = []
    for (const [key, s] of this.sessions.entries()) {
      if (now - s.lastUsedAt >= this.opts.idleRevokeMs) idle.push([key, s])
    }
    for (const [key, s] of idle) {
      // Forget first, so no new Mount picks up a token being revoked.
      this.sessions.delete(key)
      await s.revoke()
    }
    return idle.length
  }

  get size(): number {
    return this.sessions?.size ?? 0
  }

  /** Total secrets held across identities (for metrics and soak checks). */
  /** Secrets held across identities, and their approximate bytes (bounded by the store). */
  get cachedSecrets(): { entries: number; bytes: number } {
    return { entries: this.secrets.size, bytes: this.secrets.calculatedSize }
  }

  close(): void {
    if (this.sweeper) clearInterval(this.sweeper)
    this.sessions?.clear()
    this.secrets.clear()
    this.transports.clear()
  }
}
