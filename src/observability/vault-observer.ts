/**
 * What the Vault layer reports about its own work, without knowing who
 * listens: the daemon's metrics, or the CLI's per-call timings. Handed in
 * from the composition root (SessionPool → VaultSession); every method is
 * optional to call sites and must never throw into them.
 *
 * The Vault transport (vault/transport.ts) reports every HTTP call it makes
 * (login, read, renewal, revocation, health): one place, whoever calls.
 *
 * Events carry only low-cardinality facts (operation, HTTP status, outcome).
 * `description` names the request (method and path, never a body or a
 * token) for human output such as `vault-csi-provider mount`; metrics must
 * not use it as a label.
 */

const SLASH = 0x2f

/** What a Vault call was for. */
export type VaultOperation = 'login' | 'read' | 'write' | 'renew' | 'revoke' | 'lookup' | 'health'

export interface VaultCallEvent {
  operation: VaultOperation
  /** Vault answered 200 or 204. */
  ok: boolean
  /** HTTP status of a failed call; undefined when no answer came (connection refused, TLS, timeout) or on success. */
  status: number | undefined
  durationMs: number
  /** Method and path, for people (e.g. `GET secret/data/app`); never a metric label. */
  description: string
}

/** Which in-memory reuse a lookup concerns. */
export type CacheKind = 'token' | 'response'

export interface VaultObserver {
  /** One HTTP call to Vault finished (successfully or not). */
  vaultCall(event: VaultCallEvent): void
  /** A cache was consulted. */
  cacheLookup?(cache: CacheKind, hit: boolean): void
  /** A dynamic secret's lease (or a certificate) was, or could not be, reused instead of issued anew. */
  leaseReuse?(hit: boolean): void
}

/** Maps a request's HTTP method to its operation label. */
export function operationOfMethod(method: string): VaultOperation {
  return method.toUpperCase() === 'GET' ? 'read' : 'write'
}

/** Fans one event out to several observers (metrics and the CLI's recorder). */
export function combineObservers(...observers: Array<VaultObserver | undefined>): VaultObserver | undefined {
  const list = observers.filter((o): o is VaultObserver => o !== undefined)
  if (list.length === 0) return undefined
  if (list.length === 1) return list[0]
  return {
    vaultCall: (e) => list.forEach((o) => o.vaultCall(e)),
    cacheLookup: (cache, hit) => list.forEach((o) => o.cacheLookup?.(cache, hit)),
    leaseReuse: (hit) => list.forEach((o) => o.leaseReuse?.(hit)),
  }
}

/** The operation a raw Vault API call performs, from its method and path (`/auth/jwt/login`, `/secret/data/x?version=2`). */
export function operationOfCall(method: string, apiPath: string): VaultOperation {
  // Only paths under auth/ and sys/ name other operations (operationByRule): every other call (each
  // secret a Mount reads) is decided without splitting, copying or matching its path.
  let i = 0
  while (apiPath.charCodeAt(i) === SLASH) i++
  if (apiPath.startsWith('v1/', i)) i += 3
  if (!apiPath.startsWith('auth/', i) && !apiPath.startsWith('sys/', i)) return operationOfMethod(method)
  return operationByRule(method, apiPath)
}

/** The rule itself, for any path: without the query, the leading slashes and one `v1/`, the path names the operation. */
export function operationByRule(method: string, apiPath: string): VaultOperation {
  const p = apiPath.split('?')[0]!.replace(/^\/+/, '').replace(/^v1\//, '')
  if (/^auth\/.+\/login$/.test(p)) return 'login'
  if (p === 'auth/token/renew-self' || p === 'sys/leases/renew') return 'renew'
  if (p === 'auth/token/revoke-self' || p === 'sys/leases/revoke') return 'revoke'
  if (p === 'auth/token/lookup-self' || p === 'sys/leases/lookup') return 'lookup'
  if (p === 'sys/health') return 'health'
  return operationOfMethod(method)
}
