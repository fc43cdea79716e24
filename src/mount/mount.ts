/**
 * One Mount, from a parsed MountSpec to the volume's files and versions:
 * plan the distinct Vault requests, fetch them as the pod, render each object.
 * Knows nothing of gRPC (the adapter) nor of caches (the Vault layer).
 */
import { DEFAULT_TOKEN_REQUEST_AUDIENCES, type ProviderMode } from '../config/config.js'
import { ProviderError, q } from '../errors.js'
import type { HmacKeySource } from '../hmac/hmac-key.js'
import { obtainPodToken, type PodCredential } from '../identity/pod-token.js'
import type { KubeClient } from '../kube/client.js'
import type { Logger } from '../observability/logger.js'
import { checkVolume, renderObjects, versionObject, type RenderedObject } from '../render/render.js'
import type { MountSpec } from '../request/types.js'
import { mapBounded } from '../util/bounded.js'
import { nestedDeeperThan } from '../util/json-depth.js'
import type { Deadline } from '../util/deadline.js'
import type { Time } from '../util/time.js'
import type { AddressAllowlist } from '../vault/transport/address-allowlist.js'
import type { BreakerRegistry } from '../vault/resilience/breaker.js'
import type { SessionPool } from '../vault/sessions/pool.js'
import type { FetchOutcome, FetchSource } from '../vault/sessions/secret-cache.js'
import { SecretNotStored } from '../vault/failure-to-error.js'
import { describeRequest } from '../vault/paths.js'
import type { MountBudget } from './budget.js'
import { planRequests } from './plan.js'
import { renderPace, type RenderTurns } from './render-turns.js'
import { checkSecretSyncAnswer } from './sync-controller.js'

/** Vault calls of one Mount in flight at once: fast for pods with many objects, gentle on Vault. */
export const MOUNT_FETCH_CONCURRENCY = 4

export interface MountDeps {
  pool: SessionPool
  kube: KubeClient | undefined
  hmacKey: HmacKeySource
  logger: Logger
  /** -vault-addr-allowlist: checked before any token is obtained or sent. */
  allowlist: Pick<AddressAllowlist, 'check'>
  /** Fail fast while the Mount's Vault address is known to be down (the same registry the sessions report to). */
  breakers: Pick<BreakerRegistry, 'admit'>
  /** -token-request-audiences: audiences the provider may request pod tokens for (default: "vault"). */
  tokenRequestAudiences?: readonly string[]
  /** The clock pod tokens' expiry is judged by. */
  time: Pick<Time, 'now'>
  /** The node's render turns, shared in turns between namespaces (render-turns.ts). */
  renderTurns: RenderTurns
  /** -mode: `sync-controller` takes only the controller's tokens and checks the answer fits its Secret. */
  mode?: ProviderMode
}

export interface MountResult {
  objects: RenderedObject[]
  /** Optional objects left out because Vault does not have their secret. */
  skippedOptional: string[]
  /** Distinct Vault requests the Mount needed. */
  vaultCalls: number
  /** How each was served: from Vault, a concurrent identical read, or the identity's cache. */
  sources: Record<FetchSource, number>
  tokenSource?: PodCredential['source']
}

function countSources(sources: FetchSource[]): Record<FetchSource, number> {
  const counts: Record<FetchSource, number> = { vault: 0, coalesced: 0, cache: 0, renewed: 0 }
  for (const s of sources) counts[s] += 1
  return counts
}

function objectsLabel(spec: MountSpec, indexes: number[]): string {
  const names = indexes.map((i) => q(spec.objects[i]!.objectName))
  return names.length === 1 ? `object ${names[0]}` : `objects ${names.join(', ')}`
}

/** Vault's own answers nest a few levels (data.data.<key>); a secret value may add some more. */
export const MAX_VAULT_ANSWER_DEPTH = 64

/** The caller left (the driver cancelled the call): nothing new is started for it. */
function checkCaller(deadline: Deadline, what: string): void {
  if (deadline.cancelled) {
    throw new ProviderError(
      'CANCELLED',
      `the driver cancelled the Mount before ${what}; nothing more was asked of Vault`,
    )
  }
}

/**
 * `budget` (src/mount/budget.ts) is charged with every Vault answer and every rendered file as they come.
 * `deadline` bounds every Kubernetes and Vault request of the Mount, and its signal ends them when the
 * driver cancels the call: requests in flight are aborted and no new one starts.
 */
