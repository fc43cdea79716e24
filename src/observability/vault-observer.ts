/**
 * What the Vault layer reports about its own work, without knowing who
 * listens: the daemon's metrics, or the CLI's per-call timings. Handed in
 * from the composition root (SessionPool → VaultSession); every method is
 * optional to call sites and must never throw into them.
 *
 * Events carry only low-cardinality facts (operation, HTTP status, outcome).
 * `description` names the request (method and path, never a body or a
 * token) for human output such as `vault-csi-provider mount`; metrics must
 * not use it as a label.
 */

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

function statusOfError(err: unknown): number | undefined {
  const s = (err as { response?: { statusCode?: unknown } } | null)?.response?.statusCode
  return typeof s === 'number' ? s : undefined
}

/**
 * Runs one Vault call and reports it. With no observer it is just `call()`.
 * The observer's failures are swallowed: instrumentation never breaks a Mount.
 */
export async function observeVaultCall<T>(
  observer: VaultObserver | undefined,
  operation: VaultOperation,
  description: string,
  call: () => Promise<T>,
): Promise<T> {
  if (!observer) return call()
  const started = process.hrtime.bigint()
  const report = (ok: boolean, status: number | undefined): void => {
    try {
      observer.vaultCall({
        operation,
        ok,
        status,
        durationMs: Number(process.hrtime.bigint() - started) / 1e6,
        description,
      })
    } catch {
      /* never let instrumentation fail a call */
    }
  }
  try {
    const result = await call()
    report(true, undefined)
    return result
  } catch (err) {
    report(false, statusOfError(err))
    throw err
  }
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
  const p = apiPath.split('?')[0]!.replace(/^\/+/, '').replace(/^v1\//, '')
  if (/^auth\/.+\/login$/.test(p)) return 'login'
  if (p === 'auth/token/renew-self' || p === 'sys/leases/renew') return 'renew'
  if (p === 'auth/token/revoke-self' || p === 'sys/leases/revoke') return 'revoke'
  if (p === 'auth/token/lookup-self' || p === 'sys/leases/lookup') return 'lookup'
  if (p === 'sys/health') return 'health'
  return operationOfMethod(method)
}

/**
 * Wraps a node-vault client's `request` so that every call through it is
 * reported to `observer`: one line at the client's construction instead of
 * one at every call site, so retries, logins, renewals and revocations are
 * all counted. Returns the client unchanged without an observer.
 */
export function instrumentClient<C extends { request(opts: never): Promise<unknown> }>(
  client: C,
  observer: VaultObserver | undefined,
): C {
  if (!observer) return client
  const original = client.request.bind(client) as unknown as (opts: unknown) => Promise<unknown>
  client.request = ((opts: { path?: unknown; method?: unknown }) => {
    const method = typeof opts?.method === 'string' ? opts.method.toUpperCase() : 'GET'
    const apiPath = typeof opts?.path === 'string' ? opts.path : ''
    const description = `${method} ${apiPath.replace(/^\/+/, '')}`
    return observeVaultCall(observer, operationOfCall(method, apiPath), description, () => original(opts))
  }) as unknown as C['request']
  return client
}
