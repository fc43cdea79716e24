// One node of the end-to-end cluster: the real Secrets Store CSI driver (v1.6.0, built by
// scripts/setup-kubernetes.sh) serving CSI on its socket and looking for providers in the
// node's provider directory, the provider as its DaemonSet runs it (its own service-account
// token from the real API server, the namespace and RBAC of daemonset/), and the kubelet's
// side of CSI inline volumes played by test/kubelet (.cache/bin/kubelet-csi).
//
// Facts about the driver v1.6.0 that shaped this module (docs/e2e findings in README):
// - NodePublishVolume refuses readonly=false; kubelet passes the volume's readOnly.
// - With --enable-secret-rotation, a NodePublishVolume for a target written less than
//   --rotation-poll-interval ago returns OK without calling the provider; after that, it
//   calls the provider again (rotation is kubelet's republish, requiresRepublish).
// - A provider error during a republish is logged and counted, but NodePublishVolume still
//   answers OK ("mask error until fix available", kubernetes#121271): a failed rotation is
//   visible only in the driver's log and its metrics, never to kubelet.
// - A failed first publish unmounts the tmpfs again; kubelet then removes the target dir.
// - Secret sync (secretObjects) happens in the driver's SecretProviderClassPodStatus
//   controller, shortly after the status object is created or updated, not in the call.
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import net from 'node:net'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import {
  CSI_DRIVER_NAME,
  KUBE_BIN_DIR,
  ensureNamespace,
  ensureServiceAccount,
  requestToken,
  spawnLogged,
  stopChild,
  waitUntil,
  type KubeCluster,
} from './kube-cluster.js'
import { freePort } from './ports.js'
import { startProvider, type ProviderProcess, type StartProviderOptions } from './provider.js'

export const DRIVER_BIN = join(KUBE_BIN_DIR, 'secrets-store-csi-driver')
export const KUBELET_BIN = process.env['KUBELET_CSI_BIN'] ?? join(PACKAGE_ROOT, '.cache', 'bin', 'kubelet-csi')
export const PROVIDER_NAMESPACE = 'vault-csi-provider'
export const PROVIDER_SERVICE_ACCOUNT = 'vault-csi-provider'
export const DRIVER_NAMESPACE = 'kube-system'
export const DRIVER_SERVICE_ACCOUNT = 'secrets-store-csi-driver'

/** What test/kubelet printed for one call. */
export interface KubeletResult {
  ok: boolean
  /** 'kubernetes' (pod, CSIDriver, Secret or TokenRequest) or 'csi' (the driver's answer). */
  stage?: string
  grpcCode?: string
  /** As kubelet would put it into the pod's FailedMount event ('' on success). */
  message: string
  targetPath: string
  volumeId: string
  volumeContextKeys?: string[]
  tokenAudiences?: string[]
  tokenRequests: number
  readonly: boolean
  accessMode?: string
  /** The volume was mounted already: a republish. */
  republish: boolean
  /** A republish kubelet would not make: the CSIDriver does not set requiresRepublish. */
  skipped: boolean
  cleaned: boolean
  durationMs: number
}

export interface KubeNode {
  name: string
  /** Kubelet root: pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount live under it. */
  root: string
  /** Where providers put their sockets (the driver's --provider-volume). */
  providerDir: string
  csiSocket: string
  driverLog: string
  driverMetricsUrl: string
  /** NodePublishVolume for a pod's volume, as kubelet does (first publish or republish). */
  publish(namespace: string, pod: string, volume?: string): Promise<KubeletResult>
  /** NodeUnpublishVolume, as kubelet does when the pod goes. */
  unpublish(podUid: string, volume?: string): Promise<KubeletResult>
  /** The driver's Prometheus counters, name{labels} -> value. */
  driverMetrics(): Promise<Map<string, number>>
  stopDriver(): Promise<void>
  /** Unpublishes what is still published and stops the driver. */
  stop(): Promise<void>
}

export interface StartNodeOptions {
  /** --rotation-poll-interval. Default '1s'. */
  rotationPollInterval?: string
}

function runKubelet(args: string[]): Promise<KubeletResult> {
  if (!existsSync(KUBELET_BIN)) {
    return Promise.reject(new Error(`${KUBELET_BIN} missing: run scripts/setup.sh (setup-kubernetes.sh) first`))
  }
  return new Promise((resolve, reject) => {
    execFile(KUBELET_BIN, args, { timeout: 180_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`kubelet-csi ${args[0]} failed: ${err.message}; ${stderr}`))
      const line = stdout.trim().split('\n').pop() ?? ''
      try {
        const r = JSON.parse(line) as KubeletResult
        r.message ??= ''
        resolve(r)
      } catch {
        reject(new Error(`kubelet-csi ${args[0]} printed no JSON: ${stdout} ${stderr}`))
      }
    })
  })
}

