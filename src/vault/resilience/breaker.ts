/**
 * Fail fast while a Vault address is down — on evidence no pod can manufacture.
 *
 * A Mount's failed call never counts by itself: a pod chooses its paths, and Vault answers 503 to
 * some of them on demand, or a plugin behind a path can be made slow. A failure that may mean the
 * address is down (no connection, no answer in time, 502/503/504) only makes the breaker ask Vault
 * itself: the provider's own health probe (GET sys/health, no token) with the provider's own
 * settings for that address — the operator's TLS for -vault-addr, none of a Mount's.
 *
 * An address is often a Service in front of a cluster, and one of its nodes may be sealed (a
 * restarted pod waiting for its unseal key) while the others serve. So a round is
 * `probesToOpen` probes at once, each over a new connection of its own (behind a Service, as
 * many nodes as it spreads them over), and the address opens only when all of them find it
 * unreachable or sealed: one node's answer never opens it, nor cuts the retries of Mounts in
 * flight. Once open, every Mount for it fails at once with UNAVAILABLE saying since when, instead
 * of each pod holding a connection until its deadline. While open, one round every
 * `probeIntervalMs`; the first healthy answer closes it.
 *
 * Probes are rate-limited per address (at most one in flight, one per interval), and the addresses
 * tracked are bounded and fair between namespaces (util/fair-cache.ts). The registry is a layer
 * around every Vault call's retries (`hooks()`). The composition root builds one and injects it.
 */
import { ProviderError, q } from '../../errors.js'
import type { Logger } from '../../observability/logger.js'
import type { VaultConnection } from '../../request/types.js'
import { FairCache } from '../../util/fair-cache.js'
import type { Time } from '../../util/time.js'
import { VaultConnectionError, VaultHttpError } from '../transport/call-errors.js'
import { isConnectionFailure, type RetryHooks } from './retry.js'

export interface BreakerOptions {
  /** Time between probes while open, and the least time between two probes of an address. */
  probeIntervalMs: number
  /** A probe that takes longer counts as unreachable. */
  probeTimeoutMs: number
  /** An address nobody asked for this long is forgotten (its probes stop). */
  idleForgetMs: number
  /** At most this many addresses are tracked, and at most `maxAddressesPerTenant` for one namespace. */
  maxAddresses: number
  maxAddressesPerTenant: number
  /** Probes of one round, each over its own connection: the address opens only when all find it down. */
  probesToOpen: number
}

export const DEFAULT_BREAKER_OPTIONS: BreakerOptions = {
  probeIntervalMs: 1_000,
  probeTimeoutMs: 2_000,
  idleForgetMs: 120_000,
  maxAddresses: 256,
  maxAddressesPerTenant: 16,
  probesToOpen: 3,
}

export type ProbeOutcome = { healthy: true } | { healthy: false; sealed: boolean; cause: string }

/**
 * The provider's own health probe of an address, with its own settings for it (health-probe.ts,
 * providerProber); each call over a connection of its own, never one a Mount or another probe used.
 */
export type Prober = (address: string, timeoutMs: number) => Promise<ProbeOutcome>

interface AddressState {
  address: string
  /** When the probe first found it down (the current outage). */
  since: number | undefined
  lastCause: string
  sealed: boolean
  openedAt: number | undefined
  lastAskedAt: number
  lastProbeAt: number | undefined
  probing: boolean
  timer: unknown
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** Whether a failed call may mean its address is down, so that the provider probes it. */
export function mayBeDown(err: unknown): boolean {
  if (err instanceof VaultConnectionError) return isConnectionFailure(err)
  return err instanceof VaultHttpError && (err.status === 502 || err.status === 503 || err.status === 504)
}

/**
 * A round's verdict: healthy when any probe found a node that serves; down (sealed when every
 * probe says so) only when all agree.
 */
function agreed(outcomes: readonly ProbeOutcome[]): ProbeOutcome {
  const down = outcomes.filter((o): o is Extract<ProbeOutcome, { healthy: false }> => !o.healthy)
  if (down.length < outcomes.length || down.length === 0) return { healthy: true }
  return { healthy: false, sealed: down.every((o) => o.sealed), cause: down[0]!.cause }
}

export class BreakerRegistry {
  private readonly opts: BreakerOptions
  private readonly probe: Prober
  private readonly logger: Logger | undefined
  private readonly states: FairCache<AddressState>
  private readonly time: Time
  private closed = false

  /** `time`: the clock and the timers probes are scheduled with. */
  constructor(opts: Partial<BreakerOptions>, probe: Prober, time: Time, logger?: Logger) {
    this.opts = { ...DEFAULT_BREAKER_OPTIONS, ...opts }
    this.probe = probe
    this.logger = logger
    this.time = time
    this.states = new FairCache<AddressState>({
      maxEntries: this.opts.maxAddresses,
      maxEntriesPerTenant: this.opts.maxAddressesPerTenant,
      onEvict: (st) => this.stopProbing(st),
    })
  }

