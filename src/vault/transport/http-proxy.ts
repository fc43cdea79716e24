/**
 * http:// Vault through an egress proxy, as Go's transport does it: no tunnel; the pool talks to
 * the proxy and each request names Vault in absolute form (`GET http://vault:8200/v1/... HTTP/1.1`),
 * with Proxy-Authorization when the proxy URL has credentials. The pool carries this Vault
 * address's requests only.
 */
import { Pool, buildConnector, type Dispatcher } from 'undici'
import { guardedConnector, type GuardOptions } from './connection-guard.js'
import { ForwardingHandler } from './forwarding-handler.js'
import {
  PROXY_CONNECT_TIMEOUT_MS,
  authority,
  proxyAnswerFailure,
  proxyLegFailure,
  type ProxyRoute,
} from './proxy-failures.js'

/**
 * An error answer that is not Vault's (Vault's errors are JSON) is the proxy's own (407, its
 * ACL's 403, 502/503 when it cannot reach Vault), and fails the call as a proxy failure instead
 * of reading as Vault's answer.
 */
class ProxyAnswerGuard extends ForwardingHandler {
  private readonly route: ProxyRoute
  private readonly target: string

  constructor(next: Dispatcher.DispatchHandler, route: ProxyRoute, target: string) {
    super(next)
    this.route = route
    this.target = target
  }

  override onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ): void {
    const type = headers['content-type']
    const json = (Array.isArray(type) ? type[0] : type)?.toLowerCase().startsWith('application/json') === true
    if (status === 407 || (status >= 400 && !json)) {
      controller.abort(proxyAnswerFailure(this.route, status, this.target))
      return
    }
    super.onResponseStart(controller, status, headers, message)
  }
}

/** The connection to the proxy itself: TCP, or TLS (system CAs, the proxy's name) for an https:// proxy. */
function proxyConnector(route: ProxyRoute): buildConnector.connector {
  const connect = buildConnector({ keepAlive: true, timeout: PROXY_CONNECT_TIMEOUT_MS })
  return (options, callback) =>
    connect(options, (err, socket) => {
      if (err || !socket) callback(proxyLegFailure(route, err), null)
      else callback(null, socket)
    })
}

/** The dispatcher for http:// Vault at `address` through `route`. */
export function forwardProxy(address: string, route: ProxyRoute, guard: GuardOptions, pool: Pool.Options): Dispatcher {
  const vault = new URL(address)
  const e = route.endpoint
  const proxyOrigin = `${e.protocol}//${authority(e.hostname, e.port)}`
  const connect = guardedConnector(address, {}, guard, proxyOrigin, proxyConnector(route))
  const host = authority(vault.hostname, vault.port || 80)
  const auth = e.authorizationHeader()
  const absoluteForm: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
    const headers: Record<string, string> = {
      ...((opts.headers ?? {}) as Record<string, string>),
      host,
      ...(auth ? { 'proxy-authorization': auth } : {}),
    }
    return dispatch(
      { ...opts, path: `${vault.origin}${opts.path}`, headers },
      new ProxyAnswerGuard(handler, route, host),
    )
  }
  return new Pool(proxyOrigin, { ...pool, connect }).compose(absoluteForm)
}
