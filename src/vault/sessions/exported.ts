/**
 * What one identity's session hands to a successor process during an upgrade (src/handover/):
 * its token, the token's lifetime and what it has read. Times are absolute wall-clock
 * milliseconds: both processes run on one node and share the clock. A token or lease that
 * never expires has `Infinity` here (the wire format says so in its own way).
 */
import type { VaultIdentity } from './session.js'
import type { Lifetime } from './lifetime.js'

export interface ExportedEntry {
  /** The entry's key within its identity: `pod:<uid>|<request>`, `shared|<request>` or `static|<request>`. */
  key: string
  body: unknown
  lifetime: Lifetime
  obtainedAt: number
  renewAt: number
  expiresAt: number
  /** The generation of the token that read it: a lease dies with the token that created it. */
  tokenGeneration: number
  firstTtlMs: number
}

/** The lifetime of a Vault token, as its identity keeps it (token.ts) and hands it over. */
export interface TokenLifetime {
  /** Increases with every login, so a 403 can tell whether someone already re-logged in. */
  generation: number
  obtainedAt: number
  /** The login's TTL; 0 for a token that never expires. */
  ttlMs: number
  renewable: boolean
  renewAt: number
  expiresAt: number
}

export interface ExportedToken extends TokenLifetime {
  /** The Vault token itself: a secret, never logged. */
  value: string
}

export interface ExportedSession {
  identity: VaultIdentity
  token: ExportedToken
  /** When the previous token expires, for leases it created that are still served (at most one). */
  earlierTokens: Array<{ generation: number; expiresAt: number }>
  /** The identity's last Mount: the successor's idle sweep counts from here. */
  lastUsedAt: number
  entries: ExportedEntry[]
}

/** What became of the entries of one imported session. `leases` counts leased and issued secrets only. */
export interface ImportedEntries {
  leases: { taken: number; expired: number }
}
