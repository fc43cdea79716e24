/**
 * Which egress proxy, if any, a Vault address is reached through: read once
 * from the environment at start (readProxySettings, called by the
 * composition root and the CLI), decided per address (proxyFor). Pure: the
 * connection through a proxy is proxy-connection.ts.
 *
 * The rules are the references' (docs/configuration.md, "Egress proxy", says
 * where each comes from in their sources):
 *
 * 1. A unix:// address (a Vault Agent socket) never uses a proxy.
 * 2. The Vault API's own variable, when set, is used for every http:// and
 *    https:// address, loopback included, and NO_PROXY does not apply
 *    (openbao/api and hashicorp/vault/api, Config.ReadEnvironment: the
 *    transport's Proxy becomes http.ProxyURL of it). BAO_PROXY_ADDR wins over
 *    BAO_HTTP_PROXY; each BAO_ name, when present at all (even empty), hides
 *    its VAULT_ twin (VAULT_PROXY_ADDR, VAULT_HTTP_PROXY), as OpenBao's
 *    ReadBaoVariable does; HashiCorp's module reads the VAULT_ names only.
 * 3. Otherwise Go's net/http.ProxyFromEnvironment (the vendored
 *    golang.org/x/net/http/httpproxy, FromEnvironment and ProxyFunc):
 *    HTTPS_PROXY for https://, HTTP_PROXY for http:// (each name in upper
 *    case first, the lower-case one when that is empty), never for
 *    `localhost` or a loopback IP, not for a host NO_PROXY matches, and
 *    HTTP_PROXY refused while REQUEST_METHOD is set (the CGI rule).
 *
 * A proxy URL may carry user:password (sent as Proxy-Authorization: Basic).
 * ProxyEndpoint keeps them in a private field: every text, log line and
 * JSON form of an endpoint is scheme://host:port only.
 */
import { isIP } from 'node:net'
import { domainToASCII } from 'node:url'
import { inspect } from 'node:util'

/** Thrown by readProxySettings: a proxy variable the provider cannot use. The message never holds the value. */
export class ProxyConfigError extends Error {
  override readonly name = 'ProxyConfigError'
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 }

/** A proxy to connect to. Its credentials are in a private field: no text or JSON form of it shows them. */
export class ProxyEndpoint {
  readonly protocol: 'http:' | 'https:'
  /** Without brackets for IPv6. */
  readonly hostname: string
  readonly port: number
  /** scheme://host:port: the only form any message shows. */
  readonly shown: string
  readonly #authorization: string | undefined

  constructor(protocol: 'http:' | 'https:', hostname: string, port: number, authorization?: string) {
    this.protocol = protocol
    this.hostname = hostname
    this.port = port
    this.shown = `${protocol}//${hostPort(hostname, port)}`
    this.#authorization = authorization
  }

  /** `Basic …` when the URL carried user:password, for the Proxy-Authorization header only. */
  authorizationHeader(): string | undefined {
    return this.#authorization
  }

  get hasCredentials(): boolean {
    return this.#authorization !== undefined
  }

  toString(): string {
    return this.shown
  }

  toJSON(): string {
    return this.shown
  }

  [inspect.custom](): string {
    return `ProxyEndpoint(${this.shown})`
  }
}

/** A proxy and the variable it came from. */
export interface ProxyVariable {
  /** The environment variable's name, as people set it (e.g. `HTTPS_PROXY`, `https_proxy`, `VAULT_PROXY_ADDR`). */
  variable: string
  endpoint: ProxyEndpoint
}

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

/** The proxy environment of the process, read once at start. */
export interface ProxySettings {
  /** BAO_PROXY_ADDR, BAO_HTTP_PROXY, VAULT_PROXY_ADDR or VAULT_HTTP_PROXY: every http(s) address, no NO_PROXY. */
  vaultApi?: ProxyVariable
  /** HTTPS_PROXY or https_proxy: https:// addresses. */
  https?: ProxyVariable
  /** HTTP_PROXY or http_proxy: http:// addresses. */
  http?: ProxyVariable
  noProxy: NoProxyList
  /** REQUEST_METHOD is set: HTTP_PROXY is refused (Go's CGI rule). */
  cgi: boolean
}

export const NO_PROXY_SETTINGS: ProxySettings = { noProxy: { variable: undefined, entries: [] }, cgi: false }

