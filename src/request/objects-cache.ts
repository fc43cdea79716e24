/**
 * Every pod of a SecretProviderClass sends the same `objects` text on every
 * (re-)mount: parse each distinct text once. One instance is built by the
 * composition root and owned by the MountService.
 *
 * Failures are cached too, so a pod retrying a refused text costs a hash, not
 * a parse. Entries are keyed by the text's SHA-256 (the cache never holds the
 * texts) and bounded in bytes, with the text's length standing in for the
 * size of what was parsed from it, plus each object's version input
 * (SecretObject.configJson, a copy of its fields). Parsed objects are never
 * mutated, so sharing them between Mounts is safe.
 */
import crypto from 'node:crypto'
import { isProviderError, type ProviderError } from '../errors.js'
import { FairCache } from '../util/fair-cache.js'
import { DEFAULT_OBJECTS_LIMITS, parseObjects, type ObjectsLimits } from './objects.js'
import type { SecretObject } from './types.js'

/** Total size of the texts whose parse results are kept. */
export const DEFAULT_OBJECTS_CACHE_BYTES = 16 * 1024 * 1024
/** Texts kept at most (the byte bound is what usually binds). */
const MAX_OBJECTS_CACHE_ENTRIES = 10_000
/** What an entry costs besides its text: the key, the entry, a refusal's message. */
const ENTRY_OVERHEAD_BYTES = 512

/** The text's key: crypto.hash where Node has it (≥ 20.12), else a Hash object. */
const textKey: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'base64')
    : (text) => crypto.createHash('sha256').update(text).digest('base64')

type Entry = ({ objects: SecretObject[]; error?: undefined } | { objects?: undefined; error: ProviderError }) & {
  size: number
}

export interface ObjectsCacheOptions {
  limits?: ObjectsLimits
  maxBytes?: number
}

export class ObjectsCache {
  private readonly limits: ObjectsLimits
  private readonly entries: FairCache<Entry>

  constructor(opts: ObjectsCacheOptions = {}) {
    this.limits = opts.limits ?? DEFAULT_OBJECTS_LIMITS
    // Fair between namespaces (util/fair-cache.ts): one namespace's many texts push out only its own.
    this.entries = new FairCache<Entry>({
      maxEntries: MAX_OBJECTS_CACHE_ENTRIES,
      maxSize: opts.maxBytes ?? DEFAULT_OBJECTS_CACHE_BYTES,
      sizeOf: (e) => e.size,
    })
  }

  /**
   * The objects of `text`, or the ProviderError it was refused with (the same one on every call);
   * `tenant` (the pod's namespace) is charged with a text it is the first to parse.
   */
  parse(text: string, tenant = ''): SecretObject[] {
    // A text over the limit is refused before it is hashed; the refusal costs no more than a cache hit.
    if (text.length > this.limits.maxBytes) return parseObjects(text, this.limits)
    const key = textKey(text)
    let entry = this.entries.get(key)
    if (entry === undefined) {
      try {
        const objects = parseObjects(text, this.limits)
        const size = ENTRY_OVERHEAD_BYTES + text.length + objects.reduce((n, o) => n + o.configJson.length, 0)
        entry = { objects, size }
      } catch (err) {
        // Anything else is a bug; it is not cached, so it stays visible.
        if (!isProviderError(err)) throw err
        // A refusal keeps only its message: its cost does not grow with the text.
        entry = { error: err, size: ENTRY_OVERHEAD_BYTES + err.message.length }
      }
      this.entries.set(tenant, key, entry)
    }
    if (entry.error) throw entry.error
    return entry.objects
  }

  /** Bytes accounted to the entries held (for tests and metrics). */
  get sizeBytes(): number {
    return this.entries.calculatedSize
  }

  get size(): number {
    return this.entries.size
  }
}
