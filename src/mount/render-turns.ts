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
import { ProviderError } from '../errors.js'
import type { RenderPace } from '../render/render.js'
import type { Deadline } from '../util/deadline.js'

export class RenderTurns {
  private readonly queues = new Map<string, Array<() => void>>()

  /** Namespaces with a render waiting for its turn. */
  get waitingNamespaces(): number {
    return this.queues.size
  }

  /** Resolves at `tenant`'s next turn: in a later check phase, after the renders of the namespace queued before. */
  next(tenant: string): Promise<void> {
    return new Promise((resolve) => {
      const queue = this.queues.get(tenant)
      if (queue) {
        queue.push(resolve)
        return
      }
      this.queues.set(tenant, [resolve])
      this.handOut(tenant)
    })
  }

  /** One waiter of `tenant` per check phase; the waiter's synchronous turn runs before the next callback. */
  private handOut(tenant: string): void {
    setImmediate(() => {
      const queue = this.queues.get(tenant)
      const waiter = queue?.shift()
      if (queue === undefined || waiter === undefined) return
      waiter()
      if (queue.length > 0) this.handOut(tenant)
      else this.queues.delete(tenant)
    })
  }
}

/**
 * The pace of one Mount's render (render.ts's RenderPace): it stops at the Mount's deadline or when
 * the driver cancels the call, naming the object it would have rendered next, and takes its turns
 * from `turns` as a Mount of `tenant` (without `turns`, it only yields to the event loop).
 */
export function renderPace(deadline: Deadline, tenant: string, turns: RenderTurns | undefined): RenderPace {
  return {
    check(what) {
      if (deadline.cancelled) {
        throw new ProviderError(
          'DEADLINE_EXCEEDED',
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
    turn: (_what) => (turns ? turns.next(tenant) : new Promise((resolve) => setImmediate(resolve))),
  }
}
