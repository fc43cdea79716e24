/**
 * Vault API paths: the one way a request's path and query become the text after `/v1/`, and how
 * a request is named in errors and logs. Used by the sessions, the Mount's messages and `doctor`.
 */
import type { ReadConsistency } from '../config/config.js'
import type { HttpMethod, Json } from '../request/types.js'

export interface VaultRequest {
  method: HttpMethod
  /** API path without /v1/ and without query. */
  path: string
  query: Array<[string, string]>
  body?: { [key: string]: Json }
  /** The namespace to read in ('' the root namespace); absent: the connection's. */
  namespace?: string
  /** Whether a cluster's standby may answer (vault/transport/consistency.ts); absent: strong. */
  consistency?: ReadConsistency
}

/** Each segment percent-encoded as encodeURIComponent has it; the separators stay. */
export function encodePath(path: string): string {
  return path
    .split('/')
    .map((s) => encodeURIComponent(s))
    .join('/')
}

/** The text after `/v1/`: the encoded path and its query. */
export function apiPath(req: Pick<VaultRequest, 'path' | 'query'>): string {
  const query = req.query.length > 0 ? `?${new URLSearchParams(req.query).toString()}` : ''
  return `${encodePath(req.path)}${query}`
}

/** Describes a request for error messages and logs: method, path and query names, never values of the body. */
export function describeRequest(req: Pick<VaultRequest, 'method' | 'path' | 'query'>): string {
  const query = req.query.length > 0 ? `?${new URLSearchParams(req.query).toString()}` : ''
  return `${req.method} ${req.path}${query}`
}