/** How one Vault address is reached. `reason` is for people (doctor, logs): never credentials. */
export type ProxyDecision =
  | { kind: 'direct'; reason: string }
  | { kind: 'proxy'; endpoint: ProxyEndpoint; variable: string; reason: string }
  /** Go's CGI rule: the request fails rather than go direct or through a proxy a client may have set. */
  | { kind: 'refused'; reason: string }

type Env = Readonly<Record<string, string | undefined>>

/** host:port with brackets around an IPv6 host. */
function hostPort(hostname: string, port: number | string): string {
  return `${hostname.includes(':') ? `[${hostname}]` : hostname}:${port}`
}

/** Go's getEnvAny: the first of `names` with a non-empty value. */
function firstSet(env: Env, names: readonly string[]): { variable: string; value: string } | undefined {
  for (const variable of names) {
    const value = env[variable]
    if (value !== undefined && value !== '') return { variable, value }
  }
  return undefined
}

/** OpenBao's ReadBaoVariable: the BAO_ name when present at all (even empty), else its VAULT_ twin. */
function baoOrVault(env: Env, suffix: string): { variable: string; value: string } {
  const bao = `BAO_${suffix}`
  const present = env[bao]
  if (present !== undefined) return { variable: bao, value: present }
  const vault = `VAULT_${suffix}`
  return { variable: vault, value: env[vault] ?? '' }
}

/**
 * A proxy variable's value as an endpoint. Like Go's httpproxy parseProxy, a value
 * without a scheme (`proxy.corp:3128`) is taken as http://. Only http:// and https://
 * proxies are supported. Errors name the variable, never its value (it may hold a password).
 */
