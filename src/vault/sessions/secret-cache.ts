/**
 * What one identity has read from Vault, and the reads it has in flight.
 *
 * - Identical concurrent reads share one Vault call.
 * - Static answers are kept for the freshness window (default 0: only
 *   coalesced, so a rotated KV value shows up at the next Mount).
 * - Leased and issued answers (database credentials, certificates) are kept
 *   per pod — or per identity when sharing is on — and served again until
 *   two thirds of their lifetime, renewing leases when they can: a pod keeps
 *   one database user and one certificate across re-mounts.
 *
 * Whether an answer is dynamic is only known once it arrives, so concurrent
 * reads are first coalesced per identity; if the answer turns out dynamic and
 * not shared, the waiters of other pods each make their own read.
 *
 * A coalesced read goes on for whoever still waits; each waiter gives up on
 * its own deadline, and the read is abandoned (its Vault calls aborted) only
 * when none is left (util/shared-call.ts).
 */
import type { Clock, Deadline } from '../../util/deadline.js'
import { FairCache } from '../../util/fair-cache.js'
import { jsonSize } from '../../util/json-size.js'
import { SharedCall, type Timers } from '../../util/shared-call.js'
import type { ExportedEntry, ImportedEntries } from './exported.js'
import { expiryOf, lifetimeOf, renewPoint, RENEW_FRACTION, type Lifetime } from './lifetime.js'

/** Bounds of the store shared by every identity of the process. */
export const DEFAULT_MAX_ENTRIES = 20_000
export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024
/** A renewed lease that got less than this share of its first TTL is near its max TTL: replace it. */
export const MIN_RENEWED_SHARE = 1 / 3

export type FetchSource = 'vault' | 'coalesced' | 'cache' | 'renewed'

export interface FetchOutcome {
  body: unknown
  source: FetchSource
  /** Whether the answer was a static, leased or issued secret. */
  kind: Lifetime['kind']
}

export interface SecretCacheOptions {
  staticFreshnessMs: number
  /** Serve one dynamic credential to every pod of the identity (serviceaccount scope only). */
  shareDynamic: boolean
  /** Where entries live: one store for all identities keeps the memory bound global. */
  store?: SecretStore
  /** Prefix of this identity's keys in the store. */
  prefix?: string
  /** Whose entries these are in the shared store (the pods' namespace): one tenant never evicts another's. */
  tenant?: string
  /** Injected by tests: the cache's notion of now, and the timers waiters give up by. */
  clock?: Clock
  timers?: Timers
}

/** What the cache needs from the session that owns it. */
export interface CacheBackend {
  /** One Vault call under the shared read's deadline; returns the body and the generation of the token that made it. */
  read(deadline: Deadline): Promise<{ body: unknown; tokenGeneration: number }>
  /** Renews a lease with the identity's token; resolves to the new TTL. */
  renewLease(leaseId: string): Promise<{ ttlMs: number; renewable: boolean }>
  /** When the token of `generation` expires (a lease dies with the token that created it); 0 if gone. */
  tokenExpiresAt(generation: number): number
}

export interface CacheEntry {
  /** Approximate bytes, for the store's memory bound. */
  size: number
  body: unknown
  lifetime: Lifetime
  obtainedAt: number
  renewAt: number
  expiresAt: number
  tokenGeneration: number
  firstTtlMs: number
}

type Entry = CacheEntry
export type SecretStore = FairCache<CacheEntry>

const MIN_PRUNE_AT = 256

/** The store every identity's cache shares: bounded in entries and bytes, fair between tenants (util/fair-cache.ts). */
export function createSecretStore(maxEntries = DEFAULT_MAX_ENTRIES, maxBytes = DEFAULT_MAX_BYTES): SecretStore {
  return new FairCache<CacheEntry>({ maxEntries, maxSize: maxBytes, sizeOf: (e) => e.size })
}

function approximateSize(body: unknown): number {
  return Math.max(1, jsonSize(body))
}

interface Shared {
  body: unknown
  lifetime: Lifetime
  leaderPod: string
}

export class SecretCache {
  private readonly opts: SecretCacheOptions
  private readonly entries: SecretStore
  private readonly prefix: string
  private readonly tenant: string
  private readonly inflight = new Map<string, SharedCall<Shared>>()
  private readonly clock: Clock
  /**
   * This identity's keys in the shared store (some maybe pushed out by the store since): clearing a
   * session then touches its own entries, not every entry of every identity.
   */
  private readonly own = new Set<string>()
  /** `own` is pruned of keys the store dropped when it grows past this (doubling: amortised). */
  private pruneAt = MIN_PRUNE_AT

