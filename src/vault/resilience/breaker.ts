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
 * The registry is a layer around every Vault call (login, read, renewal):
 * the session runs each call's retries with `hooks(connection)`, so the
 * breaker sees every call's typed outcome (call-errors.ts) as it happens.
 * Only connection failures and 502/503/504 count: a TLS misconfiguration of
 * one SecretProviderClass, or a 403, never closes the address for the others.
 * The composition root builds one registry and injects it (no module state).
 */
import { DEFAULT_MAX_VAULT_RESPONSE_BYTES } from '../../config/config.js'
import { ProviderError, q } from '../../errors.js'
import type { Logger } from '../../observability/logger.js'
import type { VaultConnection } from '../../request/types.js'
import type { Clock } from '../../util/deadline.js'
import { REAL_TIMERS, type Timers } from '../../util/shared-call.js'
import { VaultConnectionError, VaultHttpError } from '../transport/call-errors.js'
import { probeVaultHealth, type VaultHealth } from './health-probe.js'
import { isConnectionFailure, type RetryHooks } from './retry.js'
import { defaultTransportOptions, VaultTransport } from '../transport/transport.js'

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
  timer: unknown
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** What a failed Vault call means for its address: down (counts), sealed (opens), or nothing. */
export function failureKind(err: unknown): { kind: 'unreachable' | 'sealed'; cause: string } | undefined {
  if (err instanceof VaultConnectionError) {
    if (!isConnectionFailure(err)) return undefined
    if (err.kind === 'timeout') return { kind: 'unreachable', cause: 'no answer in time' }
    return { kind: 'unreachable', cause: `connection failed (${err.code})` }
  }
  if (!(err instanceof VaultHttpError)) return undefined
  if (err.status === 503) {
    if (err.sealed) return { kind: 'sealed', cause: 'Vault is sealed (503)' }
    return { kind: 'unreachable', cause: 'Vault answered 503' }
  }
  if (err.status === 502 || err.status === 504)
    return { kind: 'unreachable', cause: `a proxy in front of Vault answered ${err.status}` }
  return undefined
}

export class BreakerRegistry {
  private readonly opts: BreakerOptions
  private readonly probe: Prober
  private readonly logger: Logger | undefined
  private readonly states = new Map<string, AddressState>()
  private readonly clock: Clock
  private readonly timers: Timers
  private closed = false

  /** `time` is injected by tests: the clock and the timers probes are scheduled with. */
  constructor(
    opts: Partial<BreakerOptions> = {},
    probe: Prober = probeHealth,
    logger?: Logger,
    time: { clock?: Clock; timers?: Timers } = {},
  ) {
    this.opts = { ...DEFAULT_BREAKER_OPTIONS, ...opts }
    this.probe = probe
    this.logger = logger
    this.clock = time.clock ?? Date.now
    this.timers = time.timers ?? REAL_TIMERS
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
        lastAskedAt: this.clock(),
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
    if (s?.timer !== undefined) this.timers.clearTimeout(s.timer)
    this.states.delete(address)
  }

  /**
   * The layer around one Vault call's retries: fail at once (instead of
   * retrying) while the address is open, count the call's first failure
   * (once per call, not per attempt, so one flaky path cannot open the
   * address by itself), reset the count on success.
   */
  hooks(connection: VaultConnection): RetryHooks {
    return {
      beforeAttempt: (attempt) => {
        if (attempt > 1) this.admit(connection)
      },
      onFailure: (err, attempt) => {
        if (attempt === 1) this.recordFailure(connection, err)
      },
      onSuccess: () => this.recordSuccess(connection.address),
    }
  }

  /** Throws UNAVAILABLE at once while `conn.address` is open. */
  admit(conn: VaultConnection): void {
    const s = this.states.get(conn.address)
    if (!s || s.openedAt === undefined) return
    s.lastAskedAt = this.clock()
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
    const now = this.clock()
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

  private open(s: AddressState, sealed: boolean): void {
    const now = this.clock()
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
    if (s.timer !== undefined) this.timers.clearTimeout(s.timer)
    s.timer = this.timers.setTimeout(() => void this.runProbe(s), delayMs)
  }

  private async runProbe(s: AddressState): Promise<void> {
    s.timer = undefined
    if (this.closed || this.states.get(s.conn.address) !== s) return
    if (this.clock() - s.lastAskedAt > this.opts.idleForgetMs) {
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
      const downMs = this.clock() - (s.since ?? s.openedAt ?? this.clock())
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
 * The default prober: the one health probe (health-probe.ts) over a
 * transport built for the occasion. The composition root passes a prober on
 * the shared transports instead, so that probes are reported like any call.
 */
export async function probeHealth(conn: VaultConnection, timeoutMs: number): Promise<ProbeOutcome> {
  let transport: VaultTransport
  try {
    transport = await VaultTransport.create(conn, defaultTransportOptions(DEFAULT_MAX_VAULT_RESPONSE_BYTES))
  } catch {
    // Unreadable TLS files: a configuration problem, not an outage.
    return { healthy: true }
  }
  try {
    return probeOutcome(await probeVaultHealth(transport, timeoutMs))
  } finally {
    await transport.close()
  }
}

/** The breaker's reading of a health answer. */
export function probeOutcome(h: VaultHealth): ProbeOutcome {
  if (h.healthy) return { healthy: true }
  if (h.reachable) {
    if (h.status === 503) return { healthy: false, sealed: true, cause: 'Vault is sealed (503)' }
    const answer = h.status === undefined ? h.detail : `answered ${h.status}`
    return { healthy: false, sealed: false, cause: `sys/health ${answer}` }
  }
  if (h.errorKind === 'timeout') return { healthy: false, sealed: false, cause: 'no answer in time' }
  // A TLS or other configuration error: Vault answered the connection, so it is not down.
  if (h.errorKind === undefined || h.errorKind === 'tls' || h.errorKind === 'other') return { healthy: true }
  return { healthy: false, sealed: false, cause: `connection failed (${h.errorCode ?? 'error'})` }
}
