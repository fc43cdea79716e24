/**
 * Objects -> the distinct Vault requests of one Mount. Objects that name the
 * same (method, path, query, secretArgs, namespace) share one call, so a database
 * username and password come from one lease; different secretArgs (two PKI
 * common names) or namespaces are different calls.
 */
import { DEFAULT_READ_CONSISTENCY, type ReadConsistency } from '../config/config.js'
import { canonicalJson } from '../util/canonical-json.js'
import type { SecretObject } from '../request/types.js'
import type { VaultRequest } from '../vault/paths.js'

export interface PlannedRequest {
  request: VaultRequest
  /** Identifies the request for coalescing and caching. */
  key: string
  /** Indexes into the Mount's objects, in their order. */
  objectIndexes: number[]
}

/**
 * The key coalescing and every cache use for the object's request, within one identity (whose key
 * holds the Mount's namespace): an object's own namespace is part of it, so that the same path in
 * two namespaces is two reads and two kept answers; so is an `eventual` read consistency, so that
 * a strong read is never answered by one a standby may have served. Without either the key is what
 * it always was (a handed-over cache entry is found again).
 */
export function requestKey(obj: SecretObject, consistency: ReadConsistency = DEFAULT_READ_CONSISTENCY): string {
  const parts: unknown[] = [obj.method, obj.secretPath, obj.query, obj.secretArgs ?? null]
  if (obj.namespace !== undefined) parts.push({ namespace: obj.namespace })
  if (consistency !== DEFAULT_READ_CONSISTENCY) parts.push({ consistency })
  return canonicalJson(parts)
}

/**
 * `namespace`: the Mount's namespace of reads (undefined: the connection's), for objects naming none;
 * `consistency`: the Mount's read consistency.
 */
export function planRequests(
  objects: readonly SecretObject[],
  namespace?: string,
  consistency: ReadConsistency = DEFAULT_READ_CONSISTENCY,
): PlannedRequest[] {
  const byKey = new Map<string, PlannedRequest>()
  objects.forEach((obj, index) => {
    const key = requestKey(obj, consistency)
    const existing = byKey.get(key)
    if (existing) {
      existing.objectIndexes.push(index)
      return
    }
    const request: VaultRequest = {
      method: obj.method,
      path: obj.secretPath,
      query: obj.query,
      body: obj.secretArgs,
      consistency,
    }
    const readIn = obj.namespace ?? namespace
    if (readIn !== undefined) request.namespace = readIn
    byKey.set(key, { key, request, objectIndexes: [index] })
  })
  return [...byKey.values()]
}
