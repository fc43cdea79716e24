/**
 * What one identity has read from Vault: a store the session asks, and that never asks back (the
 * session makes every Vault call, and coalesces identical reads in flight: session.ts).
 *
 * - Static answers are kept for the freshness window (default 0: only coalesced, so a rotated KV
 *   value shows up at the next Mount).
 * - Leased and issued answers (database credentials, certificates) are kept per pod — or per
 *   identity when sharing is on — and served again until two thirds of their lifetime; a lease
 *   past that point is due for renewal (the session renews it and extends the entry, or drops it):
 *   a pod keeps one database user and one certificate across re-mounts.
 * - A lease dies with the token that created it: the session says when each of its tokens expires.
 */
import { FairCache } from '../../util/fair-cache.js'
import { jsonSize } from '../../util/json-size.js'
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
}

/** When each of the identity's recent tokens expires, by generation (absent: gone). */
export type TokenExpiries = ReadonlyMap<number, number>

/** A leased answer past its renewal point, still alive and renewable: renew it, then extend() or drop() it. */
export interface DueLease {
  readonly key: string
  readonly leaseId: string
  readonly body: unknown
  readonly entry: CacheEntry
}

/** What the cache holds for a request and a pod. */
export type CacheLookup =
  { kind: 'hit'; outcome: FetchOutcome } | { kind: 'renewDue'; lease: DueLease } | { kind: 'miss' }

const MISS: CacheLookup = Object.freeze({ kind: 'miss' })

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

export type SecretStore = FairCache<CacheEntry>

const MIN_PRUNE_AT = 256

/** The store every identity's cache shares: bounded in entries and bytes, fair between tenants (util/fair-cache.ts). */
export function createSecretStore(maxEntries = DEFAULT_MAX_ENTRIES, maxBytes = DEFAULT_MAX_BYTES): SecretStore {
  return new FairCache<CacheEntry>({ maxEntries, maxSize: maxBytes, sizeOf: (e) => e.size })
}

function approximateSize(body: unknown): number {
  return Math.max(1, jsonSize(body))
}

export class SecretCache {
  private readonly opts: SecretCacheOptions
  private readonly entries: SecretStore
  private readonly prefix: string
  private readonly tenant: string
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

  private staticKey(requestKey: string): string {
    return `${this.prefix}static|${requestKey}`
  }

  /** What is kept for `requestKey` and the pod at `now`; a dynamic entry that can serve no more is dropped. */
  lookup(requestKey: string, podUid: string, now: number, tokens: TokenExpiries): CacheLookup {
    const key = this.dynamicKey(requestKey, podUid)
    const entry = this.entries.get(key)
    if (entry) {
      const hardExpiry = Math.min(entry.expiresAt, tokens.get(entry.tokenGeneration) ?? 0)
      if (now < Math.min(entry.renewAt, hardExpiry)) {
        return { kind: 'hit', outcome: { body: entry.body, source: 'cache', kind: entry.lifetime.kind } }
      }
      const lt = entry.lifetime
      if (lt.kind === 'leased' && lt.renewable && now < hardExpiry) {
        return { kind: 'renewDue', lease: { key, leaseId: lt.leaseId, body: entry.body, entry } }
      }
      this.remove(key)
    }
    // Static answers are kept only with a freshness (store()); without one there is nothing to look up.
    if (this.opts.staticFreshnessMs > 0) {
      const stat = this.entries.get(this.staticKey(requestKey))
      if (stat && now < stat.expiresAt)
        return { kind: 'hit', outcome: { body: stat.body, source: 'cache', kind: 'static' } }
    }
    return MISS
  }

  /**
   * A renewed lease (`granted`: its new TTL): kept, renewed again at two thirds of it, unless it got
   * too little (near its max TTL: it should be replaced). False when not kept: drop() it.
   */
  extend(due: DueLease, granted: { ttlMs: number; renewable: boolean }, now: number): boolean {
    if (granted.ttlMs < due.entry.firstTtlMs * MIN_RENEWED_SHARE) return false
    const entry = due.entry
    entry.expiresAt = now + granted.ttlMs
    entry.renewAt = now + granted.ttlMs * RENEW_FRACTION
    if (entry.lifetime.kind === 'leased') entry.lifetime = { ...entry.lifetime, renewable: granted.renewable }
    this.put(due.key, entry)
    return true
  }

  /** Forgets a lease that could not be renewed (not renewable after all, revoked, refused): a new one is read. */
  drop(due: DueLease): void {
    this.remove(due.key)
  }

  /**
   * Keeps Vault's answer to `requestKey` read for the pod (`write`: a PUT/POST) with the token of
   * `tokenGeneration` at `obtainedAt`, as its lifetime says; returns that lifetime's kind.
   */
  store(
    requestKey: string,
    podUid: string,
    body: unknown,
    write: boolean,
    tokenGeneration: number,
    obtainedAt: number,
  ): Lifetime['kind'] {
    const lifetime = lifetimeOf(body, obtainedAt, write)
    const key = lifetime.kind === 'static' ? this.staticKey(requestKey) : this.dynamicKey(requestKey, podUid)
    this.keep(key, body, lifetime, obtainedAt, tokenGeneration)
    return lifetime.kind
  }

  private keep(key: string, body: unknown, lifetime: Lifetime, obtainedAt: number, tokenGeneration: number): void {
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
   * Handover: a predecessor's entries of this identity. One whose lifetime (or whose token's,
   * `tokens`) ended in transit is dropped and counted; the rest are kept as if read here.
   */
  importEntries(entries: readonly ExportedEntry[], now: number, tokens: TokenExpiries): ImportedEntries {
    const result: ImportedEntries = { leases: { taken: 0, expired: 0 } }
    for (const { key, ...e } of entries) {
      const dynamic = e.lifetime.kind !== 'static'
      const end = dynamic ? Math.min(e.expiresAt, tokens.get(e.tokenGeneration) ?? 0) : e.expiresAt
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
