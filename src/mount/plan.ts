/**
 * Objects -> the distinct Vault requests of one Mount. Objects that name the
 * same (method, path, query, secretArgs, namespace) share one call, so a database
 * username and password come from one lease; different secretArgs (two PKI
 * common names) or namespaces are different calls.
 */
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
 * two namespaces is two reads and two kept answers. Without one the key is what it always was (a
 * handed-over cache entry is found again).
 */
export function requestKey(obj: SecretObject): string {
  const parts: unknown[] = [obj.method, obj.secretPath, obj.query, obj.secretArgs ?? null]
  if (obj.namespace !== undefined) parts.push({ namespace: obj.namespace })
  return canonicalJson(parts)
}

/** `namespace`: the Mount's namespace of reads (undefined: the connection's), for objects naming none. */
export function planRequests(objects: readonly SecretObject[], namespace?: string): PlannedRequest[] {
  const byKey = new Map<string, PlannedRequest>()
  objects.forEach((obj, index) => {
    const key = requestKey(obj)
    const existing = byKey.get(key)
    if (existing) {
      existing.objectIndexes.push(index)
      return
    }
    const request: VaultRequest = { method: obj.method, path: obj.secretPath, query: obj.query, body: obj.secretArgs }
    const readIn = obj.namespace ?? namespace
    if (readIn !== undefined) request.namespace = readIn
    byKey.set(key, { key, request, objectIndexes: [index] })
  })
  return [...byKey.values()]
}
