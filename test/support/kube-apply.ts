// Applying rendered manifests to the real API server: server-side apply, for real or as a
// server-side dry run, always with fieldValidation=Strict. Takes any list of objects (a
// kustomize build, the examples, `helm template` output), maps each kind to its resource
// through the API server's own discovery (built-in kinds and CRDs alike) and reports per
// object what the API server answered.
//
// A dry run still needs what its objects depend on: the API server refuses a namespaced
// object, dry run or not, when its namespace does not exist, and admission refuses a Pod
// whose ServiceAccount does not exist. dryRunObjects creates the missing namespaces (empty)
// and the list's ServiceAccounts for real first; everything else is only dry-run.
import type { K8sObject, KubeClient } from './kube-cluster.js'
import { ensureNamespace } from './kube-cluster.js'

export interface ApplyResult {
  kind: string
  name: string
  namespace?: string
  ok: boolean
  status: number
  /** The API server's message on failure. */
  message: string
  /** Warning headers (e.g. deprecated API versions). */
  warnings: string[]
  /** The object as the API server would store it (defaults filled in). */
  object?: any
}

interface ResourceInfo {
  name: string
  namespaced: boolean
}

/** kind -> resource, per apiVersion, from the API server's discovery documents. */
export class ResourceMapper {
  private readonly byGroupVersion = new Map<string, Map<string, ResourceInfo>>()

  constructor(private readonly client: KubeClient) {}

