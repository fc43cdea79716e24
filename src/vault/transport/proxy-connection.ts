/**
 * The connection to Vault through an egress proxy (which proxy: proxy.ts), as the dispatcher a
 * transport's calls go to, with the connection guard (connection-guard.ts) in front of every
 * connection, so that the allow-list and the one-address rule hold before anything reaches the proxy.
 *
 * - https:// Vault: a CONNECT tunnel, undici's ProxyAgent: it asks the proxy for
 *   `CONNECT vault-host:port` (Proxy-Authorization when the proxy URL has credentials) and starts
 *   TLS with Vault over the tunnel with the transport's own material (CA, SNI / server name,
 *   client certificate, skip-verify). The TLS is end to end: the provider verifies Vault's
 *   certificate, and the proxy relays bytes it cannot read. undici sends the CONNECT; its answer
 *   is read here (TunnelClient), so that a refusal says which status the proxy gave.
 * - http:// Vault: as Go's transport does, no tunnel: requests go to the proxy in absolute form
 *   (`GET http://vault:8200/v1/... HTTP/1.1`), with Proxy-Authorization when the proxy URL has
 *   credentials (http-proxy.ts).
 *
 * Failures name the proxy (proxy-failures.ts).
 */
import { Pool, ProxyAgent, type Dispatcher, type buildConnector } from 'undici'
import type { GuardOptions } from './connection-guard.js'
import { guardedConnector } from './connection-guard.js'
import { forwardProxy } from './http-proxy.js'
import {
  MAX_CONNECT_ANSWER_BYTES,
  PROXY_CONNECT_TIMEOUT_MS,
  ProxyConnectionError,
  proxyAnswerFailure,
  tunnelFailure,
  type ProxyRoute,
} from './proxy-failures.js'
import type { TlsConnectOptions } from './secure-contexts.js'

export { ProxyConnectionError, codeAtProxy, type ProxyRoute } from './proxy-failures.js'

/**
 * ProxyAgent's client to the proxy. undici sends the CONNECT and reads the answer (ProxyAgent
 * would refuse any status but 200 with the status only in its message); here the answer is read
 * as a proxy failure that says which status the proxy gave. Nothing past the answer's empty line
 * may come before the client speaks (TLS): such bytes are refused, not passed on.
 */
class TunnelClient extends Pool {
  private readonly route: ProxyRoute

  constructor(route: ProxyRoute, origin: URL, options: Pool.Options) {
    // The proxy's answer to CONNECT gets PROXY_CONNECT_TIMEOUT_MS and MAX_CONNECT_ANSWER_BYTES.
    super(origin, { ...options, maxHeaderSize: MAX_CONNECT_ANSWER_BYTES, headersTimeout: PROXY_CONNECT_TIMEOUT_MS })
    this.route = route
  }

  // ProxyAgent calls the promise form only.
  override connect(options: Dispatcher.ConnectOptions): Promise<Dispatcher.ConnectData>
  override connect(
    options: Dispatcher.ConnectOptions,
    callback: (err: Error | null, data: Dispatcher.ConnectData) => void,
  ): void
  override connect(
    options: Dispatcher.ConnectOptions,
    callback?: (err: Error | null, data: Dispatcher.ConnectData) => void,
  ): Promise<Dispatcher.ConnectData> | void {
    const tunnel = this.tunnel(options)
    if (callback === undefined) return tunnel
    tunnel.then(
      (data) => callback(null, data),
      (err: Error) => callback(err, undefined as never),
    )
  }

  private async tunnel(options: Dispatcher.ConnectOptions): Promise<Dispatcher.ConnectData> {
    const target = String(options.path)
    let answer: Dispatcher.ConnectData
    try {
      answer = await super.connect(options)
    } catch (err) {
      throw tunnelFailure(this.route, err, target)
    }
    const { statusCode, socket } = answer
    // undici hands over the connection whatever the proxy answered to CONNECT.
    if (statusCode < 200 || statusCode > 299) {
      socket.destroy()
      throw proxyAnswerFailure(this.route, statusCode, target)
    }
    if (socket.readableLength > 0) {
      socket.destroy()
      throw new ProxyConnectionError(
        'other',
        'BAD_ANSWER',
        this.route,
        true,
        `the proxy sent data after its answer to CONNECT ${target}, before Vault's TLS handshake`,
      )
    }
    // Any 2xx opens the tunnel; ProxyAgent expects exactly 200.
    return { ...answer, statusCode: 200 }
  }
}

/** What a transport dispatches to for Vault at `address` through `route`; `tls`: Vault's, for https://. */
export function proxiedDispatcher(
  address: string,
  route: ProxyRoute,
  tls: TlsConnectOptions | undefined,
  guard: GuardOptions,
  pool: Pool.Options,
): Dispatcher {
  const vault = new URL(address)
  if (vault.protocol !== 'https:') return forwardProxy(address, route, guard, pool)
  const proxyOrigin = route.endpoint.shown
  return new ProxyAgent({
    uri: proxyOrigin,
    token: route.endpoint.authorizationHeader(),
    requestTls: tls as buildConnector.BuildOptions | undefined,
    proxyTls: { timeout: PROXY_CONNECT_TIMEOUT_MS },
    // The connection to the proxy, guarded: the Vault address must still be allowed.
    clientFactory: (origin, o) =>
      new TunnelClient(route, origin, {
        connect: guardedConnector(
          address,
          {},
          guard,
          proxyOrigin,
          (o as unknown as { connect: buildConnector.connector }).connect,
        ),
      }),
    // The pool of tunnels to Vault: every tunnel goes to Vault's own host and port, guarded.
    factory: (origin, o) =>
      new Pool(origin, {
        ...pool,
        connect: guardedConnector(
          address,
          {},
          guard,
          vault.origin,
          (o as unknown as { connect: buildConnector.connector }).connect,
        ),
      }),
  })
}
