/**
 * One node's answer closes its connection. Behind a Service every connection goes to one node: a
 * sealed node, or a standby that knows no active node to forward to, answers every request sent
 * over that connection the same way. Such an answer (call-errors.ts, nodeConditionOf) goes up as
 * it is, and its connection is closed instead of going back to the pool for the next call (a
 * standby's redirect closes its connection too: no-redirects.ts aborts it).
 *
 * undici has no way to close one connection of a pool once an answer has ended, but aborting a
 * call whose answer is still being read closes its connection. So the few answers that may be a
 * node's (429, 500, 503 with a short Content-Length) are held until their last byte, read, and
 * when they are a node's, passed up whole and then aborted. Without a Content-Length the answer
 * passes as it comes and its connection stays.
 */
import type { Dispatcher } from 'undici'
import { errorBodyOf, nodeConditionOf, vaultErrorsOf } from './call-errors.js'
import { ForwardingHandler } from './forwarding-handler.js'

/** Vault's node answers are a few dozen bytes; a longer answer is not held. */
export const MAX_NODE_ANSWER_BYTES = 4096
const NODE_ANSWER_STATUSES = new Set([429, 500, 503])

type Controller = Dispatcher.DispatchController
type Headers = Record<string, string | string[] | undefined>

function parsed(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown
  } catch {
    return undefined
  }
}

class NodeAnswerHandler extends ForwardingHandler {
  private status = 0
  private expected = 0
  /** The answer's bytes while it may be a node's. */
  private held: Buffer[] | undefined
  private size = 0
  /** Passed up whole and its connection aborted: what undici says next is not passed on. */
  private closed = false

  override onResponseStart(controller: Controller, status: number, headers: Headers, message?: string): void {
    const length = Number(headers['content-length'])
    if (NODE_ANSWER_STATUSES.has(status) && Number.isInteger(length) && length > 0 && length <= MAX_NODE_ANSWER_BYTES) {
      this.status = status
      this.expected = length
      this.held = []
    }
    super.onResponseStart(controller, status, headers, message)
  }

  override onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.closed) return
    if (this.held === undefined) return super.onResponseData(controller, chunk)
    this.held.push(chunk)
    this.size += chunk.length
    if (this.size < this.expected) return
    const body = Buffer.concat(this.held)
    this.held = undefined
    super.onResponseData(controller, body)
    const json = parsed(body)
    if (nodeConditionOf(this.status, vaultErrorsOf(json), errorBodyOf(json)) === undefined) return
    this.closed = true
    super.onResponseEnd(controller, {})
    controller.abort(new Error("one node's answer: its connection is closed"))
  }

  override onResponseEnd(controller: Controller, trailers: Headers): void {
    if (this.closed) return
    // Shorter than its Content-Length said: what came goes up (undici reports the mismatch itself).
    if (this.held !== undefined && this.held.length > 0) super.onResponseData(controller, Buffer.concat(this.held))
    this.held = undefined
    super.onResponseEnd(controller, trailers)
  }

  override onResponseError(controller: Controller, err: Error): void {
    if (!this.closed) super.onResponseError(controller, err)
  }
}

export const closeNodeAnswers: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) =>
  dispatch(opts, new NodeAnswerHandler(handler))