  async resolve(apiVersion: string, kind: string): Promise<ResourceInfo | undefined> {
    let kinds = this.byGroupVersion.get(apiVersion)
    if (kinds === undefined) {
      const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`
      const res = await this.client.call('GET', path)
      kinds = new Map()
      if (res.status === 200) {
        for (const r of res.body.resources as Array<{ name: string; kind: string; namespaced: boolean }>) {
          if (!r.name.includes('/')) kinds.set(r.kind, { name: r.name, namespaced: r.namespaced })
        }
        // A CRD created a moment ago may not be in discovery yet: do not cache an empty answer.
        this.byGroupVersion.set(apiVersion, kinds)
      }
    }
    return kinds.get(kind)
  }

  forget(apiVersion: string): void {
    this.byGroupVersion.delete(apiVersion)
  }
}

export interface ApplyOptions {
  /** Server-side dry run: nothing is stored. */
  dryRun?: boolean
  /** Namespace for namespaced objects that name none. Default 'default'. */
  defaultNamespace?: string
  /** Default 'vcp-e2e'. */
  fieldManager?: string
  mapper?: ResourceMapper
}

function objectPath(obj: K8sObject, info: ResourceInfo, namespace: string): string {
  const base = obj.apiVersion.includes('/') ? `/apis/${obj.apiVersion}` : `/api/${obj.apiVersion}`
  const ns = info.namespaced ? `/namespaces/${encodeURIComponent(namespace)}` : ''
  return `${base}${ns}/${info.name}/${encodeURIComponent(obj.metadata.name)}`
}

/** Server-side apply of every object, in order; never throws for a refused object. */
export async function applyObjects(
  client: KubeClient,
  objects: readonly K8sObject[],
  o: ApplyOptions = {},
): Promise<ApplyResult[]> {
  const mapper = o.mapper ?? new ResourceMapper(client)
  const out: ApplyResult[] = []
  for (const obj of objects) {
    const kind = String(obj?.kind ?? '?')
    const name = String(obj?.metadata?.name ?? '?')
    const info =
      typeof obj?.apiVersion === 'string' && typeof obj?.kind === 'string'
        ? await mapper.resolve(obj.apiVersion, obj.kind)
        : undefined
    if (info === undefined) {
      out.push({
        kind,
        name,
        ok: false,
        status: 0,
        message: `the API server serves no kind ${kind} in ${String(obj?.apiVersion)}`,
        warnings: [],
      })
      continue
    }
    const namespace = info.namespaced ? (obj.metadata.namespace ?? o.defaultNamespace ?? 'default') : undefined
    const body = namespace === undefined ? obj : { ...obj, metadata: { ...obj.metadata, namespace } }
    const query = new URLSearchParams({
      fieldManager: o.fieldManager ?? 'vcp-e2e',
      force: 'true',
      fieldValidation: 'Strict',
    })
    if (o.dryRun === true) query.set('dryRun', 'All')
    const res = await client.call('PATCH', `${objectPath(obj, info, namespace ?? '')}?${query}`, body, {
      contentType: 'application/apply-patch+yaml',
    })
    const ok = res.status >= 200 && res.status < 300
    out.push({
      kind,
      name,
      ...(namespace === undefined ? {} : { namespace }),
      ok,
      status: res.status,
      message: ok ? '' : String(res.body?.message ?? res.body),
      warnings: res.warnings,
      ...(ok ? { object: res.body } : {}),
    })
  }
  return out
}

/**
 * Server-side dry run with strict field validation of every object: the real API server's
 * schemas (built-in kinds, and the CRDs installed in the cluster) and its admission decide.
 * Each object is created with dryRun=All (as `kubectl apply --dry-run=server` creates what
 * does not exist yet), or, if it exists (a namespace made for the others), server-side
 * applied with dryRun=All. Creates missing namespaces first (see the note at the top).
 *
 * The two paths word a schema error differently (kube-apiserver v1.35): create answers 400
 * "strict decoding error: unknown field …" or 422 "Invalid value: …"; server-side apply
 * answers 500 "failed to create typed patch object …: field not declared in schema".
 */
export async function dryRunObjects(
  client: KubeClient,
  objects: readonly K8sObject[],
  o: Omit<ApplyOptions, 'dryRun'> = {},
): Promise<ApplyResult[]> {
  const mapper = o.mapper ?? new ResourceMapper(client)
  const namespaces = new Set<string>()
  for (const obj of objects) {
    // Objects that others in the list need to exist already, as they would after a real apply.
    if (obj?.kind === 'Namespace' && obj.apiVersion === 'v1') continue
    const info =
      typeof obj?.apiVersion === 'string' && typeof obj?.kind === 'string'
        ? await mapper.resolve(obj.apiVersion, obj.kind)
        : undefined
    if (info?.namespaced) namespaces.add(obj.metadata?.namespace ?? o.defaultNamespace ?? 'default')
  }
  for (const ns of namespaces) await ensureNamespace(client, ns)
  // A Pod names its ServiceAccount, which admission looks up: create the list's accounts for real.
  for (const obj of objects) {
    if (obj?.kind === 'ServiceAccount' && obj.apiVersion === 'v1') {
      await applyObjects(client, [obj], { ...o, mapper })
    }
  }
  const out: ApplyResult[] = []
  for (const obj of objects) {
    const info =
      typeof obj?.apiVersion === 'string' && typeof obj?.kind === 'string'
        ? await mapper.resolve(obj.apiVersion, obj.kind)
        : undefined
    if (info === undefined) {
      out.push(...(await applyObjects(client, [obj], { ...o, mapper, dryRun: true })))
      continue
    }
    const namespace = info.namespaced ? (obj.metadata.namespace ?? o.defaultNamespace ?? 'default') : undefined
    const body = namespace === undefined ? obj : { ...obj, metadata: { ...obj.metadata, namespace } }
    const collection = objectPath(obj, info, namespace ?? '').replace(/\/[^/]*$/, '')
    const query = new URLSearchParams({
      dryRun: 'All',
      fieldValidation: 'Strict',
      fieldManager: o.fieldManager ?? 'vcp-e2e',
    })
    const res = await client.call('POST', `${collection}?${query}`, body)
    if (res.status === 409) {
      out.push(...(await applyObjects(client, [obj], { ...o, mapper, dryRun: true })))
      continue
    }
    const ok = res.status >= 200 && res.status < 300
    out.push({
      kind: obj.kind,
      name: obj.metadata.name,
      ...(namespace === undefined ? {} : { namespace }),
      ok,
      status: res.status,
      message: ok ? '' : String(res.body?.message ?? res.body),
      warnings: res.warnings,
      ...(ok ? { object: res.body } : {}),
    })
  }
  return out
}

/** "Kind/name: message" for every refused object. */
export function refusals(results: readonly ApplyResult[]): string[] {
  return results.filter((r) => !r.ok).map((r) => `${r.kind}/${r.name}: ${r.status} ${r.message}`)
}
