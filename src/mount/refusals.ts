/**
 * Mounts refused for what they ask, remembered for a while: a Mount over its own budget
 * (-max-mount-bytes or its render work, budget.ts) or with a Vault answer over
 * -max-vault-response-size (which only shows once it has been read that far) would be refused again,
 * after fetching and rendering as much again, on every retry (kubelet retries a failed Mount; a hostile
 * pod can make many). For BUDGET_REFUSAL_MEMORY_MS the same pod asking the same Vault the same way for
 * the same objects is refused at once, without any work; any other pod, or other objects, is not.
 *
 * One instance, built by the composition root and shared by every namespace: fair between them
 * (util/fair-cache.ts), so one namespace's many refusals push out only its own. Most Mounts come from a
 * namespace with no refusal in memory: for them a recall is one Map lookup, nothing is hashed.
 */
import crypto from 'node:crypto'
import type { ProviderError } from '../errors.js'
import type { MountSpec } from '../request/types.js'
import { FairCache } from '../util/fair-cache.js'
import type { Time } from '../util/time.js'

/** How long a refused Mount is refused again without any work. */
export const BUDGET_REFUSAL_MEMORY_MS = 30_000
/** Refusals remembered at most, over all namespaces (each is a digest and its error): ample for a node's pods. */
export const MAX_REMEMBERED_REFUSALS = 1024

interface Refusal {
  error: ProviderError
  until: number
}

export class RememberedRefusals {
  private readonly refusals: FairCache<Refusal>
  /** Namespaces with refusals in memory, and when the last of them expires. */
  private readonly liveUntil = new Map<string, number>()
  private readonly time: Pick<Time, 'now'>

  /** `time`: the clock refusals expire by. */
  constructor(time: Pick<Time, 'now'>) {
    this.time = time
    this.refusals = new FairCache<Refusal>({
      maxEntries: MAX_REMEMBERED_REFUSALS,
      onEvict: (_refusal, _key, namespace) => this.dropIfEmpty(namespace),
    })
  }

  /** Refusals held (expired ones included until they are looked up or pushed out). */
  get size(): number {
    return this.refusals.size
  }

  /** The refusal remembered for this Mount, if it is recent. */
  recall(spec: MountSpec): ProviderError | undefined {
    const namespace = spec.pod.namespace
    const until = this.liveUntil.get(namespace)
    if (until === undefined) return undefined
    const now = this.time.now()
    if (now >= until) {
      // Every refusal of the namespace has expired: its Mounts are back on the cheap path.
      this.liveUntil.delete(namespace)
      return undefined
    }
    const key = refusalKeyOf(spec)
    const refusal = this.refusals.get(key)
    if (refusal === undefined) return undefined
    if (now < refusal.until) return refusal.error
    this.refusals.delete(key)
    this.dropIfEmpty(namespace)
    return undefined
  }

  remember(spec: MountSpec, error: ProviderError): void {
    const namespace = spec.pod.namespace
    const until = this.time.now() + BUDGET_REFUSAL_MEMORY_MS
    this.refusals.set(namespace, refusalKeyOf(spec), { error, until })
    this.liveUntil.set(namespace, Math.max(until, this.liveUntil.get(namespace) ?? 0))
  }

  private dropIfEmpty(namespace: string): void {
    if (this.refusals.sizeOf(namespace) === 0) this.liveUntil.delete(namespace)
  }
}

/**
 * Who mounts what, where: the pod, its Vault connection and login, and the objects as parsed (their
 * canonical fields, configJson, which equal `objects` texts always give), as one SHA-256.
 */
function refusalKeyOf(spec: MountSpec): string {
  const hash = crypto.createHash('sha256')
  hash.update(
    JSON.stringify([
      spec.pod.uid,
      spec.pod.namespace,
      spec.pod.serviceAccount,
      spec.vault.address,
      spec.vault.namespace ?? '',
      spec.authMount,
      spec.roleName,
      spec.audience,
    ]),
  )
  // Each configJson is one JSON value: their concatenation reads back one way only.
  for (const object of spec.objects) hash.update(object.configJson)
  return hash.digest('base64')
}
