/**
 * Redirects are never followed. A 3xx answer fails the call with VAULT_REDIRECT_REFUSED naming
 * only the target's origin; nothing is sent there (and the connection guard, connection-guard.ts,
 * would refuse a connection to it anyway). Vault standbys forward requests to the active node by
 * default, so a redirect means a set-up that must name the active node (or a load balancer) in
 * vaultAddress.
 */
import type { Dispatcher } from 'undici'
import { ProviderError, q } from '../../errors.js'
import { ForwardingHandler } from './forwarding-handler.js'

const MAX_ORIGIN_CHARS = 200
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])

/** scheme://host:port of a Location header (relative ones resolve against the request), never its path or query. */
export function redirectOrigin(location: string | undefined, requestUrl: string): string {
  if (location === undefined || location === '') return 'no Location'
  try {
    const url = new URL(location, requestUrl)
    const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '')
    return q(`${url.protocol}//${url.hostname}${port ? `:${port}` : ''}`, MAX_ORIGIN_CHARS)
  } catch {
    return 'an unreadable Location'
  }
}

class NoRedirectHandler extends ForwardingHandler {
  private readonly requestUrl: string

  constructor(next: Dispatcher.DispatchHandler, requestUrl: string) {
    super(next)
    this.requestUrl = requestUrl
  }

  override onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ): void {
    if (!REDIRECT_STATUSES.has(status)) return super.onResponseStart(controller, status, headers, message)
    const location = headers.location
    controller.abort(
      new ProviderError(
        'VAULT_REDIRECT_REFUSED',
        `Vault answered ${status} with a redirect to ${redirectOrigin(
          Array.isArray(location) ? location[0] : location,
          this.requestUrl,
        )}; the provider never follows redirects, so nothing was sent there: set vaultAddress (or -vault-addr) ` +
          'to the active Vault node or to a load balancer in front of the cluster',
      ),
    )
  }
}

/** The interceptor for the transport of Vault `address` (relative Locations resolve against it). */
export function noRedirects(address: string): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => dispatch(opts, new NoRedirectHandler(handler, `${address}${opts.path}`))
}
