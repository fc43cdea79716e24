/**
 * Fail fast while a Vault address is down.
 *
 * Per Vault address: after `failureThreshold` connection failures in a row
 * (refused, reset, timed out), or one `503 sealed`, the address is open:
 * every Mount for it fails at once with UNAVAILABLE saying since when Vault
 * has been unreachable, instead of each pod holding a connection until its
 * deadline. While open, one probe at a time (GET sys/health, no token) checks
 * every `probeIntervalMs` after a short cool-down; the first healthy answer
 * closes the address again, so recovery is noticed within seconds.
 *
 * A failure this layer cannot classify itself (a login that ended in
 * UNAVAILABLE, where only the ProviderError is left) is `suspect`ed: one probe
 * decides whether it counts. A TLS misconfiguration of one
 * SecretProviderClass therefore never closes the address for the others.
 */
import http from 'node:http'
import https from 'node:https'
import { ProviderError, q } from '../errors.js'
import type { Logger } from '../observability/logger.js'
import type { VaultConnection } from '../request/types.js'
import { statusOf } from './errors.js'
import { isConnectionFailure, type RetryHooks } from './retry.js'
import { createTransport, destroyTransport } from './transport.js'

export interface BreakerOptions {
  /** Connection failures in a row that open an address. */
  failureThreshold: number
  /** Minimum time an address stays open before the first probe. */
  coolDownMs: number
  /** Time between probes while open. */
  probeIntervalMs: number
  /** A probe that takes longer counts as unreachable. */
  probeTimeoutMs: number
  /** An open address nobody asked for this long is forgotten (its probes stop). */
  idleForgetMs: number
  /** At most this many addresses are tracked. */
  maxAddresses: number
}

export const DEFAULT_BREAKER_OPTIONS: BreakerOptions = {
  failureThreshold: 3,
  coolDownMs: 1_000,
  probeIntervalMs: 1_000,
  probeTimeoutMs: 2_000,
  idleForgetMs: 120_000,
  maxAddresses: 256,
}

export type ProbeOutcome = { healthy: true } | { healthy: false; sealed: boolean; cause: string }

export type Prober = (conn: VaultConnection, timeoutMs: number) => Promise<ProbeOutcome>

interface AddressState {
  conn: VaultConnection
  consecutive: number
  /** First failure of the current run of failures. */
  since: number | undefined
  lastCause: string
  sealed: boolean
  openedAt: number | undefined
  lastAskedAt: number
  probing: boolean
  timer: NodeJS.Timeout | undefined
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** What a failed Vault call means for its address: down (counts), sealed (opens), or nothing. */
export function failureKind(err: unknown): { kind: 'unreachable' | 'sealed'; cause: string } | undefined {
  const status = statusOf(err)
  if (status === undefined) {
    const code = (err as { code?: unknown }).code
    // A truncated answer came from a reachable Vault: retried, but not counted here.
    if (!isConnectionFailure(err) || code === 'ERR_BAD_RESPONSE') return undefined
    if (code === 'ECONNABORTED' || code === 'ETIMEDOUT') return { kind: 'unreachable', cause: 'no answer in time' }
    return { kind: 'unreachable', cause: `connection failed (${typeof code === 'string' ? code : 'hang-up'})` }
  }
  if (status === 503) {
    const errors = (err as { response?: { body?: { errors?: unknown } } }).response?.body?.errors
    const text = Array.isArray(errors) ? errors.filter((e) => typeof e === 'string').join('; ') : ''
    if (/sealed/i.test(text)) return { kind: 'sealed', cause: 'Vault is sealed (503)' }
    return { kind: 'unreachable', cause: 'Vault answered 503' }
  }
  if (status === 502 || status === 504)
    return { kind: 'unreachable', cause: `a proxy in front of Vault answered ${status}` }
  return undefined
}

export class BreakerRegistry {
  private readonly opts: BreakerOptions
  private readonly probe: Prober
  private readonly logger: Logger | undefined
  private readonly states = new Map<string, AddressState>()
  private closed = false

  constructor(opts: Partial<BreakerOptions> = {}, probe: Prober = probeHealth, logger?: Logger) {
    this.opts = { ...DEFAULT_BREAKER_OPTIONS, ...opts }
    this.probe = probe
    this.logger = logger
  }

