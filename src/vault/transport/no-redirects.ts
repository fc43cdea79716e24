/**
 * Redirects are never followed here: a 3xx answer fails the call (aborting it closes its
 * connection) and nothing is sent to the Location. What the failure says depends on the redirect:
 * - a 307 or 308 to the request's own path and query in the same scheme: what a cluster's standby
 *   answers to send a client to the active node (during an election, to the old leader's
 *   address). VaultRedirect: its caller may follow it once (registry.ts, callThrough), else a 307
 *   is one node's answer that another connection may not get (resilience/retry.ts);
 * - anything else (301, 302, 303, another path, another scheme): not a standby but a web server or
 *   load balancer at the address: VAULT_REDIRECT_REFUSED naming the Location's origin and what
 *   that suggests. The connection guard (connection-guard.ts) would refuse a connection there anyway.
 */
import type { Dispatcher } from 'undici'
import { ProviderError, q } from '../../errors.js'
import { VaultRedirect } from './call-errors.js'
import { ForwardingHandler } from './forwarding-handler.js'

const MAX_ORIGIN_CHARS = 200
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])

function defaultPort(protocol: string): string {
  return protocol === 'https:' ? '443' : protocol === 'http:' ? '80' : ''
}

/** scheme://host:port of a URL, never its credentials, path or query. */
function originOf(url: URL): string {
  const port = url.port || defaultPort(url.protocol)
  return `${url.protocol}//${url.hostname}${port ? `:${port}` : ''}`
}

/** scheme://host:port of a Location header (relative ones resolve against the request), never its path or query. */
export function redirectOrigin(location: string | undefined, requestUrl: string): string {
  if (location === undefined || location === '') return 'no Location'
  try {
    return q(originOf(new URL(location, requestUrl)), MAX_ORIGIN_CHARS)
  } catch {
    return 'an unreadable Location'
  }
}

/** What a 3xx answer to `requestUrl` is: a standby's redirect (VaultRedirect) or a refusal saying why. */
export function redirectFailure(status: number, location: string | undefined, requestUrl: string): Error {
  const shown = redirectOrigin(location, requestUrl)
  const refused = (cause: string): ProviderError =>
    new ProviderError(
      'VAULT_REDIRECT_REFUSED',
      `Vault answered ${status} with a redirect to ${shown}; nothing was sent there: ${cause}`,
    )
  let to: URL
  const from = new URL(requestUrl)
  try {
    to = new URL(location ?? '', requestUrl)
  } catch {
    return refused("the address is probably not Vault's API")
  }
  if (location === undefined || location === '') return refused("the address is probably not Vault's API")
  if (to.protocol !== from.protocol) {
    return refused(`it asks for another scheme (${to.protocol.replace(':', '')}): the address is probably wrong`)
  }
  if ((status === 307 || status === 308) && to.pathname + to.search === from.pathname + from.search) {
    // The origin as addresses are compared (lower case, no default port): what the allow-list is asked about.
    return new VaultRedirect(status, to.origin, shown)
  }
  return refused(
    "Vault's standbys redirect with a 307 to the same path, so this is a web server or load balancer at the " +
      "address rather than Vault's API: the address is probably wrong",
  )
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
    controller.abort(redirectFailure(status, Array.isArray(location) ? location[0] : location, this.requestUrl))
  }
}

/** The interceptor for the transport of Vault `address` (relative Locations resolve against it). */
export function noRedirects(address: string): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => dispatch(opts, new NoRedirectHandler(handler, `${address}${opts.path}`))
}
