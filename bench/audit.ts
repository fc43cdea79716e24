// What Vault actually did, counted from OpenBao's file audit log (one JSON
// object per line; a `response` entry per finished request). Paths are not
// HMAC-ed by the audit device, so they can be classified as they are.
import { open, stat } from 'node:fs/promises'

export interface VaultCounts {
  /** Successful logins (auth/<mount>/login). */
  logins: number
  /** Failed logins. */
  loginFailures: number
  /** Successful KV (secret/…) reads. */
  kvReads: number
  /** Database credentials created (database/creds/…): one new database user each. */
  dbCreds: number
  /** Certificates issued (pki/issue/…). */
  certs: number
  /** Responses that carried a new lease (any engine). */
  leasesCreated: number
  tokenRenewals: number
  tokenRevocations: number
  leaseRenewals: number
  leaseRevocations: number
  /** Other successful requests by providers (token lookups, health, …). */
  other: number
  /** Failed requests other than logins. */
  errors: number
  /** Every request by the providers, by "operation path". */
  byPath: Record<string, number>
}

export function emptyCounts(): VaultCounts {
  return {
    logins: 0,
    loginFailures: 0,
    kvReads: 0,
    dbCreds: 0,
    certs: 0,
    leasesCreated: 0,
    tokenRenewals: 0,
    tokenRevocations: 0,
    leaseRenewals: 0,
    leaseRevocations: 0,
    other: 0,
    errors: 0,
    byPath: {},
  }
}

interface AuditEntry {
  type?: string
  /** RFC 3339 with fractional seconds, e.g. 2026-11-30T11:20:01.123456789Z. */
  time?: string
  error?: string
  auth?: { policies?: string[] }
  request?: { path?: string; operation?: string }
  response?: { secret?: { lease_id?: string }; auth?: { client_token?: string } }
}

/**
 * Classifies one response entry into `c`. Requests made with the root token (the harness) are
 * skipped. Returns whether the entry was a provider's request.
 */
export function countEntry(c: VaultCounts, e: AuditEntry): boolean {
  if (e.type !== 'response') return false
  if (e.auth?.policies?.includes('root') === true) return false
  const path = e.request?.path ?? ''
  const op = e.request?.operation ?? ''
  const failed = typeof e.error === 'string' && e.error !== ''
  const key = `${op} ${path}`
  c.byPath[key] = (c.byPath[key] ?? 0) + 1
  if (/^auth\/[^/]+\/login(\/|$)/.test(path)) {
    if (failed) c.loginFailures++
    else c.logins++
    return true
  }
  if (failed) {
    c.errors++
    return true
  }
  if (e.response?.secret?.lease_id) c.leasesCreated++
  if (path === 'auth/token/renew-self' || path === 'auth/token/renew') c.tokenRenewals++
  else if (/^auth\/token\/revoke/.test(path)) c.tokenRevocations++
  else if (/^sys\/(leases\/)?renew/.test(path)) c.leaseRenewals++
  else if (/^sys\/(leases\/)?revoke/.test(path)) c.leaseRevocations++
  else if (/^database\/creds\//.test(path)) c.dbCreds++
  else if (/^pki\/issue\//.test(path)) c.certs++
  else if (/^secret\//.test(path) && op === 'read') c.kvReads++
  else c.other++
  return true
}

/** Every provider request counted (the sum over byPath). */
export function totalRequests(c: VaultCounts): number {
  return Object.values(c.byPath).reduce((a, b) => a + b, 0)
}

/** The largest number of provider requests OpenBao finished within one calendar second. */
export function peakPerSecond(perSecond: Record<string, number>): number {
  return Math.max(0, ...Object.values(perSecond))
}

/**
 * Reads the audit log from byte `offset` on; returns the counts, the new offset and the provider
 * requests per second of the audit entries' own timestamps ("YYYY-MM-DDTHH:MM:SS" → count).
 */
export async function countAuditSince(
  file: string,
  offset: number,
): Promise<{ counts: VaultCounts; offset: number; perSecond: Record<string, number> }> {
  const counts = emptyCounts()
  const perSecond: Record<string, number> = {}
  const size = await stat(file).then(
    (s) => s.size,
    () => 0,
  )
  if (size <= offset) return { counts, offset, perSecond }
  const fh = await open(file, 'r')
  try {
    const buf = Buffer.alloc(size - offset)
    await fh.read(buf, 0, buf.length, offset)
    // Only whole lines; a partly written last line is read next time.
    const end = buf.lastIndexOf(0x0a) + 1
    for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
      if (line.trim() === '') continue
      try {
        const e = JSON.parse(line) as AuditEntry
        if (countEntry(counts, e) && typeof e.time === 'string') {
          const sec = e.time.slice(0, 19)
          perSecond[sec] = (perSecond[sec] ?? 0) + 1
        }
      } catch {
        /* not JSON: skip */
      }
    }
    return { counts, offset: offset + end, perSecond }
  } finally {
    await fh.close()
  }
}

export async function auditSize(file: string): Promise<number> {
  return stat(file).then(
    (s) => s.size,
    () => 0,
  )
}

export function addCounts(a: VaultCounts, b: VaultCounts): VaultCounts {
  const out = emptyCounts()
  for (const k of Object.keys(out) as Array<keyof VaultCounts>) {
    if (k === 'byPath') continue
    out[k] = (a[k] as number) + (b[k] as number)
  }
  for (const src of [a.byPath, b.byPath]) {
    for (const [p, n] of Object.entries(src)) out.byPath[p] = (out.byPath[p] ?? 0) + n
  }
  return out
}
