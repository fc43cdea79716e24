/**
 * Which node of a Vault or OpenBao cluster answers a read. Since OpenBao 2.5 a standby serves reads
 * from its own copy of the data, which lags the active node by a fraction of a second (40–170 ms
 * measured on 2.7.2): a read right after a write acknowledged by the active node may return the
 * previous version. A client can ask otherwise per request, with two headers:
 * - `X-Vault-Index`: an index the node must have applied before it may answer; a standby that
 *   has not reached it forwards the request to the active node when
 * - `X-Vault-Inconsistent: forward-active-node` says so (without it, or with `fail`, the standby
 *   answers 429, which must never be asked for: it reads as a rate limit).
 *
 * `strong` reads carry `forward-active-node` and an index no node can have reached (2^63−1), so
 * that every standby forwards them and the active node (which ignores any index) serves them. The
 * index is written in the format the same transport's own earlier answers used (OpenBao 2.7:
 * base64 of `{"cluster":"<id>","value":"<n>"}`; newer OpenBao: `<cluster>:<n>`): one small record
 * per transport, learned from what that address answered, never from another address. Until an
 * answer has shown the format nothing is sent (a Mount's first call is a login, which standbys
 * forward anyway); an unknown format (Vault Enterprise) sends nothing and is logged once. A Vault
 * OSS standby forwards every request whatever the headers.
 *
 * `eventual` reads carry nothing, unless the identity's own login or write answered with an index:
 * then that index and `forward-active-node` (read-your-writes: a standby that has not applied it
 * yet forwards).
 */
import type { ReadConsistency } from '../../config/config.js'

/** An index no node can have reached: 2^63−1, the largest Raft index. */
export const UNREACHED_INDEX_VALUE = '9223372036854775807'
/** The longest X-Vault-Index sent back or read (OpenBao's are about 90 characters). */
export const MAX_INDEX_CHARS = 512
/** A cluster id (a UUID in OpenBao) longer than this, or of other characters, is no format of ours. */
const CLUSTER_ID = /^[A-Za-z0-9._-]{1,128}$/
const RAFT_INDEX = /^\d{1,20}$/
/** One header value of printable ASCII, no list separator (two values joined are refused by OpenBao). */
const ECHOABLE = /^[\x21-\x2b\x2d-\x7e]+$/
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** What one call asks of a cluster's standbys, and who is told the index its answer carries. */
export interface CallConsistency {
  /**
   * strong: every standby forwards to the active node; eventual: a standby may answer (unless
   * `after`); absent: no header (a login or a token's own call, which standbys forward anyway).
   */
  mode?: ReadConsistency
  /** eventual: an index the identity's own login or write answered with; a standby behind it forwards. */
  after?: string
  /** Told the index a successful answer carries (bounded, printable): the caller's own writes. */
  onIndex?: (index: string) => void
}

/** How an address writes its index, as its answers showed it. */
export type IndexFormat = { kind: 'json'; cluster: string } | { kind: 'colon'; cluster: string } | { kind: 'unknown' }

/** An answer's X-Vault-Index as it may be sent back: one value of printable ASCII, at most MAX_INDEX_CHARS. */
export function echoableIndex(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string' || header.length > MAX_INDEX_CHARS || !ECHOABLE.test(header)) return undefined
  return header
}

/** The format of an echoable index value. */
export function indexFormat(value: string): IndexFormat {
  const colon = /^([^:]+):([^:]+)$/.exec(value)
  if (colon !== null) {
    return CLUSTER_ID.test(colon[1]!) && RAFT_INDEX.test(colon[2]!)
      ? { kind: 'colon', cluster: colon[1]! }
      : { kind: 'unknown' }
  }
  if (value.length % 4 !== 0 || !BASE64.test(value)) return { kind: 'unknown' }
  let decoded: unknown
  try {
    decoded = JSON.parse(Buffer.from(value, 'base64').toString('utf8'))
  } catch {
    return { kind: 'unknown' }
  }
  if (decoded === null || typeof decoded !== 'object' || Array.isArray(decoded)) return { kind: 'unknown' }
  const fields = decoded as Record<string, unknown>
  const keys = Object.keys(fields)
  const { cluster, value: index } = fields
  if (keys.length !== 2 || typeof cluster !== 'string' || typeof index !== 'string') return { kind: 'unknown' }
  return CLUSTER_ID.test(cluster) && RAFT_INDEX.test(index) ? { kind: 'json', cluster } : { kind: 'unknown' }
}

/** The unreached index in `format`; undefined for a format the provider cannot write. */
export function unreachedIndex(format: IndexFormat): string | undefined {
  if (format.kind === 'colon') return `${format.cluster}:${UNREACHED_INDEX_VALUE}`
  if (format.kind === 'json') {
    return Buffer.from(JSON.stringify({ cluster: format.cluster, value: UNREACHED_INDEX_VALUE })).toString('base64')
  }
  return undefined
}

/**
 * One transport's record of its address's index format (the latest answer's), and the headers a
 * call's consistency asks for. `onUnknown`: told once, the first time a strong read cannot be
 * forced because the format is not one the provider can write.
 */
export class IndexRecord {
  private format: IndexFormat | undefined
  private warned = false

  constructor(private readonly onUnknown: () => void) {}

  /** A successful answer's X-Vault-Index: its format is learned; returned when it may be sent back. */
  learn(header: string | string[] | undefined): string | undefined {
    if (header === undefined) return undefined
    const value = echoableIndex(header)
    this.format = value === undefined ? { kind: 'unknown' } : indexFormat(value)
    return value
  }

  /** The request headers for `c` (none without one). */
  headers(c: CallConsistency | undefined): Record<string, string> {
    if (c?.mode === undefined) return {}
    if (c.mode === 'eventual') {
      const after = c.after === undefined ? undefined : echoableIndex(c.after)
      return after === undefined ? {} : { 'x-vault-index': after, 'x-vault-inconsistent': 'forward-active-node' }
    }
    if (this.format === undefined) return {}
    const unreached = unreachedIndex(this.format)
    if (unreached === undefined) {
      if (!this.warned) {
        this.warned = true
        this.onUnknown()
      }
      return {}
    }
    return { 'x-vault-index': unreached, 'x-vault-inconsistent': 'forward-active-node' }
  }
}
