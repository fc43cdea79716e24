/**
 * Tenant fairness on one Vault address: a namespace has at most MAX_CALLS_PER_TENANT calls in
 * flight on a transport (half its connections), so that its slow calls cannot hold every
 * connection of the address; its further calls wait for its own to end. A waiting call leaves
 * the queue when it ends early (call-deadline.ts), and its wait counts against its time limit.
 *
 * Waiting calls go earliest due first: a Mount's calls are due at its deadline, so Mounts are
 * served in the order they came, rather than each queuing its next read behind every other's,
 * which held every Mount's answers until the end of a rollout (bench/NOTES.md, "Storm peak RSS").
 */
import type { Dispatcher } from 'undici'
import { VaultConnectionError, isTimeout } from './call-errors.js'
import type { CallEndedOption, DeadlineOptions } from './call-deadline.js'
import { ForwardingHandler, endedController } from './forwarding-handler.js'

export const MAX_SOCKETS_PER_VAULT = 64
/** Calls one namespace may have in flight on one transport; the rest of its calls wait their turn. */
export const MAX_CALLS_PER_TENANT = MAX_SOCKETS_PER_VAULT / 2

export interface TenantOption {
  /** The namespace whose Mount makes the call; none: the call is not counted. */
  tenant?: string
  /** When the call is due (ms since the epoch): its Mount's deadline; none: its own time limit from now. */
  dueAt?: number
}

/** A call waiting for a slot of its namespace. */
interface Waiting {
  readonly dueAt: number
  readonly go: () => void
}

/** Where a call due at `dueAt` joins `queue` (ordered by due time): after every call due no later. */
function placeIn(queue: readonly Waiting[], dueAt: number): number {
  let low = 0
  let high = queue.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if (queue[mid]!.dueAt <= dueAt) low = mid + 1
    else high = mid
  }
  return low
}

type Controller = Dispatcher.DispatchController

/** Gives the call's slot back once, when its answer or failure comes up (or it ended early). */
class SlotHandler extends ForwardingHandler {
  private readonly release: () => void

  constructor(next: Dispatcher.DispatchHandler, release: () => void) {
    super(next)
    this.release = release
  }

  override onResponseEnd(controller: Controller, trailers: Record<string, unknown>): void {
    this.release()
    super.onResponseEnd(controller, trailers as never)
  }

  override onResponseError(controller: Controller, err: Error): void {
    this.release()
    super.onResponseError(controller, err)
  }
}

/** The interceptor, with the slots of one transport. */
export function tenantSlots(max = MAX_CALLS_PER_TENANT): Dispatcher.DispatcherComposeInterceptor {
  const slots = new Map<string, { active: number; waiting: Waiting[] }>()
  const give = (tenant: string): void => {
    const own = slots.get(tenant)
    if (own === undefined) return
    const next = own.waiting.shift()
    if (next !== undefined) return next.go()
    own.active -= 1
    if (own.active === 0) slots.delete(tenant)
  }
  return (dispatch) => (opts, handler) => {
    const { tenant, dueAt, timeoutMs, callEnded } = opts as Dispatcher.DispatchOptions &
      TenantOption &
      Partial<DeadlineOptions> &
      CallEndedOption
    if (tenant === undefined) return dispatch(opts, handler)
    // A call that ends early is failed up through its handler by the layer below (undici, once the
    // deadline's abort reaches it): SlotHandler gives the slot back then.
    const go = (): boolean => {
      let given = false
      const release = (): void => {
        if (given) return
        given = true
        give(tenant)
      }
      return dispatch(opts, new SlotHandler(handler, release))
    }
    let own = slots.get(tenant)
    if (own === undefined) {
      own = { active: 0, waiting: [] }
      slots.set(tenant, own)
    }
    if (own.active < max) {
      own.active += 1
      return go()
    }
    const queue = own.waiting
    const ended = callEnded?.signal
    const waiter: Waiting = {
      dueAt: dueAt ?? Date.now() + (timeoutMs ?? 0),
      go: () => {
        ended?.removeEventListener('abort', leave)
        go()
      },
    }
    const leave = (): void => {
      const at = queue.indexOf(waiter)
      if (at !== -1) queue.splice(at, 1)
      const reason = ended?.reason as Error
      const err = isTimeout(reason)
        ? new VaultConnectionError(
            'timeout',
            'ETIMEDOUT',
            `${reason.message} (this namespace's calls to the address were all in flight)`,
          )
        : reason
      handler.onResponseError?.(endedController(err), err)
    }
    ended?.addEventListener('abort', leave, { once: true })
    queue.splice(placeIn(queue, waiter.dueAt), 0, waiter)
    return true
  }
}
