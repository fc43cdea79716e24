/**
 * What of an answer is read. A body larger than -max-vault-response-size (or the call's tighter
 * cap) is not read further: the call fails with VAULT_RESPONSE_TOO_LARGE as soon as the stream
 * passes the limit, or at once when Content-Length says so, and its connection is closed. An
 * error answer (4xx, 5xx) is read to MAX_ERROR_BODY_BYTES at most: only its status and a few
 * hundred characters of errors[] count, so past that its text is replaced by a note.
 */
import type { Dispatcher } from 'undici'
import { ProviderError } from '../../errors.js'
import { ForwardingHandler } from './forwarding-handler.js'

/**
 * An error answer is only ever shown as a few hundred characters of its
 * `errors[]`: past this many bytes it is not read (nor parsed) further, so a
 * hostile Vault's megabytes of error text cost no more than a short one.
 */
export const MAX_ERROR_BODY_BYTES = 64 * 1024
/**
 * Login, renewal and revocation answers carry a token and its policies, a
 * few KiB at most: a larger one is a hostile or broken server, and reading
 * megabytes of it for every retried login would cost every other pod.
 */
export const MAX_TOKEN_ANSWER_BYTES = 64 * 1024

export interface BodyCapOption {
  /** A tighter cap than -max-vault-response-size (token answers: MAX_TOKEN_ANSWER_BYTES). */
  maxResponseBytes?: number
}

type Controller = Dispatcher.DispatchController

class BodyCapHandler extends ForwardingHandler {
  private readonly max: number
  private readonly flagMax: number
  private isError = false
  /** An error answer's text, held until it ends (it may yet be replaced). */
  private readonly errorText: Buffer[] = []
  private size = 0
  /** The body is not read further (too large, or an error text cut short). */
  private cut = false
  /** An error text cut short was answered with a note: the connection's end is no failure. */
  private answered = false

  constructor(next: Dispatcher.DispatchHandler, max: number, flagMax: number) {
    super(next)
    this.max = max
    this.flagMax = flagMax
  }

  private tooLarge(): ProviderError {
    return new ProviderError(
      'VAULT_RESPONSE_TOO_LARGE',
      this.max === this.flagMax
        ? `Vault's answer is larger than ${this.max} bytes (-max-vault-response-size); it was not read further`
        : `Vault's answer is larger than ${this.max} bytes, the most a token answer (login, renewal) may be ` +
            `(secrets are limited by -max-vault-response-size); it was not read further`,
    )
  }

  override onResponseStart(
    controller: Controller,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ): void {
    if (status >= 200) {
      this.isError = status >= 400
      const declared = Number(headers['content-length'])
      if (!this.isError && Number.isFinite(declared) && declared > this.max) {
        this.cut = true
        controller.abort(this.tooLarge())
        return
      }
    }
    super.onResponseStart(controller, status, headers, message)
  }

  override onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.cut) return
    this.size += chunk.length
    if (this.isError && this.size > MAX_ERROR_BODY_BYTES) {
      // The status is what classifies the failure; the text is not worth reading on.
      this.cut = true
      this.answered = true
      const note = `(Vault's error text is longer than ${MAX_ERROR_BODY_BYTES} bytes and was not read)`
      super.onResponseData(controller, Buffer.from(JSON.stringify({ errors: [note] })))
      super.onResponseEnd(controller, {})
      controller.abort(new Error('error text not read further'))
      return
    }
    if (this.size > this.max) {
      this.cut = true
      controller.abort(this.tooLarge())
      return
    }
    if (this.isError) this.errorText.push(chunk)
    else super.onResponseData(controller, chunk)
  }

  override onResponseEnd(controller: Controller, trailers: Record<string, unknown>): void {
    if (this.cut) return
    if (this.errorText.length > 0) super.onResponseData(controller, Buffer.concat(this.errorText))
    super.onResponseEnd(controller, trailers as never)
  }

  override onResponseError(controller: Controller, err: Error): void {
    if (this.answered) return
    super.onResponseError(controller, err)
  }
}

/** The interceptor; `flagMax` is -max-vault-response-size. */
export function bodyCaps(flagMax: number): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => {
    const own = (opts as Dispatcher.DispatchOptions & BodyCapOption).maxResponseBytes
    const max = own !== undefined && own < flagMax ? own : flagMax
    return dispatch(opts, new BodyCapHandler(handler, max, flagMax))
  }
}
