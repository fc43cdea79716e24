/**
 * The connection to Vault through an egress proxy (which proxy: proxy.ts), as the dispatcher a
 * transport's calls go to, with the connection guard (connection-guard.ts) in front of every
 * connection, so that the allow-list and the one-address rule hold before anything reaches the proxy.
 *
 * - https:// Vault: a CONNECT tunnel, undici's ProxyAgent: it asks the proxy for
 *   `CONNECT vault-host:port` (Proxy-Authorization when the proxy URL has credentials) and starts
 *   TLS with Vault over the tunnel with the transport's own material (CA, SNI / server name,
 *   client certificate, skip-verify). The TLS is end to end: the provider verifies Vault's
 *   certificate, and the proxy relays bytes it cannot read. The proxy's answer is read here
 *   (TunnelPool), so that a refusal says which status the proxy gave.
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
  proxyCode,
  tunnelFailure,
  type ProxyRoute,
} from './proxy-failures.js'
import type { TlsConnectOptions } from './secure-contexts.js'

export { ProxyConnectionError, isProxyFailureCode, type ProxyRoute } from './proxy-failures.js'

/**
 * Asks the proxy (through `pool`, undici's HTTP/1.1 client and parser) for a tunnel; resolves
 * with the tunnel's socket on a 2xx answer. Nothing past the answer's empty line may come before
 * the client speaks (TLS): such bytes are refused, not passed on.
 */
function askForTunnel(
  pool: Pool,
  params: Dispatcher.ConnectOptions,
  route: ProxyRoute,
): Promise<Dispatcher.ConnectData> {
  const target = String(params.path)
  return new Promise((resolve, reject) => {
    let controller: Dispatcher.DispatchController | undefined
    let done = false
    const fail = (err: Error): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      reject(err)
      controller?.abort(err)
    }
    const timer = setTimeout(
      () =>
        fail(
          new ProxyConnectionError(
            'timeout',
            proxyCode(route, 'TIMEOUT'),
            route,
            true,
            `the proxy did not answer CONNECT ${target} within ${PROXY_CONNECT_TIMEOUT_MS / 1000} s`,
          ),
        ),
      PROXY_CONNECT_TIMEOUT_MS,
    )
    pool.dispatch(
      { origin: params.origin, path: target, method: 'CONNECT', headers: params.headers },
      {
        onRequestStart: (c) => {
          controller = c
          if (done) c.abort(new Error('tunnel not wanted any more'))
        },
        onRequestUpgrade: (_c, statusCode, headers, socket) => {
          if (done) return void socket.destroy()
          done = true
          clearTimeout(timer)
          // undici hands over the connection whatever the proxy answered to CONNECT.
          if (statusCode < 200 || statusCode > 299) {
            socket.destroy()
            reject(proxyAnswerFailure(route, statusCode, target))
            return
          }
          if (socket.readableLength > 0) {
            socket.destroy()
            reject(
              new ProxyConnectionError(
                'other',
                proxyCode(route, 'BAD_ANSWER'),
                route,
                true,
                `the proxy sent data after its answer to CONNECT ${target}, before Vault's TLS handshake`,
              ),
            )
            return
          }
          // Any 2xx opens the tunnel; ProxyAgent expects exactly 200.
          resolve({ statusCode: 200, headers, socket } as never)
        },
        onResponseError: (_c, err) => fail(tunnelFailure(route, err, target)),
      },
    )
  })
}

/** ProxyAgent's client to the proxy: each tunnel it asks for goes through askForTunnel. */
class TunnelPool extends Pool {
  private readonly route: ProxyRoute

  constructor(route: ProxyRoute, origin: URL, options: Pool.Options) {
    super(origin, { ...options, maxHeaderSize: MAX_CONNECT_ANSWER_BYTES })
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
    const tunnel = askForTunnel(this, options, this.route)
    if (callback === undefined) return tunnel
    tunnel.then(
      (data) => callback(null, data),
      (err: Error) => callback(err, undefined as never),
    )
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
      new TunnelPool(route, origin, {
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
