// One end-to-end world per suite file: a real etcd + kube-apiserver (kube-cluster.ts), the
// real Secrets Store CSI driver on each node with kubelet played by test/kubelet
// (kube-node.ts), the provider on each node as daemonset/ runs it, and a real OpenBao whose
// `kubernetes` auth reviews tokens with that API server (TokenReview, reviewer bound to
// system:auth-delegator) and whose `jwt` auth checks them against its /openid/v1/jwks.
//
// Tests take a namespace each (newNamespace) for isolation; namespaces are never deleted
// (no kube-controller-manager runs to finalize them): the cluster goes at the end.
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parse } from 'yaml'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { applyObjects, refusals } from './kube-apply.js'
import {
  CSI_DRIVER_NAME,
  driverDeployObjects,
  ensureNamespace,
  ensureServiceAccount,
  requestToken,
  startKubeCluster,
  waitUntil,
  type K8sObject,
  type KubeCluster,
} from './kube-cluster.js'
import { startClusterProvider, startNode, type ClusterProvider, type KubeNode } from './kube-node.js'
import { kustomizeBuild } from './manifests.js'
import { mustSucceed, startOpenBao, type OpenBao, type StartOpenBaoOptions } from './openbao.js'

export const KUBERNETES_AUTH_MOUNT = 'kubernetes'
export const JWT_AUTH_MOUNT = 'jwt'
export const APP_POLICY = 'app-read'
export const VOLUME = 'secrets-store'

/** Which kustomize variant's RBAC the provider gets. */
export type ProviderRbac = 'daemonset' | 'daemonset/overlays/token-request' | 'none'

export interface E2eOptions {
  /** Default ['node-1']. */
  nodes?: string[]
  /**
   * The CSIDriver's tokenRequests as daemonset/driver-values.yaml gives them to the driver's
   * Helm chart (which on Kubernetes >= 1.35 also sets serviceAccountTokenInSecrets: true).
   * false: no tokenRequests (the provider falls back to TokenRequest). Default true.
   */
  tokenRequests?: boolean
  /** Default 'daemonset' (the base: the HMAC Secret only). */
  providerRbac?: ProviderRbac
  /** The driver's --rotation-poll-interval. Default '1s'. */
  rotationPollInterval?: string
  /** Start a provider on every node. Default true. */
  startProviders?: boolean
  providerArgs?: string[]
  bao?: StartOpenBaoOptions
}

export interface AppPod {
  namespace: string
  name: string
  uid: string
  serviceAccount: string
  node: string
}

export interface E2eWorld {
  cluster: KubeCluster
  bao: OpenBao
  nodes: KubeNode[]
  providers: Map<string, ClusterProvider>
  node(name?: string): KubeNode
  provider(name?: string): ClusterProvider
  startProvider(node: KubeNode, args?: string[]): Promise<ClusterProvider>
  applyProviderRbac(variant: Exclude<ProviderRbac, 'none'>): Promise<void>
  /** A fresh namespace with ServiceAccount `app` (and any others named). */
  newNamespace(prefix: string, serviceAccounts?: string[]): Promise<string>
  createSpc(
    namespace: string,
    name: string,
    spec: { parameters: Record<string, unknown>; secretObjects?: unknown[] },
  ): Promise<void>
  createPod(
    namespace: string,
    name: string,
    o: { spc: string; serviceAccount?: string; node?: string; volumeAttributes?: Record<string, string> },
  ): Promise<AppPod>
  /** Immediate deletion (grace 0): no kubelet here to confirm a graceful one. */
  deletePod(namespace: string, name: string): Promise<void>
  /** A kubernetes-auth role for these service accounts and namespaces (audience vault). */
  kubernetesRole(role: string, namespaces: string[], serviceAccounts?: string[], policies?: string[]): Promise<void>
  /** A jwt-auth role bound to sub system:serviceaccount:<ns>:<sa> and audience vault. */
  jwtRole(role: string, namespace: string, serviceAccount?: string, policies?: string[]): Promise<void>
  kvPut(path: string, data: Record<string, unknown>): Promise<void>
  /** The SecretProviderClassPodStatus the driver keeps for a pod's volume, or undefined. */
  podStatus(pod: AppPod, spc: string): Promise<any>
  /** Successful Mounts a provider logged for this pod so far (default: the pod's node's provider). */
  providerMounts(pod: AppPod, provider?: ClusterProvider): Promise<number>
  /**
   * Republishes the pod's volume as kubelet does until the driver has passed one on to the
   * provider (it skips those within --rotation-poll-interval of the volume's last change).
   */
  republishThroughToProvider(pod: AppPod, provider?: ClusterProvider): Promise<void>
  /**
   * The tokens this world handed out itself (the reviewer's, the providers'), for leak checks;
   * pods' tokens are caught by findLeaks' JWT pattern.
   */
  tokensSeen(): Promise<string[]>
  stop(): Promise<void>
}