  constructor(opts: SecretCacheOptions) {
    this.opts = opts
    this.entries = opts.store ?? createSecretStore()
    this.prefix = opts.prefix ?? ''
    this.tenant = opts.tenant ?? ''
    this.clock = opts.clock ?? Date.now
  }

  /** This identity's keys the store still holds (the others are forgotten here). */
  private ownKeys(): string[] {
    for (const key of this.own) if (!this.entries.has(key)) this.own.delete(key)
    return [...this.own]
  }

  private put(key: string, entry: CacheEntry): void {
    this.entries.set(this.tenant, key, entry)
    this.own.add(key)
    if (this.own.size > this.pruneAt) this.pruneAt = Math.max(MIN_PRUNE_AT, 2 * this.ownKeys().length)
  }

  private remove(key: string): void {
    this.entries.delete(key)
    this.own.delete(key)
  }

  /** Entries this identity holds (for metrics and tests). */
  get size(): number {
    return this.ownKeys().length
  }

  private dynamicKey(requestKey: string, podUid: string): string {
    return this.opts.shareDynamic ? `${this.prefix}shared|${requestKey}` : `${this.prefix}pod:${podUid}|${requestKey}`
  }

  /** `giveUp(cancelled)` is the error this caller gets when its deadline passes or it leaves while a read is shared. */
  async fetch(
    requestKey: string,
    podUid: string,
    write: boolean,
    deadline: Deadline,
    giveUp: (cancelled: boolean) => Error,
    backend: CacheBackend,
  ): Promise<FetchOutcome> {
    const now = this.clock()
    const dynKey = this.dynamicKey(requestKey, podUid)
    const dynamic = this.entries.get(dynKey)
    if (dynamic) {
      const served = await this.serveDynamic(dynKey, dynamic, now, backend)
      if (served) return served
    }
    // Static answers are kept only with a freshness (store()); without one there is nothing to look up.
    if (this.opts.staticFreshnessMs > 0) {
      const stat = this.entries.get(`${this.prefix}static|${requestKey}`)
      if (stat && now < stat.expiresAt) return { body: stat.body, source: 'cache', kind: 'static' }
    }

    const sharedKey = `read|${requestKey}`
    const pending = this.inflight.get(sharedKey)
    if (pending?.joinable) {
      const shared = await pending.join(deadline, giveUp)
      if (shared.lifetime.kind === 'static' || this.opts.shareDynamic || shared.leaderPod === podUid) {
        return { body: shared.body, source: 'coalesced', kind: shared.lifetime.kind }
      }
      // Someone else's credential: this pod gets its own, one read per pod.
      return this.readOwn(dynKey, podUid, write, deadline, giveUp, backend)
    }
    return this.lead(sharedKey, requestKey, podUid, write, deadline, giveUp, backend)
  }

  private async serveDynamic(
    key: string,
    entry: Entry,
    now: number,
    backend: CacheBackend,
  ): Promise<FetchOutcome | undefined> {
    const hardExpiry = Math.min(entry.expiresAt, backend.tokenExpiresAt(entry.tokenGeneration) || 0)
    if (now < Math.min(entry.renewAt, hardExpiry))
      return { body: entry.body, source: 'cache', kind: entry.lifetime.kind }
    const lt = entry.lifetime
    if (lt.kind === 'leased' && lt.renewable && now < hardExpiry) {
      try {
        const renewed = await backend.renewLease(lt.leaseId)
        if (renewed.ttlMs >= entry.firstTtlMs * MIN_RENEWED_SHARE) {
          const at = this.clock()
          entry.expiresAt = at + renewed.ttlMs
          entry.renewAt = at + renewed.ttlMs * RENEW_FRACTION
          entry.lifetime = { ...lt, renewable: renewed.renewable }
          this.put(key, entry)
          return { body: entry.body, source: 'renewed', kind: 'leased' }
        }
      } catch {
        // Not renewable after all, revoked, or Vault refused: issue a new one below.
      }
    }
    this.remove(key)
    return undefined
  }

  /** Starts (or joins) the shared read under `key`; `settle` stores the answer once, whoever still waits. */
  private shared(
    key: string,
    deadline: Deadline,
    giveUp: (cancelled: boolean) => Error,
    start: () => SharedCall<Shared>,
  ): Promise<Shared> {
    const pending = this.inflight.get(key)
    if (pending?.joinable) return pending.join(deadline, giveUp)
    const call = start()
    this.inflight.set(key, call)
    const joined = call.join(deadline, giveUp)
    void call.done.then(() => {
      if (this.inflight.get(key) === call) this.inflight.delete(key)
    })
    return joined
  }

