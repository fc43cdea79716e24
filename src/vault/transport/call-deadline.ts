/**
 * The call's one time limit and the caller's signal: connect, a wait for a tenant slot, headers
 * and body all count against `timeoutMs`, and when the caller gives up the call ends at once
 * (VaultCallAborted). Either way the failure goes up once, at that moment, whatever the layers
 * below are doing; the request below is aborted (a request not yet sent is not sent) and what it
 * reports afterwards is not passed on.
 */
import type { Dispatcher } from 'undici'
import { VaultCallAborted, VaultConnectionError } from './call-errors.js'
import { ForwardingHandler, endedController } from './forwarding-handler.js'

export interface DeadlineOptions {
  /** The whole call, connection to last byte. */
  timeoutMs: number
  /** Aborted when the caller gave up: the call ends at once with VaultCallAborted. */
  callerSignal?: AbortSignal
}

/**
 * Passed down: `signal` is aborted, with the call's failure as its reason, when the call ends early
 * (tenant-slots.ts: a call waiting for a slot leaves the queue). Made at its first read: most calls
 * never wait, and an AbortController per Vault call costs CPU on every Mount (bench/NOTES.md).
 */
export interface CallEndedOption {
  callEnded?: { readonly signal: AbortSignal }
}

type Controller = Dispatcher.DispatchController

class DeadlineHandler extends ForwardingHandler {
  private done = false
  private controller: Controller | undefined
  private ended: AbortController | undefined
  private failure: Error | undefined
  private readonly timer: NodeJS.Timeout
  private readonly callerSignal: AbortSignal | undefined
  private readonly onCallerGone = (): void => this.end(new VaultCallAborted())

  constructor(next: Dispatcher.DispatchHandler, opts: DeadlineOptions) {
    super(next)
    this.callerSignal = opts.callerSignal
    this.timer = setTimeout(
      () => this.end(new VaultConnectionError('timeout', 'ETIMEDOUT', `no answer within ${opts.timeoutMs} ms`)),
      Math.max(1, opts.timeoutMs),
    )
    this.callerSignal?.addEventListener('abort', this.onCallerGone)
  }

  /** Aborted when the call ends early (with the failure as its reason), if anyone below asked for it. */
  get signal(): AbortSignal {
    if (this.ended === undefined) {
      this.ended = new AbortController()
      if (this.failure !== undefined) this.ended.abort(this.failure)
    }
    return this.ended.signal
  }

  private end(err: Error): void {
    if (this.done) return
    this.failure = err
    // A call still waiting below says so now, in its own words (it calls onResponseError).
    this.ended?.abort(err)
    if (this.settle()) super.onResponseError(this.controller ?? endedController(err), err)
    this.controller?.abort(err)
  }

  private settle(): boolean {
    if (this.done) return false
    this.done = true
    clearTimeout(this.timer)
    this.callerSignal?.removeEventListener('abort', this.onCallerGone)
    return true
  }

  override onRequestStart(controller: Controller, context: unknown): void {
    this.controller = controller
    // Ended before undici got to it: it is not sent.
    if (this.done) controller.abort(this.failure ?? new VaultCallAborted())
    else super.onRequestStart(controller, context)
  }

  override onResponseStart(c: Controller, status: number, headers: Record<string, unknown>, message?: string): void {
    if (!this.done) super.onResponseStart(c, status, headers as never, message)
  }

  override onResponseData(controller: Controller, chunk: Buffer): void {
    if (!this.done) super.onResponseData(controller, chunk)
  }

  override onResponseEnd(controller: Controller, trailers: Record<string, unknown>): void {
    if (this.settle()) super.onResponseEnd(controller, trailers as never)
  }

  override onResponseError(controller: Controller, err: Error): void {
    if (this.settle()) super.onResponseError(controller, err)
  }
}

export const callDeadline: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
  const o = opts as Dispatcher.DispatchOptions & DeadlineOptions
  if (o.callerSignal?.aborted === true) {
    const err = new VaultCallAborted()
    handler.onResponseError?.(endedController(err), err)
    return true
  }
  const deadline = new DeadlineHandler(handler, o)
  return dispatch({ ...opts, callEnded: deadline } as Dispatcher.DispatchOptions, deadline)
}
