/**
 * NO_PROXY as Go's golang.org/x/net/http/httpproxy reads it, and the IP literals it and the
 * loopback rule compare (proxy.ts decides with them). Pure.
 */
import { isIP } from 'node:net'
import { domainToASCII } from 'node:url'

/** One NO_PROXY entry, as Go's httpproxy reads it. */
export type NoProxyEntry =
  | { kind: 'all'; raw: string }
  | { kind: 'cidr'; raw: string; network: Uint8Array; bits: number }
  | { kind: 'ip'; raw: string; ip: Uint8Array; port: string }
  | { kind: 'domain'; raw: string; suffix: string; port: string; matchHost: boolean }

export interface NoProxyList {
  /** NO_PROXY or no_proxy; undefined when neither is set. */
  variable: string | undefined
  entries: readonly NoProxyEntry[]
}

/** An IP literal as 4 bytes (IPv4, or IPv4-mapped IPv6, as Go's To4 makes it) or 16 bytes; undefined when `text` is not one. */
export function ipBytes(text: string): Uint8Array | undefined {
  const family = isIP(text)
  if (family === 4) return Uint8Array.from(text.split('.').map(Number))
  if (family !== 6) return undefined
  let canonical: string
  try {
    // The URL parser writes any IPv6 form (a dotted IPv4 tail included) as hex groups around one "::".
    canonical = new URL(`http://[${text}]`).hostname.slice(1, -1)
  } catch {
    // A zone (fe80::1%eth0) is not an address a URL or NO_PROXY can name.
    return undefined
  }
  const [left, right] = canonical.split('::') as [string, string | undefined]
  const head = left === '' ? [] : left.split(':')
  const tail = right === undefined || right === '' ? [] : right.split(':')
  const groups =
    right === undefined ? head : [...head, ...new Array<string>(8 - head.length - tail.length).fill('0'), ...tail]
  const bytes = new Uint8Array(16)
  groups.forEach((g, i) => {
    const n = parseInt(g, 16)
    bytes[2 * i] = n >> 8
    bytes[2 * i + 1] = n & 0xff
  })
  const mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff
  return mapped ? bytes.slice(12) : bytes
}

export function isLoopback(ip: Uint8Array): boolean {
  if (ip.length === 4) return ip[0] === 127
  return ip.slice(0, 15).every((b) => b === 0) && ip[15] === 1
}

function inNetwork(ip: Uint8Array, network: Uint8Array, bits: number): boolean {
  if (ip.length !== network.length) return false
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3
    const mask = 0x80 >> (i & 7)
    if ((ip[byte]! & mask) !== (network[byte]! & mask)) return false
  }
  return true
}

/** Go's net.SplitHostPort, enough for NO_PROXY entries: `host:port` or `[v6]:port`; undefined when there is no port. */
function splitHostPort(entry: string): { host: string; port: string } | undefined {
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']')
    if (close === -1 || entry[close + 1] !== ':') return undefined
    return { host: entry.slice(1, close), port: entry.slice(close + 2) }
  }
  const colon = entry.lastIndexOf(':')
  if (colon === -1 || entry.indexOf(':') !== colon) return undefined
  return { host: entry.slice(0, colon), port: entry.slice(colon + 1) }
}

/** Non-ASCII names as their punycode (Go's idnaASCII); unchanged when that fails. */
export function asciiName(name: string): string {
  if ([...name].every((c) => c.charCodeAt(0) < 0x80)) return name
  const dot = name.startsWith('.') ? '.' : ''
  const converted = domainToASCII(name.slice(dot.length))
  return converted === '' ? name : dot + converted
}

/**
 * NO_PROXY as Go's httpproxy reads it (config.init): comma-separated, trimmed, lower-cased;
 * `*` alone matches everything; an IP or CIDR matches addresses; `host` or `host:port` matches
 * that name and every subdomain; `.domain` and `*.domain` match subdomains only; a port, when
 * given, must match too. Unreadable entries are skipped, as Go skips them.
 */
export function parseNoProxy(value: string, variable?: string): NoProxyList {
  const entries: NoProxyEntry[] = []
  for (const piece of value.split(',')) {
    const raw = piece.trim().toLowerCase()
    if (raw === '') continue
    if (raw === '*') return { variable, entries: [{ kind: 'all', raw }] }
    const slash = raw.indexOf('/')
    if (slash !== -1) {
      const address = raw.slice(0, slash)
      const network = ipBytes(address)
      const bitsText = raw.slice(slash + 1)
      const max = isIP(address) === 4 ? 32 : 128
      if (network !== undefined && /^\d{1,3}$/.test(bitsText) && Number(bitsText) <= max) {
        // An IPv4-mapped IPv6 network (::ffff:10.0.0.0/104) is the IPv4 network of its last 32 bits.
        const bits = network.length === 4 ? Math.max(0, Number(bitsText) - (max - 32)) : Number(bitsText)
        entries.push({ kind: 'cidr', raw, network, bits })
        continue
      }
    }
    const split = splitHostPort(raw)
    const host = split ? split.host : raw
    const port = split ? split.port : ''
    if (split && host === '') continue
    const ip = ipBytes(host)
    if (ip !== undefined) {
      entries.push({ kind: 'ip', raw, ip, port })
      continue
    }
    if (host === '') continue
    let name = host.startsWith('*.') ? host.slice(1) : host
    const matchHost = !name.startsWith('.')
    if (matchHost) name = `.${name}`
    entries.push({ kind: 'domain', raw, suffix: asciiName(name), port, matchHost })
  }
  return { variable, entries }
}

/**
 * The NO_PROXY entry that sends `host:port` direct (Go's useProxy, negated), or undefined.
 * `host` is lower case, without brackets.
 */
export function noProxyMatch(list: NoProxyList, host: string, port: string): NoProxyEntry | undefined {
  const ip = ipBytes(host)
  for (const e of list.entries) {
    switch (e.kind) {
      case 'all':
        return e
      case 'cidr':
        if (ip !== undefined && inNetwork(ip, e.network, e.bits)) return e
        break
      case 'ip':
        if (ip !== undefined && ip.length === e.ip.length && ip.every((b, i) => b === e.ip[i])) {
          if (e.port === '' || e.port === port) return e
        }
        break
      case 'domain':
        // A name entry never matches an IP address.
        if (ip === undefined && (host.endsWith(e.suffix) || (e.matchHost && host === e.suffix.slice(1)))) {
          if (e.port === '' || e.port === port) return e
        }
        break
    }
  }
  return undefined
}
