/**
 * A proxy URL from the environment (proxy.ts reads which variable) as the endpoint to connect to.
 * A URL may carry user:password (sent as Proxy-Authorization: Basic); ProxyEndpoint keeps them in
 * a private field: every text, log line and JSON form of an endpoint is scheme://host:port only.
 */
import { inspect } from 'node:util'

/** Thrown by readProxySettings: a proxy variable the provider cannot use. The message never holds the value. */
export class ProxyConfigError extends Error {
  override readonly name = 'ProxyConfigError'
}

export const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 }

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

/** host:port with brackets around an IPv6 host. */
export function hostPort(hostname: string, port: number | string): string {
  return `${hostname.includes(':') ? `[${hostname}]` : hostname}:${port}`
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
