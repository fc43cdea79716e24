/**
 * One Mount, from a parsed MountSpec to the volume's files and versions:
 * plan the distinct Vault requests, fetch them as the pod, render each object.
 * Knows nothing of gRPC (the adapter) nor of caches (the Vault layer).
 */
import { q } from '../errors.js'
import type { HmacKeySource } from '../hmac/hmac-key.js'
import { obtainPodToken, type PodCredential } from '../identity/pod-token.js'
import type { KubeClient } from '../kube/client.js'
import type { Logger } from '../observability/logger.js'
import { checkVolume, renderObject, versionObject, type RenderedObject } from '../render/render.js'
import type { MountSpec } from '../request/types.js'
import { mapBounded } from '../util/bounded.js'
import type { Deadline } from '../util/deadline.js'
import type { SessionPool } from '../vault/pool.js'
import { describeRequest } from '../vault/session.js'
import { planRequests } from './plan.js'

/** Vault calls of one Mount in flight at once: fast for pods with many objects, gentle on Vault. */
export const MOUNT_FETCH_CONCURRENCY = 4

export interface MountDeps {
  pool: SessionPool
  kube: KubeClient | undefined
  hmacKey: HmacKeySource
  logger: Logger
}

export interface MountResult {
  objects: RenderedObject[]
  vaultCalls: number
  tokenSource?: PodCredential['source']
}

function objectsLabel(spec: MountSpec, indexes: number[]): string {
  const names = indexes.map((i) => q(spec.objects[i]!.objectName))
  return names.length === 1 ? `object ${names[0]}` : `objects ${names.join(', ')}`
}

export async function runMount(spec: MountSpec, deps: MountDeps, deadline: Deadline): Promise<MountResult> {
  const session = await deps.pool.session({
    connection: spec.vault,
    authMount: spec.authMount,
    role: spec.roleName,
    audience: spec.audience,
    pod: spec.pod,
  })

  // The pod's JWT is only needed if a login happens; fetch it at most once per Mount.
  let credential: Promise<PodCredential> | undefined
  const getJwt = async (): Promise<string> => {
    credential ??= obtainPodToken(spec, deps.kube)
    return (await credential).jwt
  }

  // Fetched alongside Vault (memoised after the first Mount); a failure surfaces after the reads.
  const keyPromise = deps.hmacKey.get()
  keyPromise.catch(() => undefined)

  const plan = planRequests(spec.objects)
  const bodies = await mapBounded(plan, MOUNT_FETCH_CONCURRENCY, (planned) =>
    session.request(planned.request, getJwt, deadline, objectsLabel(spec, planned.objectIndexes)),
  )

  const bodyOfObject = new Array<unknown>(spec.objects.length)
  plan.forEach((planned, i) => {
    for (const index of planned.objectIndexes) bodyOfObject[index] = bodies[i]
  })

  const key = await keyPromise
  const objects = spec.objects.map((obj, index) => {
    const label = `object ${q(obj.objectName)} (${describeRequest({ method: obj.method, path: obj.secretPath, query: obj.query })})`
    const files = renderObject(obj, bodyOfObject[index], spec.defaultMode, label)
    return versionObject(obj, files, key)
  })
  checkVolume(objects)

  return {
    objects,
    vaultCalls: plan.length,
    tokenSource: credential ? (await credential.catch(() => undefined))?.source : undefined,
  }
}
