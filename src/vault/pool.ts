/**
 * Sessions by identity, and transports by Vault connection, both bounded.
 * Identity = Vault address and TLS, namespace, auth mount, role, audience,
 * and the pod (namespace, service account, UID): a cached token is only ever
 * used for the pod that obtained it.
 */
import { LRUCache } from 'lru-cache'
import type { Logger } from '../observability/logger.js'
import { connectionKey, createTransport, destroyTransport, type Transport } from './transport.js'
import { VaultSession, type VaultIdentity } from './session.js'

export const MAX_TRANSPORTS = 64

export function identityKey(id: VaultIdentity): string {
  return JSON.stringify([
    connectionKey(id.connection),
    id.connection.namespace ?? '',
    id.authMount,
    id.role,
    id.audience,
    id.pod.namespace,
    id.pod.serviceAccount,
    id.pod.uid,
  ])
}

export class SessionPool {
  private readonly sessions: LRUCache<string, VaultSession> | undefined
  private readonly transports: LRUCache<string, Promise<Transport>>
  private readonly logger: Logger

  /** `maxSessions` ≤ 0 disables token caching: every Mount logs in. */
  constructor(maxSessions: number, logger: Logger) {
    this.logger = logger
    this.sessions =
      maxSessions > 0 ? new LRUCache<string, VaultSession>({ max: maxSessions, dispose: (s) => s.close() }) : undefined
    this.transports = new LRUCache<string, Promise<Transport>>({
      max: MAX_TRANSPORTS,
      dispose: (p) => {
        p.then(destroyTransport, () => undefined)
      },
    })
  }

  private transport(id: VaultIdentity): Promise<Transport> {
    const key = connectionKey(id.connection)
    let t = this.transports.get(key)
    if (!t) {
      t = createTransport(id.connection)
      // A failed set-up (unreadable CA file) must not stay cached.
      t.catch(() => this.transports.delete(key))
      this.transports.set(key, t)
    }
    return t
  }

  async session(id: VaultIdentity): Promise<VaultSession> {
    const key = identityKey(id)
    const cached = this.sessions?.get(key)
    if (cached) return cached
    const session = new VaultSession(id, await this.transport(id), this.logger)
    if (!this.sessions) return session
    // Another Mount of the same identity may have created one while we awaited.
    const raced = this.sessions.get(key)
    if (raced) return raced
    this.sessions.set(key, session)
    return session
  }

  get size(): number {
    return this.sessions?.size ?? 0
  }

  close(): void {
    this.sessions?.clear()
    this.transports.clear()
  }
}