/** The SecretProviderClass parameters every e2e SPC shares: this world's OpenBao. */
export function spcParameters(bao: OpenBao, role: string, objects: unknown[], extra: Record<string, string> = {}) {
  return {
    vaultAddress: bao.addr,
    roleName: role,
    vaultAuthMountPath: KUBERNETES_AUTH_MOUNT,
    objects: JSON.stringify(objects),
    ...extra,
  }
}

/** The CSIDriver object as the driver's Helm chart renders it with daemonset/driver-values.yaml. */
export async function csiDriverObject(tokenRequests: boolean): Promise<K8sObject> {
  const [drv] = await driverDeployObjects('csidriver.yaml')
  if (drv?.kind !== 'CSIDriver') throw new Error('deploy/csidriver.yaml holds no CSIDriver')
  const spec = drv.spec as Record<string, unknown>
  if (tokenRequests) {
    const values = parse(await readFile(join(PACKAGE_ROOT, 'daemonset', 'driver-values.yaml'), 'utf8'))
    spec.tokenRequests = values.tokenRequests
    // The chart (v1.6.0, templates/csidriver.yaml) adds this on Kubernetes >= 1.35.
    spec.serviceAccountTokenInSecrets = true
  }
  return drv
}

/**
 * OpenBao's `kubernetes` auth at KUBERNETES_AUTH_MOUNT, reviewing tokens with this API server as
 * vault/token-reviewer (bound to system:auth-delegator). Returns the reviewer's token.
 */
export async function configureKubernetesAuth(cluster: KubeCluster, bao: OpenBao): Promise<{ token: string }> {
  const admin = cluster.admin
  await ensureNamespace(admin, 'vault')
  await ensureServiceAccount(admin, 'vault', 'token-reviewer')
  await admin.must(
    'POST',
    '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'openbao-token-reviewer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' },
      subjects: [{ kind: 'ServiceAccount', name: 'token-reviewer', namespace: 'vault' }],
    },
    { ok: [409] },
  )
  const reviewer = await requestToken(admin, 'vault', 'token-reviewer', { expirationSeconds: 24 * 3600 })
  await bao.enableAuth('kubernetes', KUBERNETES_AUTH_MOUNT)
  mustSucceed(
    'configure kubernetes auth',
    await bao.api('POST', `/v1/auth/${KUBERNETES_AUTH_MOUNT}/config`, {
      kubernetes_host: cluster.url,
      kubernetes_ca_cert: cluster.caPem,
      token_reviewer_jwt: reviewer.token,
      disable_local_ca_jwt: true,
    }),
  )
  return reviewer
}

