/**
 * A call may ask for a connection of its own: a retry after one node's answer (sealed, no active
 * node: resilience/retry.ts), and each of the breaker's health probes. Behind a Service each new
 * connection may reach another node, where a pooled connection would reach the same one again. The
 * call goes through every rule of the transport above this one (its tenant's slots, the deadline,
 * the caps) to a dispatcher of one connection made for it, opened by the transport's own factory
 * (the connection guard, the egress proxy, TLS), and closed when the call ends.
 */
import type { Dispatcher } from 'undici'
import { ForwardingHandler } from './forwarding-handler.js'

export interface FreshConnectionOption {
  /** The call goes over a new connection, closed after it. */
  freshConnection?: boolean
}

type Controller = Dispatcher.DispatchController

/** Passes everything on, then closes the call's own dispatcher once the call has ended either way. */
class ClosingHandler extends ForwardingHandler {
  private readonly own: Dispatcher

  constructor(next: Dispatcher.DispatchHandler, own: Dispatcher) {
    super(next)
    this.own = own
  }

  override onResponseEnd(controller: Controller, trailers: Record<string, string | string[] | undefined>): void {
    super.onResponseEnd(controller, trailers)
    // Graceful: the answer is complete, the connection goes once undici has finished with it.
    this.own.close().catch(() => undefined)
  }

  override onResponseError(controller: Controller, err: Error): void {
    super.onResponseError(controller, err)
    this.own.destroy().catch(() => undefined)
  }
}

/** The interceptor nearest the pool: `open` makes a dispatcher of one connection to the transport's Vault. */
export function freshConnections(open: () => Dispatcher): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => {
    if ((opts as Dispatcher.DispatchOptions & FreshConnectionOption).freshConnection !== true) {
      return dispatch(opts, handler)
    }
    const own = open()
    return own.dispatch(opts, new ClosingHandler(handler, own))
  }
}