export async function runMount(
  spec: MountSpec,
  deps: MountDeps,
  deadline: Deadline,
  budget: MountBudget,
): Promise<MountResult> {
  // Before anything that could log in: a refused address never sees the pod's token.
  deps.allowlist.check(spec.vault.address)
  deps.breakers.admit(spec.vault)
  checkCaller(deadline, 'it started')
  // The pod's token first, checked against the attributes: nothing cached for the identity those
  // attributes name (a Vault token, a secret) serves a Mount that cannot show that identity's token.
  const credential = await obtainPodToken(spec, deps.kube, {
    tokenRequestAudiences: deps.tokenRequestAudiences ?? DEFAULT_TOKEN_REQUEST_AUDIENCES,
    now: () => deps.time.now(),
    deadline,
    mode: deps.mode,
  })
  // Called only by a login: tells the Mount's log line which pod token one used.
  let loggedIn = false
  const getJwt = (): Promise<string> => {
    loggedIn = true
    return Promise.resolve(credential.jwt)
  }
  const session = await deps.pool.session({
    connection: spec.vault,
    authMount: spec.authMount,
    role: spec.roleName,
    audience: spec.audience,
    pod: spec.pod,
  })
  // Fetched alongside Vault (memoised after the first Mount); a failure surfaces after the reads.
  const keyPromise = deps.hmacKey.get(deadline)
  keyPromise.catch(() => undefined)

  // A template without secretPath reads only other objects: nothing to fetch for it.
  const plan = planRequests(spec.objects, spec.vault.namespace, spec.readConsistency).filter(
    (planned) => planned.request.path !== '',
  )
  const outcomes = await mapBounded(plan, MOUNT_FETCH_CONCURRENCY, async (planned) => {
    budget.check()
    const label = objectsLabel(spec, planned.objectIndexes)
    checkCaller(deadline, `reading ${label}`)
    let outcome: FetchOutcome
    try {
      outcome = await session.fetch(planned.request, planned.key, spec.pod.uid, getJwt, deadline, label)
    } catch (err) {
      // Vault says nothing is stored at the objects' own path, and every object reading it may go
      // without: skip them. Any other 404 (a login, a namespace, another server) fails the Mount.
      const optional = planned.objectIndexes.every((i) => spec.objects[i]!.optional === true)
      if (optional && err instanceof SecretNotStored) return undefined
      throw err
    }
    if (nestedDeeperThan(outcome.body, MAX_VAULT_ANSWER_DEPTH)) {
      throw new ProviderError(
        'VAULT_BAD_RESPONSE',
        `${label}: Vault's answer is nested more than ${MAX_VAULT_ANSWER_DEPTH} levels deep; the provider does not read such data`,
      )
    }
    budget.chargeAnswer(outcome.body, label)
    return outcome
  })
  const bodyOfObject = new Array<unknown>(spec.objects.length)
  const skipped = new Set<number>()
  plan.forEach((planned, i) => {
    const outcome = outcomes[i]
    for (const index of planned.objectIndexes) {
      if (outcome === undefined) skipped.add(index)
      else bodyOfObject[index] = outcome.body
    }
  })

  const key = await keyPromise
  // Render after every fetch: a template may read the responses of other objects.
  const labels = spec.objects.map((obj) =>
    obj.secretPath === ''
      ? `object ${q(obj.objectName)} (template)`
      : `object ${q(obj.objectName)} (${describeRequest({ method: obj.method, path: obj.secretPath, query: obj.query })})`,
  )
  // Rendering stops at the deadline or the driver's cancellation, and takes its namespace's turns.
  const rendered = await renderObjects(spec.objects, bodyOfObject, spec.defaultMode, labels, budget, skipped, {
    work: budget.work,
    pace: renderPace(deadline, spec.pod.namespace, deps.renderTurns),
  })
  // A skipped object has no file and no version: the driver removes what an earlier Mount wrote for it.
  const inClass = spec.objects.map((obj, index) =>
    skipped.has(index) ? undefined : versionObject(obj, rendered[index]!, key),
  )
  checkVolume(inClass)
  const objects = inClass.filter((o) => o !== undefined)
  if (deps.mode === 'sync-controller') checkSecretSyncAnswer(objects)

  return {
    objects,
    skippedOptional: [...skipped].map((i) => spec.objects[i]!.objectName),
    vaultCalls: plan.length,
    sources: countSources(outcomes.flatMap((o) => (o === undefined ? [] : [o.source]))),
    tokenSource: loggedIn ? credential.source : undefined,
  }
}