  /** Addresses tracked (bounded by maxAddresses). */
  get size(): number {
    return this.states.size
  }

  isOpen(address: string): boolean {
    return this.states.peek(address)?.openedAt !== undefined
  }

  /**
   * The layer around one Vault call's retries for `tenant` (the Mount's namespace): fail at once
   * (instead of retrying) while the address is open, and have the provider probe the address when
   * a failure may mean it is down.
   */
  hooks(connection: VaultConnection, tenant = ''): RetryHooks {
    return {
      beforeAttempt: (attempt) => {
        if (attempt > 1) this.admit(connection)
      },
      onFailure: (err) => this.recordFailure(connection, err, tenant),
    }
  }

  /** Throws UNAVAILABLE at once while `conn.address` is open. */
  admit(conn: VaultConnection): void {
    const s = this.states.peek(conn.address)
    if (!s || s.openedAt === undefined) return
    s.lastAskedAt = this.time.now()
    const since = iso(s.since ?? s.openedAt)
    const what = s.sealed ? `has been sealed since ${since}` : `has been unreachable since ${since}`
    throw new ProviderError(
      'VAULT_UNAVAILABLE',
      `Vault at ${q(conn.address)} ${what} (last: ${s.lastCause}); failing fast while the provider rechecks it every ${Math.round(this.opts.probeIntervalMs / 1000)} s`,
    )
  }

  /** A failed call: when it may mean the address is down, the provider probes it (at most once per interval). */
  recordFailure(conn: VaultConnection, err: unknown, tenant = ''): void {
    if (this.closed || !mayBeDown(err)) return
    let s = this.states.get(conn.address)
    if (s === undefined) {
      s = {
        address: conn.address,
        since: undefined,
        lastCause: '',
        sealed: false,
        openedAt: undefined,
        lastAskedAt: this.time.now(),
        lastProbeAt: undefined,
        probing: false,
        timer: undefined,
      }
      this.states.set(tenant, conn.address, s)
    }
    s.lastAskedAt = this.time.now()
    if (s.probing || s.timer !== undefined) return
    const wait =
      s.lastProbeAt === undefined ? 0 : Math.max(0, s.lastProbeAt + this.opts.probeIntervalMs - this.time.now())
    this.schedule(s, wait)
  }

  private stopProbing(s: AddressState): void {
    if (s.timer !== undefined) this.time.clearTimeout(s.timer)
    s.timer = undefined
  }

  private schedule(s: AddressState, delayMs: number): void {
    if (this.closed) return
    this.stopProbing(s)
    s.timer = this.time.setTimeout(() => void this.runProbe(s), delayMs)
  }

  private async runProbe(s: AddressState): Promise<void> {
    s.timer = undefined
    if (this.closed || this.states.peek(s.address) !== s) return
    if (this.time.now() - s.lastAskedAt > this.opts.idleForgetMs) {
      this.states.delete(s.address)
      return
    }
    s.probing = true
    s.lastProbeAt = this.time.now()
    let outcome: ProbeOutcome
    try {
      outcome = agreed(
        await Promise.all(Array.from({ length: Math.max(1, this.opts.probesToOpen) }, () => this.probeOnce(s.address))),
      )
    } finally {
      s.probing = false
    }
    if (this.closed || this.states.peek(s.address) !== s) return
    if (outcome.healthy) {
      if (s.openedAt !== undefined) {
        this.logger?.info(
          { vaultAddress: s.address, downMs: this.time.now() - (s.since ?? s.openedAt) },
          'Vault reachable again: Mounts for this address go through',
        )
      }
      // Closed; kept (bounded) so that the next failure waits for the interval before probing again.
      s.openedAt = undefined
      s.since = undefined
      s.sealed = false
      return
    }
    s.sealed = outcome.sealed
    s.lastCause = outcome.cause
    if (s.openedAt === undefined) {
      s.openedAt = this.time.now()
      s.since = s.openedAt
      this.logger?.warn(
        { vaultAddress: s.address, since: iso(s.since), cause: s.lastCause },
        'Vault unreachable: failing Mounts for this address fast until a probe succeeds',
      )
    }
    this.schedule(s, this.opts.probeIntervalMs)
  }

  private async probeOnce(address: string): Promise<ProbeOutcome> {
    try {
      return await this.probe(address, this.opts.probeTimeoutMs)
    } catch (err) {
      return { healthy: false, sealed: false, cause: `probe failed (${(err as Error).message})` }
    }
  }

  close(): void {
    this.closed = true
    for (const [, st] of this.states.entries()) this.stopProbing(st)
    this.states.clear()
  }
}