  private newCall(read: (deadline: Deadline) => Promise<Shared>): SharedCall<Shared> {
    return new SharedCall(read, { clock: this.clock, timers: this.opts.timers })
  }

  private async lead(
    sharedKey: string,
    requestKey: string,
    podUid: string,
    write: boolean,
    deadline: Deadline,
    giveUp: (cancelled: boolean) => Error,
    backend: CacheBackend,
  ): Promise<FetchOutcome> {
    const s = await this.shared(sharedKey, deadline, giveUp, () =>
      this.newCall(async (shared) => {
        const { body, tokenGeneration } = await backend.read(shared)
        const obtainedAt = this.clock()
        const lifetime = lifetimeOf(body, obtainedAt, write)
        this.store(
          lifetime.kind === 'static' ? `${this.prefix}static|${requestKey}` : this.dynamicKey(requestKey, podUid),
          body,
          lifetime,
          obtainedAt,
          tokenGeneration,
        )
        return { body, lifetime, leaderPod: podUid }
      }),
    )
    return { body: s.body, source: 'vault', kind: s.lifetime.kind }
  }

  private async readOwn(
    dynKey: string,
    podUid: string,
    write: boolean,
    deadline: Deadline,
    giveUp: (cancelled: boolean) => Error,
    backend: CacheBackend,
  ): Promise<FetchOutcome> {
    const ownKey = `own|${dynKey}`
    let led = false
    const s = await this.shared(ownKey, deadline, giveUp, () => {
      led = true
      return this.newCall(async (shared) => {
        const { body, tokenGeneration } = await backend.read(shared)
        const obtainedAt = this.clock()
        const lifetime = lifetimeOf(body, obtainedAt, write)
        if (lifetime.kind !== 'static') this.store(dynKey, body, lifetime, obtainedAt, tokenGeneration)
        return { body, lifetime, leaderPod: podUid }
      })
    })
    return { body: s.body, source: led ? 'vault' : 'coalesced', kind: s.lifetime.kind }
  }

  private store(key: string, body: unknown, lifetime: Lifetime, obtainedAt: number, tokenGeneration: number): void {
    if (lifetime.kind === 'static') {
      if (this.opts.staticFreshnessMs <= 0) return
      this.put(key, {
        size: approximateSize(body),
        body,
        lifetime,
        obtainedAt,
        renewAt: obtainedAt + this.opts.staticFreshnessMs,
        expiresAt: obtainedAt + this.opts.staticFreshnessMs,
        tokenGeneration,
        firstTtlMs: this.opts.staticFreshnessMs,
      })
      return
    }
    const expiresAt = expiryOf(lifetime, obtainedAt)
    this.put(key, {
      size: approximateSize(body),
      body,
      lifetime,
      obtainedAt,
      renewAt: renewPoint(lifetime, obtainedAt),
      expiresAt,
      tokenGeneration,
      firstTtlMs: expiresAt - obtainedAt,
    })
  }

  clear(): void {
    for (const key of this.ownKeys()) this.remove(key)
  }

  /** Handover: this identity's entries, keys without the identity's prefix (peek: the LRU order stays). */
  exportEntries(): ExportedEntry[] {
    const out: ExportedEntry[] = []
    for (const key of this.ownKeys()) {
      const e = this.entries.peek(key)
      if (e === undefined) continue
      out.push({
        key: key.slice(this.prefix.length),
        body: e.body,
        lifetime: e.lifetime,
        obtainedAt: e.obtainedAt,
        renewAt: e.renewAt,
        expiresAt: e.expiresAt,
        tokenGeneration: e.tokenGeneration,
        firstTtlMs: e.firstTtlMs,
      })
    }
    return out
  }

  /**
   * Handover: a predecessor's entries of this identity. One whose lifetime (or whose token,
   * `tokenExpiresAt`) ended in transit is dropped and counted; the rest are kept as if read here.
   */
  importEntries(
    entries: readonly ExportedEntry[],
    now: number,
    tokenExpiresAt: (generation: number) => number,
  ): ImportedEntries {
    const result: ImportedEntries = { leases: { taken: 0, expired: 0 } }
    for (const { key, ...e } of entries) {
      const dynamic = e.lifetime.kind !== 'static'
      const end = dynamic ? Math.min(e.expiresAt, tokenExpiresAt(e.tokenGeneration)) : e.expiresAt
      if (now >= end) {
        if (dynamic) result.leases.expired += 1
        continue
      }
      this.put(`${this.prefix}${key}`, { size: approximateSize(e.body), ...e })
      if (dynamic) result.leases.taken += 1
    }
    return result
  }
}
