/**
 * Objects -> the distinct Vault requests of one Mount. Objects that name the
 * same (method, path, query, secretArgs) share one call, so a database
 * username and password come from one lease; different secretArgs (two PKI
 * common names) are different calls.
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

export function requestKey(obj: SecretObject): string {
  return canonicalJson([obj.method, obj.secretPath, obj.query, obj.secretArgs ?? null])
}

export function planRequests(objects: readonly SecretObject[]): PlannedRequest[] {
  const byKey = new Map<string, PlannedRequest>()
  objects.forEach((obj, index) => {
    const key = requestKey(obj)
    const existing = byKey.get(key)
    if (existing) {
      existing.objectIndexes.push(index)
      return
    }
    byKey.set(key, {
      key,
      request: { method: obj.method, path: obj.secretPath, query: obj.query, body: obj.secretArgs },
      objectIndexes: [index],
    })
  })
  return [...byKey.values()]
}
