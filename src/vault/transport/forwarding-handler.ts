/**
 * What the interceptors of the Vault HTTP path (transport.ts composes them) are built from: a
 * handler that passes every callback of undici's dispatch API on, so that each interceptor
 * overrides only the callbacks its one rule reads.
 */
import type { Duplex } from 'node:stream'
import type { Dispatcher } from 'undici'

type Controller = Dispatcher.DispatchController
type Headers = Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>[2]

export class ForwardingHandler implements Dispatcher.DispatchHandler {
  protected readonly next: Dispatcher.DispatchHandler

  constructor(next: Dispatcher.DispatchHandler) {
    this.next = next
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.next.onRequestStart?.(controller, context)
  }

  onRequestUpgrade(controller: Controller, statusCode: number, headers: Headers, socket: Duplex): void {
    this.next.onRequestUpgrade?.(controller, statusCode, headers, socket)
  }

  onResponseStart(controller: Controller, statusCode: number, headers: Headers, statusMessage?: string): void {
    this.next.onResponseStart?.(controller, statusCode, headers, statusMessage)
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    this.next.onResponseData?.(controller, chunk)
  }

  onResponseEnd(controller: Controller, trailers: Headers): void {
    this.next.onResponseEnd?.(controller, trailers)
  }

  onResponseError(controller: Controller, err: Error): void {
    this.next.onResponseError?.(controller, err)
  }
}

/** The controller handed up with the failure of a call that never got a connection (its deadline, a queue it left). */
export function endedController(reason: Error): Controller {
  return {
    aborted: true,
    paused: false,
    reason,
    abort: () => undefined,
    pause: () => undefined,
    resume: () => undefined,
  }
}
