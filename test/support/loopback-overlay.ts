// The test overlay of test/e2e/real-node.test.ts: the provider's DaemonSet, as daemonset/ (kustomize),
// the chart (helm) or vault-helm render it, changed only where the real node's network rule needs it.
// Every address a pod or component reaches is on the loopback range and there is no pod network, so:
//   - hostNetwork: true (the node has no pod network);
//   - every container's image is the locally built one, never pulled (no registry);
//   - the provider's health port and its probes on 127.0.0.1 (probes would dial the node's own address);
//   - the providers hostPath is the node's own directory (one test node per directory);
//   - KUBERNETES_SERVICE_HOST/PORT and VAULT_ADDR as below.
// Run as a program, it is helm's --post-renderer: objects on stdin, the options as JSON in argv[2].
import { pathToFileURL } from 'node:url'
import { parseAllDocuments, stringify } from 'yaml'

export interface LoopbackOptions {
  image: string
  apiServerPort: number
  providersDir: string
  /** The provider's -health-addr port (127.0.0.1) and its probes'; default: the manifests' own. */
  healthPort?: number
  /** VAULT_ADDR, where the manifests set none. */
  vaultAddr?: string
}

const PROBES = ['startupProbe', 'livenessProbe', 'readinessProbe'] as const

function overlayContainer(c: any, o: LoopbackOptions, init: boolean): void {
  c.image = o.image
  c.imagePullPolicy = 'Never'
  if (init) return
  const env: Array<{ name: string; value?: string }> = (c.env ??= [])
  const set = (name: string, value: string): void => {
    const e = env.find((x) => x.name === name)
    if (e) e.value = value
    else env.push({ name, value })
  }
  // The kubernetes Service's cluster IP is never dialled (no pod network, no kube-proxy here): the
  // provider gets the API server's loopback address, as in-cluster configuration reads it.
  set('KUBERNETES_SERVICE_HOST', '127.0.0.1')
  set('KUBERNETES_SERVICE_PORT', String(o.apiServerPort))
  if (o.vaultAddr !== undefined && !env.some((x) => x.name === 'VAULT_ADDR')) set('VAULT_ADDR', o.vaultAddr)
  if (o.healthPort !== undefined) {
    const flag = `-health-addr=127.0.0.1:${o.healthPort}`
    const args: string[] = c.args ?? []
    const i = args.findIndex((a) => a.replace(/^-+/, '').startsWith('health-addr='))
    if (i >= 0) args[i] = flag
    else args.push(flag)
    c.args = args
    for (const p of c.ports ?? []) if (p.name === 'health') p.containerPort = o.healthPort
  }
  for (const name of PROBES) {
    const get = c[name]?.httpGet
    if (!get) continue
    get.host = '127.0.0.1'
    if (o.healthPort !== undefined && typeof get.port === 'number') get.port = o.healthPort
  }
}

/** The objects with every DaemonSet changed as the header says (a copy; the input is left alone). */
export function loopbackOverlay<T extends { kind: string }>(objects: readonly T[], o: LoopbackOptions): T[] {
  return objects.map((obj) => {
    const copy = structuredClone(obj) as any
    if (copy.kind !== 'DaemonSet') return copy
    const spec = copy.spec.template.spec
    spec.hostNetwork = true
    for (const c of spec.initContainers ?? []) overlayContainer(c, o, true)
    for (const c of spec.containers ?? []) overlayContainer(c, o, false)
    for (const v of spec.volumes ?? []) {
      if (typeof v.hostPath?.path === 'string' && v.hostPath.path.endsWith('/secrets-store-csi-providers')) {
        v.hostPath.path = o.providersDir
      }
    }
    return copy
  })
}

async function postRender(options: string): Promise<void> {
  const chunks: Buffer[] = []
  for await (const c of process.stdin) chunks.push(c as Buffer)
  const objects = parseAllDocuments(Buffer.concat(chunks).toString('utf8'))
    .map((d) => d.toJS() as { kind: string } | null)
    .filter((d): d is { kind: string } => d !== null && d !== undefined)
  const out = loopbackOverlay(objects, JSON.parse(options) as LoopbackOptions)
  process.stdout.write(out.map((x) => stringify(x)).join('---\n'))
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await postRender(process.argv[2] ?? '{}')
}
