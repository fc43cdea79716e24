/**
 * A bounded cache shared by tenants (the namespaces of the pods on a node), where one tenant cannot
 * push out another's entries: when the cache is full, the tenant holding the most (entries, or size
 * when sizes are counted) gives up its least recently used entry. A tenant that fills the cache
 * therefore only ever evicts its own entries once it is the largest, and every smaller tenant keeps
 * what it has.
 *
 * Each tenant's entries live in a Map, which keeps insertion order: moving an entry to the end on
 * every use makes that order least recently used first.
 */

export interface FairCacheOptions<V> {
  /** Entries held at most, over all tenants. */
  maxEntries: number
  /** Entries one tenant holds at most: past it, that tenant's own least recently used goes. */
  maxEntriesPerTenant?: number
  /** Total size held at most, over all tenants (with `sizeOf`). */
  maxSize?: number
  sizeOf?: (value: V) => number
  /** Told about every entry the cache drops to make room (not about delete() or clear()). */
  onEvict?: (value: V, key: string, tenant: string) => void
}

interface Slot<V> {
  tenant: string
  value: V
  size: number
}

export class FairCache<V> {
  private readonly opts: FairCacheOptions<V>
  private readonly byKey = new Map<string, Slot<V>>()
  private readonly byTenant = new Map<string, { keys: Map<string, Slot<V>>; size: number }>()
  private totalSize = 0

  constructor(opts: FairCacheOptions<V>) {
    this.opts = opts
  }

  get size(): number {
    return this.byKey.size
  }

  /** The total of the entries' sizes (0 without `sizeOf`). */
  get calculatedSize(): number {
    return this.totalSize
  }

  /** Entries `tenant` holds. */
  sizeOf(tenant: string): number {
    return this.byTenant.get(tenant)?.keys.size ?? 0
  }

  /** The value, marked as just used. */
  get(key: string): V | undefined {
    const slot = this.byKey.get(key)
    if (slot === undefined) return undefined
    const own = this.byTenant.get(slot.tenant)!.keys
    own.delete(key)
    own.set(key, slot)
    return slot.value
  }

  /** The value, without marking it used. */
  peek(key: string): V | undefined {
    return this.byKey.get(key)?.value
  }

  has(key: string): boolean {
    return this.byKey.has(key)
  }

  set(tenant: string, key: string, value: V): void {
    this.delete(key)
    const size = this.opts.sizeOf?.(value) ?? 0
    const slot: Slot<V> = { tenant, value, size }
    let own = this.byTenant.get(tenant)
    if (own === undefined) {
      own = { keys: new Map(), size: 0 }
      this.byTenant.set(tenant, own)
    }
    own.keys.set(key, slot)
    own.size += size
    this.byKey.set(key, slot)
    this.totalSize += size
    const perTenant = this.opts.maxEntriesPerTenant
    if (perTenant !== undefined && own.keys.size > perTenant) this.evict(own.keys.keys().next().value!)
    this.makeRoom(key)
  }

  private evict(key: string): void {
    const slot = this.byKey.get(key)!
    this.remove(key, slot)
    this.opts.onEvict?.(slot.value, key, slot.tenant)
  }

  delete(key: string): boolean {
    const slot = this.byKey.get(key)
    if (slot === undefined) return false
    this.remove(key, slot)
    return true
  }

  keys(): IterableIterator<string> {
    return this.byKey.keys()
  }

  entries(): Array<[string, V]> {
    return [...this.byKey].map(([key, slot]) => [key, slot.value])
  }

  clear(): void {
    this.byKey.clear()
    this.byTenant.clear()
    this.totalSize = 0
  }

  private remove(key: string, slot: Slot<V>): void {
    this.byKey.delete(key)
    const own = this.byTenant.get(slot.tenant)!
    own.keys.delete(key)
    own.size -= slot.size
    this.totalSize -= slot.size
    if (own.keys.size === 0) this.byTenant.delete(slot.tenant)
  }

  private overFull(): boolean {
    const maxSize = this.opts.maxSize
    return this.byKey.size > this.opts.maxEntries || (maxSize !== undefined && this.totalSize > maxSize)
  }

  /** Evicts from the largest tenant until the cache fits; `keep` (the entry just set) goes last. */
  private makeRoom(keep: string): void {
    const bySize = this.opts.maxSize !== undefined && this.opts.sizeOf !== undefined
    while (this.overFull()) {
      let largest: { keys: Map<string, Slot<V>>; size: number } | undefined
      for (const own of this.byTenant.values()) {
        const weight = bySize ? own.size : own.keys.size
        if (largest === undefined || weight > (bySize ? largest.size : largest.keys.size)) largest = own
      }
      if (largest === undefined) return
      let victim: string | undefined
      for (const key of largest.keys.keys()) {
        if (key !== keep) {
          victim = key
          break
        }
      }
      // Only the entry just set is left: it alone is larger than the bound, so it does not stay.
      victim ??= keep
      this.evict(victim)
      if (victim === keep) return
    }
  }
}