export function parseProxyUrl(variable: string, value: string): ProxyEndpoint {
  const parse = (text: string): URL | undefined => {
    try {
      return new URL(text)
    } catch {
      return undefined
    }
  }
  let url = parse(value)
  // Like Go: `host:port` (which a URL parser reads as a scheme and a path) is an http:// proxy.
  if ((url === undefined || url.host === '') && !value.includes('://')) url = parse(`http://${value}`) ?? url
  if (url === undefined || url.hostname === '') {
    throw new ProxyConfigError(
      `${variable} is not a proxy URL: expected http://host:port or https://host:port (user:password@ may come before the host)`,
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ProxyConfigError(
      `${variable} names a ${url.protocol}// proxy; the provider reaches Vault through http:// and https:// proxies only ` +
        '(HTTP CONNECT): set an http:// or https:// proxy, or unset the variable',
    )
  }
  const hostname = url.hostname.replace(/^\[|\]$/g, '')
  const port = url.port === '' ? DEFAULT_PORTS[url.protocol]! : Number(url.port)
  let authorization: string | undefined
  if (url.username !== '' || url.password !== '') {
    let user: string
    let password: string
    try {
      user = decodeURIComponent(url.username)
      password = decodeURIComponent(url.password)
    } catch {
      throw new ProxyConfigError(
        `${variable}: the user or password in the proxy URL is not valid percent-encoding (write @ as %40, : as %3A)`,
      )
    }
    authorization = `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`
  }
  return new ProxyEndpoint(url.protocol, hostname, port, authorization)
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

function isLoopback(ip: Uint8Array): boolean {
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
function asciiName(name: string): string {
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

/**
 * Reads the proxy variables (see the module comment for which and in what order).
 * Throws ProxyConfigError naming a variable whose value is not a usable proxy URL.
 */
export function readProxySettings(env: Env): ProxySettings {
  const addr = baoOrVault(env, 'PROXY_ADDR')
  const httpProxy = baoOrVault(env, 'HTTP_PROXY')
  const vaultApi = addr.value !== '' ? addr : httpProxy.value !== '' ? httpProxy : undefined
  const https = firstSet(env, ['HTTPS_PROXY', 'https_proxy'])
  const http = firstSet(env, ['HTTP_PROXY', 'http_proxy'])
  const noProxy = firstSet(env, ['NO_PROXY', 'no_proxy'])
  const settings: ProxySettings = {
    noProxy: noProxy ? parseNoProxy(noProxy.value, noProxy.variable) : { variable: undefined, entries: [] },
    cgi: (env.REQUEST_METHOD ?? '') !== '',
  }
  if (vaultApi)
    settings.vaultApi = { variable: vaultApi.variable, endpoint: parseProxyUrl(vaultApi.variable, vaultApi.value) }
  if (https) settings.https = { variable: https.variable, endpoint: parseProxyUrl(https.variable, https.value) }
  if (http) settings.http = { variable: http.variable, endpoint: parseProxyUrl(http.variable, http.value) }
  return settings
}

/** True when some proxy variable is set (the start-up log line, doctor). */
export function anyProxy(s: ProxySettings): boolean {
  return s.vaultApi !== undefined || s.https !== undefined || s.http !== undefined
}

/** The settings for a log line: each proxy as scheme://host:port with its variable, NO_PROXY's entries. */
export function describeProxySettings(s: ProxySettings): Record<string, string> {
  const out: Record<string, string> = {}
  const one = (p: ProxyVariable): string =>
    `${p.endpoint.shown} (${p.variable}${p.endpoint.hasCredentials ? ', with credentials' : ''})`
  if (s.vaultApi) out.vaultApi = one(s.vaultApi)
  if (s.https) out.https = one(s.https)
  if (s.http) out.http = one(s.http)
  if (s.noProxy.variable !== undefined)
    out.noProxy = `${s.noProxy.entries.map((e) => e.raw).join(',')} (${s.noProxy.variable})`
  return out
}

/** How `address` (a normalised Vault address: https://, http:// or unix://) is reached with `settings`. */
export function proxyFor(address: string, settings: ProxySettings | undefined): ProxyDecision {
  if (address.startsWith('unix://')) return { kind: 'direct', reason: 'a unix socket is never reached through a proxy' }
  const s = settings ?? NO_PROXY_SETTINGS
  let url: URL
  try {
    url = new URL(address)
  } catch {
    return { kind: 'direct', reason: 'not a URL' }
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { kind: 'direct', reason: `${url.protocol}// addresses are never reached through a proxy` }
  }
  if (s.vaultApi) {
    return {
      kind: 'proxy',
      endpoint: s.vaultApi.endpoint,
      variable: s.vaultApi.variable,
      reason: `${s.vaultApi.variable} is set: the Vault API's own proxy variable applies to every address (NO_PROXY does not)`,
    }
  }
  const https = url.protocol === 'https:'
  const chosen = https ? s.https : s.http
  if (!chosen) {
    return {
      kind: 'direct',
      reason: https ? 'no HTTPS_PROXY (or https_proxy) is set' : 'no HTTP_PROXY (or http_proxy) is set',
    }
  }
  if (!https && s.cgi) {
    return {
      kind: 'refused',
      reason:
        `${chosen.variable} is not used while REQUEST_METHOD is set: a CGI process may have it from a request header ` +
        "(Go's rule, golang.org/s/cgihttpproxy); unset REQUEST_METHOD in the provider's environment",
    }
  }
  const host = asciiName(url.hostname.replace(/^\[|\]$/g, ''))
  const port = url.port === '' ? String(DEFAULT_PORTS[url.protocol]) : url.port
  if (host === 'localhost') return { kind: 'direct', reason: 'localhost is never reached through a proxy' }
  const ip = ipBytes(host)
  if (ip !== undefined && isLoopback(ip)) {
    return { kind: 'direct', reason: 'a loopback address is never reached through a proxy' }
  }
  const match = noProxyMatch(s.noProxy, host, port)
  if (match) {
    return {
      kind: 'direct',
      reason: `${s.noProxy.variable ?? 'NO_PROXY'} entry "${match.raw}" matches ${hostPort(host, port)}`,
    }
  }
  return {
    kind: 'proxy',
    endpoint: chosen.endpoint,
    variable: chosen.variable,
    reason: `${chosen.variable} is set${s.noProxy.variable ? ` and no ${s.noProxy.variable} entry matches ${hostPort(host, port)}` : ''}`,
  }
}

/** One line for people: where `address` goes and why. */
export function describeDecision(address: string, d: ProxyDecision): string {
  switch (d.kind) {
    case 'direct':
      return `${address} is reached directly: ${d.reason}`
    case 'proxy':
      return `${address} is reached through the proxy ${d.endpoint.shown}${d.endpoint.hasCredentials ? ' (with credentials)' : ''}: ${d.reason}`
    case 'refused':
      return `${address} is not reached: ${d.reason}`
  }
}