/** Every mount point under `dir` (from /proc/self/mountinfo), deepest first. */
export function mountsUnder(dir: string): string[] {
  const text = readFileSync('/proc/self/mountinfo', 'utf8')
  const out: string[] = []
  for (const line of text.split('\n')) {
    const p = line.split(' ')[4]
    if (p === undefined) continue
    const path = p.replace(/\\040/g, ' ')
    if (path === dir || path.startsWith(dir + '/')) out.push(path)
  }
  return out.sort((a, b) => b.length - a.length)
}

function umount(path: string): Promise<void> {
  return new Promise((resolve) => execFile('umount', ['-l', path], () => resolve()))
}

/** The driver's service account, with the driver module's own RBAC (deploy/rbac-*.yaml). */
export async function driverKubeconfig(cluster: KubeCluster, path: string): Promise<void> {
  const { token } = await requestToken(cluster.admin, DRIVER_NAMESPACE, DRIVER_SERVICE_ACCOUNT, {
    expirationSeconds: 24 * 3600,
  })
  await cluster.writeKubeconfig(path, token)
}

/**
 * Starts the real driver for `name` (one of cluster.nodes). The driver's RBAC must be
 * applied first (e2e.ts does it from the driver's deploy/ files).
 */
export async function startNode(cluster: KubeCluster, name: string, o: StartNodeOptions = {}): Promise<KubeNode> {
  if (!existsSync(DRIVER_BIN)) throw new Error(`${DRIVER_BIN} missing: run scripts/setup.sh first`)
  const base = join(cluster.dir, 'nodes', name)
  const root = join(base, 'kubelet')
  const providerDir = join(base, 'providers')
  const csiDir = join(base, 'csi')
  for (const d of [root, providerDir, csiDir]) await mkdir(d, { recursive: true })
  const csiSocket = join(csiDir, 'csi.sock')
  const kubeconfig = join(base, 'driver.kubeconfig')
  await driverKubeconfig(cluster, kubeconfig)
  const metricsPort = await freePort()
  const driverLog = join(base, 'driver.log')
  const driver = spawnLogged(
    DRIVER_BIN,
    [
      `--endpoint=unix://${csiSocket}`,
      `--nodeid=${name}`,
      `--provider-volume=${providerDir}`,
      `--additional-provider-volume-paths=${providerDir}`,
      `--metrics-addr=127.0.0.1:${metricsPort}`,
      '--enable-secret-rotation=true',
      `--rotation-poll-interval=${o.rotationPollInterval ?? '1s'}`,
      '-v=2',
    ],
    driverLog,
    { PATH: process.env.PATH ?? '/usr/bin:/bin', KUBECONFIG: kubeconfig },
  )
  await waitUntil(`the driver serving ${csiSocket} (log ${driverLog})`, async () => {
    if (driver.exitCode !== null) throw new Error(`driver exited: ${readFileSync(driverLog, 'utf8').slice(-3000)}`)
    return await new Promise<boolean>((res) => {
      const s = net.connect({ path: csiSocket })
      s.once('connect', () => {
        s.destroy()
        res(true)
      })
      s.once('error', () => res(false))
    })
  })
  const published = new Map<string, string>() // target path -> volume
  const uids = new Map<string, { uid: string; volume: string }>()
  const tokenCache = join(base, 'kubelet-tokens.json')
  const node: KubeNode = {
    name,
    root,
    providerDir,
    csiSocket,
    driverLog,
    driverMetricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    async publish(namespace, pod, volume = 'secrets-store') {
      const r = await runKubelet([
        'publish',
        `--server=${cluster.url}`,
        `--ca=${cluster.caPath}`,
        `--token-file=${cluster.nodeTokenPath(name)}`,
        `--node=${name}`,
        `--csi-endpoint=unix://${csiSocket}`,
        `--root=${root}`,
        `--namespace=${namespace}`,
        `--pod=${pod}`,
        `--volume=${volume}`,
        `--token-cache=${tokenCache}`,
      ])
      if (r.targetPath) {
        published.set(r.targetPath, volume)
        const uid = r.targetPath.split('/pods/')[1]?.split('/')[0]
        if (uid) uids.set(r.targetPath, { uid, volume })
      }
      return r
    },
    async unpublish(podUid, volume = 'secrets-store') {
      const r = await runKubelet([
        'unpublish',
        `--csi-endpoint=unix://${csiSocket}`,
        `--root=${root}`,
        `--pod-uid=${podUid}`,
        `--volume=${volume}`,
      ])
      if (r.ok) published.delete(r.targetPath)
      return r
    },
    driverMetrics: () => scrapeMetrics(node.driverMetricsUrl),
    async stopDriver() {
      await stopChild(driver)
    },
    async stop() {
      if (driver.exitCode === null && driver.signalCode === null) {
        for (const [target] of published) {
          const u = uids.get(target)
          if (u) await node.unpublish(u.uid, u.volume).catch(() => undefined)
        }
      }
      await stopChild(driver)
      // Whatever the driver could not unmount (it was gone, or a test failed half-way).
      for (const m of mountsUnder(root)) await umount(m)
    },
  }
  return node
}