export async function startE2e(o: E2eOptions = {}): Promise<E2eWorld> {
  if (process.getuid?.() !== 0) {
    throw new Error('test/e2e runs as root: the Secrets Store CSI driver mounts a tmpfs for every volume')
  }
  const stack: Array<() => Promise<unknown>> = []
  const unwind = async (): Promise<void> => {
    const errors: unknown[] = []
    for (const f of stack.reverse()) await f().catch((e: unknown) => errors.push(e))
    stack.length = 0
    if (errors.length > 0) throw errors[0]
  }
  try {
    const cluster = await startKubeCluster({ nodes: o.nodes ?? ['node-1'] })
    stack.push(() => cluster.stop())
    const admin = cluster.admin

    // The driver: its CSIDriver object and its own RBAC, from its module's deploy/ files.
    const driverSetup = [
      await csiDriverObject(o.tokenRequests ?? true),
      ...(await driverDeployObjects('rbac-secretproviderclass.yaml')),
      ...(await driverDeployObjects('rbac-secretprovidersyncing.yaml')),
    ]
    const applied = await applyObjects(admin, driverSetup)
    if (refusals(applied).length > 0) throw new Error(`driver set-up refused: ${refusals(applied).join('; ')}`)

    const applyProviderRbac = async (variant: Exclude<ProviderRbac, 'none'>): Promise<void> => {
      const objs = await kustomizeBuild(join(PACKAGE_ROOT, variant))
      const res = await applyObjects(admin, objs)
      if (refusals(res).length > 0) throw new Error(`${variant} refused: ${refusals(res).join('; ')}`)
    }
    if ((o.providerRbac ?? 'daemonset') !== 'none') await applyProviderRbac((o.providerRbac as any) ?? 'daemonset')

    // OpenBao with both auth methods pointed at this API server.
    const bao = await startOpenBao(o.bao ?? {})
    stack.push(() => bao.stop())
    await bao.writePolicy(APP_POLICY, 'path "secret/*" { capabilities = ["read"] }')
    const reviewer = await configureKubernetesAuth(cluster, bao)
    // jwt auth reads the API server's keys from its OIDC discovery endpoint, unauthenticated
    // (the binding Vault's documentation asks for).
    await admin.must(
      'POST',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'service-account-issuer-discovery-unauthenticated' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'system:service-account-issuer-discovery',
        },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:unauthenticated' }],
      },
      { ok: [409] },
    )
    await bao.enableAuth('jwt', JWT_AUTH_MOUNT)
    mustSucceed(
      'configure jwt auth',
      await bao.api('POST', `/v1/auth/${JWT_AUTH_MOUNT}/config`, {
        jwks_url: `${cluster.url}/openid/v1/jwks`,
        jwks_ca_pem: cluster.caPem,
        bound_issuer: cluster.issuer,
      }),
    )

    const nodes: KubeNode[] = []
    for (const name of cluster.nodes) {
      const n = await startNode(cluster, name, { rotationPollInterval: o.rotationPollInterval ?? '1s' })
      stack.push(() => n.stop())
      nodes.push(n)
    }
    const providers = new Map<string, ClusterProvider>()
    const allProviders: ClusterProvider[] = []
    const startProviderOn = async (node: KubeNode, args: string[] = o.providerArgs ?? []): Promise<ClusterProvider> => {
      const p = await startClusterProvider(cluster, node, { args: [`-vault-addr=${bao.addr}`, ...args] })
      providers.set(node.name, p)
      allProviders.push(p)
      return p
    }
    // Stopped before the driver (stack order), as on a node being drained.
    stack.push(async () => {
      for (const p of allProviders) await p.stop().catch(() => undefined)
    })
    if (o.startProviders ?? true) await Promise.all(nodes.map((n) => startProviderOn(n)))

    let seq = 0
    const world: E2eWorld = {
      cluster,
      bao,
      nodes,
      providers,
      node(name) {
        const n = name === undefined ? nodes[0] : nodes.find((x) => x.name === name)
        if (!n) throw new Error(`no node ${name}`)
        return n
      },
      provider(name) {
        const p = providers.get(name ?? nodes[0]!.name)
        if (!p) throw new Error(`no provider on ${name ?? nodes[0]!.name}`)
        return p
      },
      startProvider: startProviderOn,
      applyProviderRbac,
      async newNamespace(prefix, serviceAccounts = ['app']) {
        seq += 1
        const ns = `${prefix}-${seq}-${randomBytes(3).toString('hex')}`
        await ensureNamespace(admin, ns)
        for (const sa of serviceAccounts) await ensureServiceAccount(admin, ns, sa)
        return ns
      },
      async createSpc(namespace, name, spec) {
        const parameters: Record<string, unknown> = {}
        for (const [k, v] of Object.entries(spec.parameters)) parameters[k] = v
        await admin.must('POST', `/apis/secrets-store.csi.x-k8s.io/v1/namespaces/${namespace}/secretproviderclasses`, {
          apiVersion: 'secrets-store.csi.x-k8s.io/v1',
          kind: 'SecretProviderClass',
          metadata: { name },
          spec: { provider: 'vault', parameters, ...(spec.secretObjects ? { secretObjects: spec.secretObjects } : {}) },
        })
      },
      async createPod(namespace, name, p) {
        const sa = p.serviceAccount ?? 'app'
        const node = p.node ?? nodes[0]!.name
        const pod = await admin.must('POST', `/api/v1/namespaces/${namespace}/pods`, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name },
          spec: {
            nodeName: node,
            serviceAccountName: sa,
            containers: [
              {
                name: 'app',
                image: 'registry.example/app:1',
                volumeMounts: [{ name: VOLUME, mountPath: '/mnt/secrets-store', readOnly: true }],
              },
            ],
            volumes: [
              {
                name: VOLUME,
                csi: {
                  driver: CSI_DRIVER_NAME,
                  readOnly: true,
                  volumeAttributes: { secretProviderClass: p.spc, ...(p.volumeAttributes ?? {}) },
                },
              },
            ],
          },
        })
        return { namespace, name, uid: pod.metadata.uid, serviceAccount: sa, node }
      },
      async deletePod(namespace, name) {
        await admin.must('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}?gracePeriodSeconds=0`)
        await waitUntil(`pod ${namespace}/${name} gone`, async () => {
          const r = await admin.call('GET', `/api/v1/namespaces/${namespace}/pods/${name}`)
          return r.status === 404
        })
      },
      async kubernetesRole(role, namespaces, serviceAccounts = ['app'], policies = [APP_POLICY]) {
        mustSucceed(
          `kubernetes role ${role}`,
          await bao.api('POST', `/v1/auth/${KUBERNETES_AUTH_MOUNT}/role/${role}`, {
            bound_service_account_names: serviceAccounts,
            bound_service_account_namespaces: namespaces,
            audience: 'vault',
            token_policies: policies,
            token_ttl: '1h',
          }),
        )
      },
      async jwtRole(role, namespace, serviceAccount = 'app', policies = [APP_POLICY]) {
        mustSucceed(
          `jwt role ${role}`,
          await bao.api('POST', `/v1/auth/${JWT_AUTH_MOUNT}/role/${role}`, {
            role_type: 'jwt',
            user_claim: 'sub',
            bound_audiences: ['vault'],
            bound_subject: `system:serviceaccount:${namespace}:${serviceAccount}`,
            token_policies: policies,
            token_ttl: '1h',
          }),
        )
      },
      async kvPut(path, data) {
        mustSucceed(`kv put ${path}`, await bao.api('POST', `/v1/secret/data/${path}`, { data }))
      },
      async podStatus(pod, spc) {
        const r = await admin.call(
          'GET',
          `/apis/secrets-store.csi.x-k8s.io/v1/namespaces/${pod.namespace}/secretproviderclasspodstatuses/${pod.name}-${pod.namespace}-${spc}`,
        )
        return r.status === 200 ? r.body : undefined
      },
      async providerMounts(pod, provider) {
        const p = provider ?? world.provider(pod.node)
        return (await p.logLines()).filter(
          (l) => l.msg === 'mount' && l.outcome === 'success' && l.pod === `${pod.namespace}/${pod.name}`,
        ).length
      },
      async republishThroughToProvider(pod, provider) {
        const before = await world.providerMounts(pod, provider)
        await waitUntil(
          `a republish of ${pod.namespace}/${pod.name} reaching the provider`,
          async () => {
            const r = await world.node(pod.node).publish(pod.namespace, pod.name)
            if (!r.ok) throw new Error(`republish failed: ${r.message}`)
            return (await world.providerMounts(pod, provider)) > before
          },
          30_000,
          250,
        )
      },
      async tokensSeen() {
        const out = [reviewer.token]
        for (const p of allProviders) out.push((await readFile(join(p.serviceAccountDir, 'token'), 'utf8')).trim())
        return out
      },
      stop: unwind,
    }
    return world
  } catch (err) {
    await unwind().catch(() => undefined)
    throw err
  }
}
