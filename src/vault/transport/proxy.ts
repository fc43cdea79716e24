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
import { DEFAULT_PORTS, ProxyEndpoint, hostPort, parseProxyUrl } from './proxy-endpoint.js'
import { asciiName, ipBytes, isLoopback, noProxyMatch, parseNoProxy, type NoProxyList } from './no-proxy.js'

export { ProxyConfigError, ProxyEndpoint, parseProxyUrl } from './proxy-endpoint.js'
export { ipBytes, noProxyMatch, parseNoProxy, type NoProxyEntry, type NoProxyList } from './no-proxy.js'

/** A proxy and the variable it came from. */
export interface ProxyVariable {
  /** The environment variable's name, as people set it (e.g. `HTTPS_PROXY`, `https_proxy`, `VAULT_PROXY_ADDR`). */
  variable: string
  endpoint: ProxyEndpoint
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

/** No proxy variable set: every address is reached directly. */
export const NO_PROXY_SETTINGS: ProxySettings = Object.freeze({
  noProxy: Object.freeze({ variable: undefined, entries: [] }),
  cgi: false,
})

/** How one Vault address is reached. `reason` is for people (doctor, logs): never credentials. */
export type ProxyDecision =
  | { kind: 'direct'; reason: string }
  | { kind: 'proxy'; endpoint: ProxyEndpoint; variable: string; reason: string }
  /** Go's CGI rule: the request fails rather than go direct or through a proxy a client may have set. */
  | { kind: 'refused'; reason: string }

type Env = Readonly<Record<string, string | undefined>>

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
export function proxyFor(address: string, s: ProxySettings): ProxyDecision {
  if (address.startsWith('unix://')) return { kind: 'direct', reason: 'a unix socket is never reached through a proxy' }
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