  /** Addresses tracked (bounded by maxAddresses). */
  get size(): number {
    return this.states.size
  }

  isOpen(address: string): boolean {
    return this.states.get(address)?.openedAt !== undefined
  }

  private state(conn: VaultConnection): AddressState {
    let s = this.states.get(conn.address)
    if (!s) {
      if (this.states.size >= this.opts.maxAddresses) this.evictOne()
      s = {
        conn,
        consecutive: 0,
        since: undefined,
        lastCause: '',
        sealed: false,
        openedAt: undefined,
        lastAskedAt: Date.now(),
        probing: false,
        timer: undefined,
      }
      this.states.set(conn.address, s)
    }
    return s
  }

  private evictOne(): void {
    // Prefer forgetting a closed address; otherwise the oldest.
    for (const [address, s] of this.states) {
      if (s.openedAt === undefined) {
        this.forget(address)
        return
      }
    }
    const first = this.states.keys().next()
    if (!first.done) this.forget(first.value)
  }

  private forget(address: string): void {
    const s = this.states.get(address)
    if (s?.timer) clearTimeout(s.timer)
    this.states.delete(address)
  }

  /** Throws UNAVAILABLE at once while `conn.address` is open. */
  admit(conn: VaultConnection): void {
    const s = this.states.get(conn.address)
    if (!s || s.openedAt === undefined) return
    s.lastAskedAt = Date.now()
    s.conn = conn
    const since = iso(s.since ?? s.openedAt)
    const what = s.sealed ? `has been sealed since ${since}` : `has been unreachable since ${since}`
    throw new ProviderError(
      'VAULT_UNAVAILABLE',
      `Vault at ${q(conn.address)} ${what} (last: ${s.lastCause}); failing fast while the provider rechecks it every ${Math.round(this.opts.probeIntervalMs / 1000)} s`,
    )
  }

  recordSuccess(address: string): void {
    const s = this.states.get(address)
    if (!s || s.openedAt !== undefined) return
    s.consecutive = 0
    s.since = undefined
  }

  /** A failed call whose cause is known; `err` is the raw client error. */
  recordFailure(conn: VaultConnection, err: unknown): void {
    const kind = failureKind(err)
    if (!kind || this.closed) return
    this.count(conn, kind.kind === 'sealed', kind.cause)
  }

  private count(conn: VaultConnection, sealed: boolean, cause: string): void {
    const s = this.state(conn)
    const now = Date.now()
    s.lastAskedAt = now
    s.lastCause = cause
    s.since ??= now
    s.consecutive += 1
    if (s.openedAt !== undefined) {
      s.sealed = sealed
      return
    }
    if (sealed || s.consecutive >= this.opts.failureThreshold) this.open(s, sealed)
  }

  /** A Mount failed with UNAVAILABLE for a reason this layer did not see: one probe decides. */
  suspect(conn: VaultConnection): void {
    if (this.closed) return
    const s = this.state(conn)
    if (s.openedAt !== undefined || s.probing) return
    s.probing = true
    this.probe(conn, this.opts.probeTimeoutMs)
      .then((outcome) => {
        if (!outcome.healthy) this.count(conn, outcome.sealed, outcome.cause)
      })
      .catch(() => undefined)
      .finally(() => {
        s.probing = false
      })
  }

  private open(s: AddressState, sealed: boolean): void {
    const now = Date.now()
    s.openedAt = now
    s.sealed = sealed
    this.logger?.warn(
      { vaultAddress: s.conn.address, since: iso(s.since ?? now), cause: s.lastCause, failures: s.consecutive },
      'Vault unreachable: failing Mounts for this address fast until a probe succeeds',
    )
    this.schedule(s, this.opts.coolDownMs)
  }

  private schedule(s: AddressState, delayMs: number): void {
    if (this.closed) return
    if (s.timer) clearTimeout(s.timer)
    s.timer = setTimeout(() => void this.runProbe(s), delayMs)
    s.timer.unref()
  }

