/**
 * Every call is reported to the observer (metrics, the CLI's timings) whatever its outcome: one
 * place for login, read, renewal, revocation and health. Instrumentation never fails a call.
 */
import type { Dispatcher } from 'undici'
import type { VaultObserver, VaultOperation } from '../../observability/vault-observer.js'
import { ForwardingHandler } from './forwarding-handler.js'

/** Where nobody listens (doctor, tests): every call is still reported, to nothing. */
export const NO_OBSERVER: VaultObserver = Object.freeze({ vaultCall: (): void => undefined })

export interface ObservedOption {
  /** What the observer is told the call was; the transport sets it for every call. */
  observed: { operation: VaultOperation; description: string }
}

type Controller = Dispatcher.DispatchController

class ObservedHandler extends ForwardingHandler {
  private readonly observer: VaultObserver
  private readonly observed: ObservedOption['observed']
  private readonly started = process.hrtime.bigint()
  private status = 0

  constructor(next: Dispatcher.DispatchHandler, observer: VaultObserver, observed: ObservedOption['observed']) {
    super(next)
    this.observer = observer
    this.observed = observed
  }

  private report(ok: boolean, status: number | undefined): void {
    try {
      this.observer.vaultCall({
        operation: this.observed.operation,
        ok,
        status,
        durationMs: Number(process.hrtime.bigint() - this.started) / 1e6,
        description: this.observed.description,
      })
    } catch {
      // Instrumentation never fails a call.
    }
  }

  override onResponseStart(
    controller: Controller,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ): void {
    if (status >= 200) this.status = status
    super.onResponseStart(controller, status, headers, message)
  }

  override onResponseEnd(controller: Controller, trailers: Record<string, unknown>): void {
    // Vault answers 200 or 204; any other status is a failed call, reported with its status.
    const ok = this.status === 200 || this.status === 204
    this.report(ok, ok ? undefined : this.status)
    super.onResponseEnd(controller, trailers as never)
  }

  override onResponseError(controller: Controller, err: Error): void {
    this.report(false, undefined)
    super.onResponseError(controller, err)
  }
}

export function observeCalls(observer: VaultObserver): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) =>
    dispatch(
      opts,
      new ObservedHandler(handler, observer, (opts as Dispatcher.DispatchOptions & ObservedOption).observed),
    )
}
