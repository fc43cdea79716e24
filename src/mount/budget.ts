/**
 * One budget for everything a Mount holds in memory: the Vault answers it
 * fetched and the files it rendered. Charged as each is produced, so the
 * object that crosses the limit fails the Mount at once, naming it; not after
 * everything is rendered (999 templates each under their own limit once took
 * the daemon past 1.5 GiB).
 *
 * Each Mount's charges also count against a node-wide budget shared by every
 * Mount in flight, returned when the Mount ends. A Mount that finds it spent
 * fails at once (the driver retries it) instead of waiting: one attacker is
 * stopped at its own -max-mount-bytes long before the node's budget, and
 * small Mounts keep fitting beside it. The Mounts of one namespace together
 * take at most half of the node's budget, so that one namespace's many pods
 * cannot spend what every other namespace's Mounts need.
 */
import { jsonSize } from '../util/json-size.js'
import { ProviderError } from '../errors.js'
import type { RenderBudget } from '../render/render.js'
import { RenderWork } from '../render/work.js'
import { formatBytes } from '../util/format-bytes.js'

export interface BudgetLimits {
  /** -max-mount-bytes */
  mountBytes: number
  /** -max-node-mount-bytes */
  nodeBytes: number
}

/** The share of the node's budget the Mounts in flight of one namespace may hold together. */
export const MAX_TENANT_SHARE = 1 / 2

/** The node-wide budget; one instance, built by the composition root. */
export class NodeBudget {
  readonly limits: BudgetLimits
  private used = 0
  private readonly usedBy = new Map<string, number>()

  constructor(limits: BudgetLimits) {
    this.limits = limits
  }

  /** Bytes charged by the Mounts in flight. */
  get bytesInUse(): number {
    return this.used
  }

  /** A budget for one Mount of a pod in `tenant` (its namespace); call release() when the Mount has answered. */
  open(tenant: string): MountBudget {
    return new MountBudget(this, tenant)
  }

  /** @internal Takes `bytes` from the node's budget for `tenant`, or says whose budget is spent. */
  reserve(bytes: number, tenant: string): 'ok' | 'node' | 'tenant' {
    if (this.used + bytes > this.limits.nodeBytes) return 'node'
    const mine = this.usedBy.get(tenant) ?? 0
    if (mine + bytes > this.limits.nodeBytes * MAX_TENANT_SHARE) return 'tenant'
    this.used += bytes
    this.usedBy.set(tenant, mine + bytes)
    return 'ok'
  }

  /** @internal */
  give(bytes: number, tenant: string): void {
    this.used = Math.max(0, this.used - bytes)
    const left = (this.usedBy.get(tenant) ?? 0) - bytes
    if (left > 0) this.usedBy.set(tenant, left)
    else this.usedBy.delete(tenant)
  }
}

export class MountBudget implements RenderBudget {
  private readonly node: NodeBudget
  private readonly tenant: string
  private charged = 0
  private released = false
  /** Once the budget is exceeded every later charge fails with the same error: the first crossing is what the user sees. */
  private exceeded: ProviderError | undefined
  private bytesOverOwnLimit = false
  /** The Mount's render work (src/render/work.ts): its CPU, as the rest of this budget is its memory. */
  readonly work = new RenderWork()

  constructor(node: NodeBudget, tenant: string) {
    this.node = node
    this.tenant = tenant
  }

  /**
   * True when this Mount crossed its own -max-mount-bytes or its render work budget (not the node's
   * budget, which is transient): a refusal that would only repeat.
   */
  get overOwnLimit(): boolean {
    return this.bytesOverOwnLimit || this.work.exceeded
  }

  get bytesCharged(): number {
    return this.charged
  }

  /** Throws the error that exceeded the budget, if one did: work not yet started is not started. */
  check(): void {
    if (this.exceeded) throw this.exceeded
  }

  /** Counts `bytes` produced for `what` (e.g. `object "tls" (GET pki/issue/web)`); throws MOUNT_BUDGET_EXCEEDED. */
  charge(bytes: number, what: string): void {
    this.check()
    if (bytes <= 0) return
    const { mountBytes, nodeBytes } = this.node.limits
    if (this.charged + bytes > mountBytes) {
      this.bytesOverOwnLimit = true
      this.exceeded = new ProviderError(
        'MOUNT_BUDGET_EXCEEDED',
        `${what} takes the Mount past its budget of ${formatBytes(mountBytes)} (${mountBytes} bytes, provider flag -max-mount-bytes) for everything one Mount fetches from Vault and writes; it had used ${formatBytes(this.charged)} before this object. Select less (secretKey, secretKeyPath), split the objects over several SecretProviderClasses, or raise -max-mount-bytes`,
      )
      throw this.exceeded
    }
    const reserved = this.released ? 'node' : this.node.reserve(bytes, this.tenant)
    if (reserved === 'tenant') {
      this.exceeded = new ProviderError(
        'MOUNT_BUDGET_EXCEEDED',
        `${what}: this namespace's Mounts in flight on this node hold half of the provider's memory budget (${formatBytes(nodeBytes * MAX_TENANT_SHARE)} of ${formatBytes(nodeBytes)}, provider flag -max-node-mount-bytes), the most one namespace may; the driver retries this Mount. If this persists, look for this namespace's pods whose Mounts are large`,
      )
      throw this.exceeded
    }
    if (reserved === 'node') {
      this.exceeded = new ProviderError(
        'MOUNT_BUDGET_EXCEEDED',
        `${what}: the provider's memory budget for all Mounts in flight on this node is spent (${formatBytes(nodeBytes)}, provider flag -max-node-mount-bytes); the driver retries this Mount. If this persists, look for pods whose Mounts are large, or raise -max-node-mount-bytes together with the DaemonSet's memory limit`,
      )
      throw this.exceeded
    }
    this.charged += bytes
  }

  /** Charges a Vault answer (parsed JSON) by its approximate size; counting stops once past the budget. */
  chargeAnswer(body: unknown, what: string): void {
    this.check()
    this.charge(jsonSize(body, this.node.limits.mountBytes - this.charged + 1), what)
  }

  /** Returns everything charged to the node's budget. Idempotent. */
  release(): void {
    if (this.released) return
    this.released = true
    this.node.give(this.charged, this.tenant)
  }
}
