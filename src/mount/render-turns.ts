/**
 * The node's CPU for rendering, shared in turns between namespaces as the node budget
 * (budget.ts) shares its bytes: a Mount's render does its first turn's worth of work at once (the
 * usual Mount needs no more), and every further turn waits for its namespace's next one. Each
 * namespace gets one such turn per event-loop iteration, handed out in the check phase, after the
 * iteration's I/O: however many heavy Mounts one namespace has in flight, they queue behind each
 * other, while every other namespace's Mounts, health probes and gRPC calls keep their turns.
 *
 * One instance, built by the composition root. Its state is one entry per namespace with a render
 * waiting, dropped when its queue is empty: nothing grows with what a tenant sends.
 */
import { performance } from 'node:perf_hooks'
import { ProviderError } from '../errors.js'
import type { RenderPace } from '../render/render.js'
import type { Deadline } from '../util/deadline.js'

/**
 * The share of the node's CPU one namespace's renders may take while they wait for turns: after a
 * turn that kept the event loop busy for d ms, the namespace's next turn comes d ms later at the
 * earliest, so everything else gets at least as much time as the namespace's heavy renders.
 */
export const MAX_TENANT_RENDER_SHARE = 1 / 2

interface TenantQueue {
  waiting: Array<() => void>
  /** The namespace's next turn comes no earlier than this (its share, see MAX_TENANT_RENDER_SHARE). */
  restUntil: number
}

export class RenderTurns {
  private readonly queues = new Map<string, TenantQueue>()
  private readonly now: () => number

  /** `now`: a millisecond clock (performance.now unless a test injects one). */
  constructor(now: () => number = () => performance.now()) {
    this.now = now
  }

  /** Namespaces with a render waiting for its turn. */
  get waitingNamespaces(): number {
    return this.queues.size
  }

  /**
   * Resolves at `tenant`'s next turn: in a later check phase, after the renders of the namespace
   * queued before, and no earlier than the namespace's share allows after its last turn, which
   * kept the event loop busy for `busyMs`.
   */
  next(tenant: string, busyMs = 0): Promise<void> {
    return new Promise((resolve) => {
      const rest = this.now() + busyMs * (1 / MAX_TENANT_RENDER_SHARE - 1)
      const queue = this.queues.get(tenant)
      if (queue) {
        queue.waiting.push(resolve)
        queue.restUntil = Math.max(queue.restUntil, rest)
        return
      }
      this.queues.set(tenant, { waiting: [resolve], restUntil: rest })
      this.handOut(tenant)
    })
  }

  /** One waiter of `tenant` per check phase, once its rest is over; the waiter's synchronous turn runs before the next callback. */
  private handOut(tenant: string): void {
    setImmediate(() => {
      const queue = this.queues.get(tenant)
      if (queue === undefined) return
      const wait = queue.restUntil - this.now()
      if (wait > 0) {
        setTimeout(() => this.handOut(tenant), Math.ceil(wait))
        return
      }
      const waiter = queue.waiting.shift()
      if (waiter === undefined) {
        this.queues.delete(tenant)
        return
      }
      waiter()
      if (queue.waiting.length > 0) this.handOut(tenant)
      else this.queues.delete(tenant)
    })
  }
}

/**
 * The pace of one Mount's render (render.ts's RenderPace): it stops at the Mount's deadline or when
 * the driver cancels the call, naming the object it would have rendered next, and takes its turns
 * from `turns` as a Mount of `tenant`.
 */
export function renderPace(
  deadline: Deadline,
  tenant: string,
  turns: RenderTurns,
  now: () => number = () => performance.now(),
): RenderPace {
  // When the render's current turn began: what it kept the event loop busy for is its share's measure.
  let turnStarted = now()
  return {
    check(what) {
      if (deadline.cancelled) {
        throw new ProviderError(
          'CANCELLED',
          `the driver cancelled the Mount before ${what} was rendered; nothing more was rendered`,
        )
      }
      if (deadline.expired()) {
        throw new ProviderError(
          'DEADLINE_EXCEEDED',
          `the Mount ran out of time before ${what} was rendered (its rendering waits its turn among the Mounts of its namespace)`,
        )
      }
    },
    async turn() {
      const busy = now() - turnStarted
      await turns.next(tenant, busy)
      turnStarted = now()
    },
  }
}