  private async runProbe(s: AddressState): Promise<void> {
    s.timer = undefined
    if (this.closed || this.states.get(s.conn.address) !== s) return
    if (Date.now() - s.lastAskedAt > this.opts.idleForgetMs) {
      this.forget(s.conn.address)
      return
    }
    if (s.probing) {
      this.schedule(s, this.opts.probeIntervalMs)
      return
    }
    s.probing = true
    let outcome: ProbeOutcome
    try {
      outcome = await this.probe(s.conn, this.opts.probeTimeoutMs)
    } catch (err) {
      outcome = { healthy: false, sealed: false, cause: `probe failed (${(err as Error).message})` }
    } finally {
      s.probing = false
    }
    if (outcome.healthy) {
      const downMs = Date.now() - (s.since ?? s.openedAt ?? Date.now())
      this.logger?.info(
        { vaultAddress: s.conn.address, downMs },
        'Vault reachable again: Mounts for this address go through',
      )
      s.openedAt = undefined
      s.consecutive = 0
      s.since = undefined
      s.sealed = false
      return
    }
    s.sealed = outcome.sealed
    s.lastCause = outcome.cause
    this.schedule(s, this.opts.probeIntervalMs)
  }

  close(): void {
    this.closed = true
    for (const address of [...this.states.keys()]) this.forget(address)
  }
}

/**
 * GET /v1/sys/health (unauthenticated, no token is ever sent) with the
 * Mount's own TLS settings. Active, standby and performance-standby nodes
 * count as healthy; 503 is sealed; no answer is unreachable.
 */
export async function probeHealth(conn: VaultConnection, timeoutMs: number): Promise<ProbeOutcome> {
  const transport = await createTransport(conn)
  try {
    const url = `${transport.endpoint}/v1/sys/health?standbyok=true&perfstandbyok=true`
    const status = await new Promise<number>((resolve, reject) => {
      const isHttps = url.startsWith('https:')
      const req = (isHttps ? https : http).request(
        url,
        {
          method: 'GET',
          agent: isHttps ? transport.httpsAgent : transport.httpAgent,
          timeout: timeoutMs,
          headers: conn.namespace ? { 'X-Vault-Namespace': conn.namespace } : {},
        },
        (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
          res.on('error', reject)
        },
      )
      req.on('timeout', () => req.destroy(Object.assign(new Error('probe timed out'), { code: 'ETIMEDOUT' })))
      req.on('error', reject)
      req.end()
    })
    if (status === 200 || status === 429 || status === 472 || status === 473) return { healthy: true }
    if (status === 503) return { healthy: false, sealed: true, cause: 'Vault is sealed (503)' }
    return { healthy: false, sealed: false, cause: `sys/health answered ${status}` }
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code === 'ETIMEDOUT') return { healthy: false, sealed: false, cause: 'no answer in time' }
    // A TLS or other configuration error: Vault answered the connection, so it is not down.
    if (!isConnectionFailure(err)) return { healthy: true }
    return { healthy: false, sealed: false, cause: `connection failed (${typeof code === 'string' ? code : 'error'})` }
  } finally {
    destroyTransport(transport)
  }
}

/**
 * The breakers the Vault sessions report to. Sessions are built by the
 * session pool, which knows nothing of breakers, so the composition root
 * installs the one registry here; without one (unit tests), nothing is
 * tracked.
 */
let installed: BreakerRegistry | undefined

export function installBreakers(registry: BreakerRegistry | undefined): void {
  installed = registry
}

export function activeBreakers(): BreakerRegistry | undefined {
  return installed
}

/**
 * The hooks that tie one Vault call's retries to its address's breaker: fail
 * at once (instead of retrying) while the address is open, count the call's
 * first failure (once per call, not per attempt, so one flaky path cannot
 * open the address by itself), reset the count on success.
 */
export function breakerHooks(connection: VaultConnection): RetryHooks {
  const breakers = activeBreakers()
  if (!breakers) return {}
  return {
    beforeAttempt: (attempt) => {
      if (attempt > 1) breakers.admit(connection)
    },
    onFailure: (err, attempt) => {
      if (attempt === 1) breakers.recordFailure(connection, err)
    },
    onSuccess: () => breakers.recordSuccess(connection.address),
  }
}