/** Sum of a metric over all its label sets, e.g. metricSum(m, 'rotation_reconcile_error_total'). */
/** A Prometheus text page as sample (name with its labels) → value. */
export async function scrapeMetrics(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text()
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue
    const i = line.lastIndexOf(' ')
    out.set(line.slice(0, i), Number(line.slice(i + 1)))
  }
  return out
}

export function metricSum(metrics: Map<string, number>, name: string): number {
  let sum = 0
  for (const [k, v] of metrics) if (k === name || k.startsWith(`${name}{`)) sum += v
  return sum
}

export interface ClusterProviderOptions extends Omit<StartProviderOptions, 'env' | 'hmacKeyFile'> {
  // socketDir: default the node's provider directory (where the driver looks).
  /** Name of the provider's Pod object (its token is bound to it). Default vault-csi-provider-<node>. */
  podName?: string
  /** -hmac-key-file; default none: the Kubernetes Secret, as in a cluster. */
  hmacKeyFile?: string
  /** Reuse this service-account directory (a restart of the same pod). */
  serviceAccountDir?: string
}

export interface ClusterProvider extends ProviderProcess {
  /** token, ca.crt and namespace, as kubelet projects them into the provider's pod. */
  serviceAccountDir: string
  podName: string
}

/**
 * The provider as daemonset/ runs it on `node`: in-cluster configuration
 * (KUBERNETES_SERVICE_HOST/PORT), POD_NAMESPACE, and a service-account directory holding a
 * token of vault-csi-provider/vault-csi-provider bound to a Pod object on that node, the API
 * server's CA and the namespace. Its RBAC is whatever the suite applied from daemonset/.
 */
export async function startClusterProvider(
  cluster: KubeCluster,
  node: KubeNode,
  o: ClusterProviderOptions = {},
): Promise<ClusterProvider> {
  const podName = o.podName ?? `vault-csi-provider-${node.name}`
  let saDir = o.serviceAccountDir
  if (saDir === undefined) {
    saDir = join(cluster.dir, 'nodes', node.name, `sa-${podName}`)
    await mkdir(saDir, { recursive: true })
    await ensureNamespace(cluster.admin, PROVIDER_NAMESPACE)
    await ensureServiceAccount(cluster.admin, PROVIDER_NAMESPACE, PROVIDER_SERVICE_ACCOUNT)
    const pod = await cluster.admin.must(
      'POST',
      `/api/v1/namespaces/${PROVIDER_NAMESPACE}/pods`,
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: podName, labels: { 'app.kubernetes.io/name': 'vault-csi-provider' } },
        spec: {
          nodeName: node.name,
          serviceAccountName: PROVIDER_SERVICE_ACCOUNT,
          containers: [{ name: 'provider', image: 'vault-csi-provider-ts' }],
        },
      },
      { ok: [409] },
    )
    const uid =
      pod?.metadata?.uid ??
      (await cluster.admin.must('GET', `/api/v1/namespaces/${PROVIDER_NAMESPACE}/pods/${podName}`)).metadata.uid
    // What kubelet projects for automountServiceAccountToken: audience = the API server's,
    // about an hour, bound to the pod.
    const { token } = await requestToken(cluster.admin, PROVIDER_NAMESPACE, PROVIDER_SERVICE_ACCOUNT, {
      expirationSeconds: 3607,
      pod: { name: podName, uid },
    })
    await writeFile(join(saDir, 'token'), token, { mode: 0o600 })
    await writeFile(join(saDir, 'ca.crt'), cluster.caPem)
    await writeFile(join(saDir, 'namespace'), PROVIDER_NAMESPACE)
  }
  const p = await startProvider({
    ...o,
    socketDir: o.socketDir ?? node.providerDir,
    hmacKeyFile: o.hmacKeyFile ?? '',
    env: {
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: String(cluster.port),
      POD_NAMESPACE: PROVIDER_NAMESPACE,
    },
    args: [`-kube-service-account-dir=${saDir}`, ...(o.args ?? [])],
  })
  return Object.assign(p, { serviceAccountDir: saDir, podName })
}

export { CSI_DRIVER_NAME }
