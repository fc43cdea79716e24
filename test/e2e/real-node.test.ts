// The whole path on a real node (issue 38): a real kubelet v1.35.4 on containerd and runc starts the
// pods, the real Secrets Store CSI driver is registered with it, kube-controller-manager runs the
// provider's DaemonSet and kube-scheduler places the pods, and the provider runs from the image BuildKit
// builds from the Dockerfile as it is (its FROM image replaced by name with a locally assembled Node on
// Debian slim: test/support/real-node.ts, scripts/setup-node.sh). One node for every case of this file.
//
// Every address reached is on the loopback range: pods use the host network (there is no pod network)
// and the DaemonSet gets the test overlay of test/support/loopback-overlay.ts, nothing else.
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parse } from 'yaml'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { csiDriverObject, configureKubernetesAuth, KUBERNETES_AUTH_MOUNT } from '../support/e2e.js'
import { HELM, CHART_DIR } from '../support/helm.js'
import { applyObjects, refusals } from '../support/kube-apply.js'
import {
  driverDeployObjects,
  ensureNamespace,
  ensureServiceAccount,
  startKubeCluster,
  waitUntil,
  type K8sObject,
  type KubeCluster,
} from '../support/kube-cluster.js'
import { findLeaks } from '../support/leaks.js'
import { loopbackOverlay, type LoopbackOptions } from '../support/loopback-overlay.js'
import { dockerStages, execForm, kustomizeBuild, parseDockerfile, run } from '../support/manifests.js'
import { mustSucceed, startOpenBao, type OpenBao } from '../support/openbao.js'
import { freePort } from '../support/ports.js'
import {
  BUSYBOX_IMAGE,
  buildImages,
  metricSum,
  realNodeMissing,
  startControllers,
  startRealNode,
  type Controllers,
  type ImageBuild,
  type RealNode,
} from '../support/real-node.js'
import { VAULT_HELM_DEFAULT_ARGS, VAULT_HELM_PROBE } from '../support/vault-helm.js'

t.setTimeout(45 * 60_000)

const NODE = 'node-1'
const PROVIDER_NS = 'vault-csi-provider'
const CSI_DRIVER = 'secrets-store.csi.k8s.io'

let dir: string
let cluster: KubeCluster
let controllers: Controllers
let node: RealNode
let bao: OpenBao
let auditFile: string
let images: ImageBuild[]
const secretValues: string[] = []

/** The image references: the chart's default tag (its appVersion) for the first build, as the README installs it. */
async function imageRefs(): Promise<[string, string]> {
  const chart = parse(await readFile(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { appVersion: string }
  const repo = 'localhost/vault-csi-provider-ts'
  return [`${repo}:${chart.appVersion}`, `${repo}:${chart.appVersion}-second-build`]
}

t.before(async () => {
  const missing = realNodeMissing()
  if (missing !== undefined) throw new Error(missing)
  dir = await mkdtemp(join(tmpdir(), 'vcp-realnode-'))
  const [ref1, ref2] = await imageRefs()
  // The two builds run while the cluster starts: they take the longest.
  const building = buildImages(dir, [
    { ref: ref1, revision: 'real-node-1' },
    { ref: ref2, revision: 'real-node-2' },
  ])
  building.catch(() => undefined)
  cluster = await startKubeCluster({ nodes: [NODE], auditTokenBodies: true })
  const driverSetup = [
    await csiDriverObject(true),
    ...(await driverDeployObjects('rbac-secretproviderclass.yaml')),
    ...(await driverDeployObjects('rbac-secretprovidersyncing.yaml')),
  ]
  const applied = await applyObjects(cluster.admin, driverSetup)
  if (refusals(applied).length > 0) throw new Error(`driver set-up refused: ${refusals(applied).join('; ')}`)
  controllers = await startControllers(cluster, dir)
  bao = await startOpenBao()
  auditFile = await bao.enableFileAudit()
  await configureKubernetesAuth(cluster, bao)
  node = await startRealNode(cluster, join(dir, 'node'), {
    name: NODE,
    syncFrequency: '10s',
    rotationPollInterval: '5s',
  })
  const built = await building
  images = built.images
  for (const image of images) await node.importImage(image.tar)
})

t.teardown(async () => {
  // The controllers first: a DaemonSet would put its pod back while the node stops its pods.
  await controllers?.stop().catch(() => undefined)
  await node?.stop()
  await bao?.stop()
  await cluster?.stop()
  if (dir !== undefined && process.env.VCP_KEEP_TEST_DIRS !== '1') await rm(dir, { recursive: true, force: true })
})

// ---------------------------------------------------------------- helpers

let seq = 0
async function newNamespace(prefix: string): Promise<string> {
  seq += 1
  const ns = `${prefix}-${seq}`
  await ensureNamespace(cluster.admin, ns)
  await ensureServiceAccount(cluster.admin, ns, 'app')
  return ns
}

/** A kubernetes-auth role for ns/app (audience vault, as the CSIDriver's tokenRequests) with one policy. */
async function role(ns: string, policyHcl: string): Promise<{ role: string; policy: string }> {
  const policy = `${ns}-policy`
  await bao.writePolicy(policy, policyHcl)
  mustSucceed(
    `role ${ns}-app`,
    await bao.api('POST', `/v1/auth/${KUBERNETES_AUTH_MOUNT}/role/${ns}-app`, {
      bound_service_account_names: ['app'],
      bound_service_account_namespaces: [ns],
      audience: 'vault',
      token_policies: [policy],
      token_ttl: '1h',
    }),
  )
  return { role: `${ns}-app`, policy }
}

const readPolicy = (path: string): string => `path "${path}" { capabilities = ["read"] }`

async function kvPut(path: string, data: Record<string, string>): Promise<void> {
  secretValues.push(...Object.values(data))
  mustSucceed(`kv put ${path}`, await bao.api('POST', `/v1/secret/data/${path}`, { data }))
}

async function createSpc(ns: string, name: string, roleName: string, objects: unknown[], secretObjects?: unknown[]) {
  await cluster.admin.must('POST', `/apis/secrets-store.csi.x-k8s.io/v1/namespaces/${ns}/secretproviderclasses`, {
    apiVersion: 'secrets-store.csi.x-k8s.io/v1',
    kind: 'SecretProviderClass',
    metadata: { name },
    spec: {
      provider: 'vault',
      parameters: {
        vaultAddress: bao.addr,
        roleName,
        vaultAuthMountPath: KUBERNETES_AUTH_MOUNT,
        objects: JSON.stringify(objects),
      },
      ...(secretObjects ? { secretObjects } : {}),
    },
  })
}

/** A busybox pod with the SecretProviderClass's volume at /mnt/secrets; the scheduler places it. */
async function createPod(ns: string, name: string, spc: string, script: string): Promise<{ uid: string }> {
  const pod = await cluster.admin.must('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      hostNetwork: true,
      serviceAccountName: 'app',
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'app',
          image: BUSYBOX_IMAGE,
          imagePullPolicy: 'Never',
          command: ['/bin/sh', '-c', script],
          volumeMounts: [{ name: 'secrets', mountPath: '/mnt/secrets', readOnly: true }],
        },
      ],
      volumes: [
        {
          name: 'secrets',
          csi: { driver: CSI_DRIVER, readOnly: true, volumeAttributes: { secretProviderClass: spc } },
        },
      ],
    },
  })
  return { uid: pod.metadata.uid }
}

/** Prints the file at its first instruction, then each new content it sees. */
const WATCH_PASSWORD =
  'cat /mnt/secrets/password; echo; last=$(cat /mnt/secrets/password); ' +
  'while sleep 1; do v=$(cat /mnt/secrets/password); [ "$v" != "$last" ] && echo "changed to $v"; last=$v; done'

async function getPod(ns: string, name: string): Promise<any> {
  return cluster.admin.must('GET', `/api/v1/namespaces/${ns}/pods/${name}`)
}

async function waitRunning(ns: string, name: string, timeoutMs = 180_000): Promise<any> {
  return waitUntil(
    `pod ${ns}/${name} Running`,
    async () => {
      const p = await getPod(ns, name)
      return p.status?.phase === 'Running' ? p : undefined
    },
    timeoutMs,
    250,
  )
}

async function events(ns: string, name?: string): Promise<any[]> {
  const sel = name === undefined ? '' : `?fieldSelector=involvedObject.name%3D${name}`
  return (await cluster.admin.must('GET', `/api/v1/namespaces/${ns}/events${sel}`)).items
}

async function deletePodAndWait(ns: string, name: string): Promise<void> {
  await cluster.admin.must('DELETE', `/api/v1/namespaces/${ns}/pods/${name}`)
  await waitUntil(
    `pod ${ns}/${name} gone`,
    async () => (await cluster.admin.call('GET', `/api/v1/namespaces/${ns}/pods/${name}`)).status === 404,
    120_000,
    250,
  )
}

async function providerPods(): Promise<any[]> {
  return (await cluster.admin.must('GET', `/api/v1/namespaces/${PROVIDER_NS}/pods`)).items
}

const isReady = (p: any): boolean =>
  (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True')

/** The one provider pod of the DaemonSet `name` once it runs `image` and is Ready. */
async function waitProviderReady(image: string, timeoutMs = 240_000): Promise<any> {
  return waitUntil(
    `a Ready provider pod running ${image}`,
    async () => {
      const pods = (await providerPods()).filter((p) => p.metadata.deletionTimestamp === undefined)
      return pods.length === 1 && pods[0].spec.containers[0].image === image && isReady(pods[0]) ? pods[0] : undefined
    },
    timeoutMs,
    500,
  )
}

async function waitNoProviderPods(): Promise<void> {
  await waitUntil('no provider pod left', async () => (await providerPods()).length === 0, 180_000, 500)
}

/** The DaemonSet of daemonset/ (kustomize), with the test overlay. */
async function kustomizeObjects(image: string, healthPort: number): Promise<K8sObject[]> {
  return loopbackOverlay(await kustomizeBuild(join(PACKAGE_ROOT, 'daemonset')), overlay(image, healthPort))
}

function overlay(image: string, healthPort?: number): LoopbackOptions {
  return {
    image,
    apiServerPort: cluster.port,
    providersDir: node.providersDir,
    vaultAddr: bao.addr,
    ...(healthPort !== undefined ? { healthPort } : {}),
  }
}

async function apply(objects: K8sObject[]): Promise<void> {
  const res = await applyObjects(cluster.admin, objects)
  if (refusals(res).length > 0) throw new Error(`refused: ${refusals(res).join('; ')}`)
}

/** /proc/<pid>/status as name -> value. */
async function procStatus(pid: number): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for (const line of (await readFile(`/proc/${pid}/status`, 'utf8')).split('\n')) {
    const i = line.indexOf(':')
    if (i > 0) out.set(line.slice(0, i), line.slice(i + 1).trim())
  }
  return out
}

/** Options of the mount at / in the process's mount namespace. */
async function rootMountOptions(pid: number): Promise<string[]> {
  const line = (await readFile(`/proc/${pid}/mountinfo`, 'utf8')).split('\n').find((l) => l.split(' ')[4] === '/')
  return (line?.split(' ')[5] ?? '').split(',')
}

/**
 * What every provider container wrote so far, kept here: the kubelet removes a pod's log files with
 * the pod, and the leak check at the end reads them all.
 */
const providerLogs = new Map<string, string>()
async function keepProviderLogs(): Promise<void> {
  for (const d of await readdir(node.podLogsDir)) {
    if (!d.startsWith(`${PROVIDER_NS}_`)) continue
    const name = d.split('_')[1]!
    for (const c of ['provider', 'vault-csi-provider']) {
      const text = await node.podLog(PROVIDER_NS, name, c)
      if (text !== '') providerLogs.set(`${d}/${c}`, text)
    }
  }
}

/** The provider's process as the manifests say: uid 65532, no capabilities or new privileges, seccomp, read-only root. */
async function hardened(t: Test, containerID: string): Promise<void> {
  const pid = await node.containerPid(containerID)
  const st = await procStatus(pid)
  t.equal(st.get('Uid'), '65532\t65532\t65532\t65532')
  t.equal(st.get('Gid'), '65532\t65532\t65532\t65532')
  for (const cap of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) t.equal(st.get(cap), '0000000000000000', cap)
  t.equal(st.get('NoNewPrivs'), '1')
  t.equal(st.get('Seccomp'), '2', 'seccomp filter (RuntimeDefault)')
  t.ok((await rootMountOptions(pid)).includes('ro'), 'read-only root filesystem')
  t.comment(`provider pid ${pid}: Uid ${st.get('Uid')} CapEff ${st.get('CapEff')} Seccomp ${st.get('Seccomp')}`)
}

/** A character a terminal would act on rather than show (C0 but tab and newline, DEL, C1). */
const hasControl = (text: string): boolean =>
  [...text].some((ch) => {
    const c = ch.charCodeAt(0)
    return (c < 0x20 && c !== 0x09 && c !== 0x0a) || (c >= 0x7f && c <= 0x9f)
  })

// ---------------------------------------------------------------- 4. the image and the manifests

let providerPodName: string
let healthPort1: number

t.test('4. the image from the Dockerfile runs as the DaemonSet of daemonset/, under the controllers', async (t) => {
  // The image: what the Dockerfile says, as BuildKit built it.
  const stages = dockerStages((await parseDockerfile(join(PACKAGE_ROOT, 'Dockerfile'))).instructions)
  const final = stages.at(-1)!
  const entrypoint = execForm(
    final.instructions.filter((i) => i.instruction === 'ENTRYPOINT').at(-1)!.value,
    'ENTRYPOINT',
  )
  const exported = await imageConfigOf(images[0]!.tar)
  t.same(exported.config.Entrypoint, entrypoint, 'the image runs the Dockerfile’s ENTRYPOINT')
  t.equal(exported.config.User, final.instructions.filter((i) => i.instruction === 'USER').at(-1)!.value)
  t.equal(exported.config.Labels['org.opencontainers.image.revision'], 'real-node-1', 'the first build')
  for (const step of images[0]!.steps) t.comment(`buildkit: ${step}`)

  healthPort1 = await freePort()
  await apply(await kustomizeObjects(images[0]!.ref, healthPort1))
  const pod = await waitProviderReady(images[0]!.ref)
  providerPodName = pod.metadata.name
  t.match(pod.metadata.ownerReferences, [{ kind: 'DaemonSet', name: 'vault-csi-provider', controller: true }])
  t.equal(pod.spec.nodeName, NODE)
  const podEvents = await events(PROVIDER_NS, pod.metadata.name)
  const scheduled = podEvents.find((e) => e.reason === 'Scheduled')
  t.equal(
    scheduled?.reportingComponent || scheduled?.source?.component,
    'default-scheduler',
    'placed by kube-scheduler',
  )
  t.comment(`scheduler: ${scheduled?.message}`)
  const ds = await cluster.admin.must('GET', `/apis/apps/v1/namespaces/${PROVIDER_NS}/daemonsets/vault-csi-provider`)
  t.match(ds.status, { desiredNumberScheduled: 1, numberReady: 1 }, 'the DaemonSet controller counts it')

  // The kubelet ran the probes: startup first, then readiness made it Ready.
  const kubeletLog = await readFile(node.kubeletLog, 'utf8')
  const probeLines = kubeletLog
    .split('\n')
    .filter((l) => l.includes('"SyncLoop (probe)"') && l.includes(`pod="${PROVIDER_NS}/${pod.metadata.name}"`))
  t.ok(
    probeLines.some((l) => l.includes('probe="startup" status="started"')),
    'startup probe passed',
  )
  t.ok(
    probeLines.some((l) => l.includes('probe="readiness" status="ready"')),
    'readiness probe passed',
  )
  for (const l of probeLines) t.comment(`kubelet: ${l.slice(l.indexOf('"SyncLoop'))}`)
  const status = pod.status.containerStatuses.find((c: any) => c.name === 'provider')
  t.match(
    status,
    { ready: true, started: true, restartCount: 0 },
    `ready, never restarted (last state: ${JSON.stringify(status.lastState)})`,
  )

  await hardened(t, status.containerID)

  // The socket in the providers directory, with the modes docs/configuration.md states.
  const sock = await stat(join(node.providersDir, 'vault.sock'))
  t.ok(sock.isSocket())
  t.equal(sock.mode & 0o777, 0o600, 'vault.sock 0600')
  t.equal(sock.uid, 65532)
  const d = await stat(node.providersDir)
  t.same([d.uid, d.gid, (d.mode & 0o7777).toString(8)], [0, 65532, '1775'], 'providers directory root:65532 1775')
  const init = await node.podLog(PROVIDER_NS, pod.metadata.name, 'prepare-socket-dir')
  t.match(init, '"msg":"provider directory ready"')
  t.comment(`prepare-socket-dir: ${init}`)
})

async function imageConfigOf(tar: string): Promise<any> {
  const manifest = JSON.parse(must(await run('tar', ['-xOf', tar, 'manifest.json']), 'manifest.json'))
  return JSON.parse(must(await run('tar', ['-xOf', tar, manifest[0].Config]), 'image config'))
}

function must(res: { code: number; stdout: string; stderr: string }, what: string): string {
  if (res.code !== 0) throw new Error(`${what}: ${res.stderr}`)
  return res.stdout
}

// ---------------------------------------------------------------- 1. ordering

let orderingNs: string
let orderingRole: string

t.test('1. no container starts before the files are there; the FailedMount event says why', async (t) => {
  const ns = await newNamespace('ordering')
  orderingNs = ns
  await kvPut(`${ns}/db`, { password: 'ordering-Qm7r' })
  // The role's policy reads another path: the pod's role may not read this secret.
  const { role: r, policy } = await role(ns, readPolicy(`secret/data/${ns}/other`))
  orderingRole = r
  await createSpc(ns, 'db', r, [{ objectName: 'password', secretPath: `secret/data/${ns}/db`, secretKey: 'password' }])
  const { uid } = await createPod(ns, 'app', 'db', WATCH_PASSWORD)

  const failed = await waitUntil(
    'the kubelet’s FailedMount event',
    async () => (await events(ns, 'app')).find((e) => e.reason === 'FailedMount'),
    180_000,
    500,
  )
  t.equal(failed.source?.component, 'kubelet')
  const message: string = failed.message
  t.comment(`FailedMount: ${message}`)
  t.match(message, 'MountVolume.SetUp failed for volume "secrets"')
  t.match(message, 'object "password"', 'names the object')
  t.match(message, `secret/data/${ns}/db`, 'names the Vault call')
  t.match(message, `role "${r}"`, 'names the role')
  t.match(message, 'permission denied', 'gives Vault’s reason')
  t.notOk(hasControl(message), 'no control characters')

  // The kubelet retries the mount (with back-off) and the pod stays where it is.
  const retried = await waitUntil(
    'the kubelet’s retry',
    async () => (await events(ns, 'app')).find((e) => e.reason === 'FailedMount' && e.count >= 3),
    120_000,
    500,
  )
  t.comment(`FailedMount x${retried.count}`)
  const pod = await getPod(ns, 'app')
  t.equal(pod.status.phase, 'Pending')
  t.equal(pod.status.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating')
  t.same(await node.podContainers(uid), [], 'containerd has no container of the pod, not even its sandbox')

  // Fix the policy: the kubelet's next retry mounts, and only then does the pod start.
  await bao.writePolicy(policy, readPolicy(`secret/data/${ns}/*`))
  await waitRunning(ns, 'app')
  const log = await waitUntil('the container’s first line', async () => node.podLog(ns, 'app', 'app'), 60_000, 250)
  t.equal(log.split('\n')[0], 'ordering-Qm7r', 'its first instruction read the file')
  const order = (await events(ns, 'app')).map((e) => `${e.reason}`)
  t.ok(order.indexOf('FailedMount') < order.indexOf('Started'), `events in order: ${order.join(', ')}`)
})

// ---------------------------------------------------------------- 2. identity

t.test('2. the provider logs in with the token the kubelet requested for the pod', async (t) => {
  const ns = orderingNs
  const pod = await getPod(ns, 'app')
  const drv = await cluster.admin.must('GET', `/apis/storage.k8s.io/v1/csidrivers/${CSI_DRIVER}`)
  t.same(
    drv.spec.tokenRequests,
    [{ audience: 'vault' }, { audience: 'openbao' }],
    'the CSIDriver asks for audience vault (and openbao, for provider: openbao classes)',
  )
  const audit = await cluster.auditEvents()
  // The kubelet's TokenRequest for the pod, audience vault.
  const requested = audit.filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.objectRef?.subresource === 'token' &&
      e.objectRef.namespace === ns &&
      e.requestObject?.spec?.audiences?.includes('vault'),
  )
  t.ok(requested.length > 0, 'a TokenRequest for audience vault')
  const req = requested[0]!
  t.equal(req.user.username, `system:node:${NODE}`, 'made by the kubelet')
  t.same(req.requestObject.spec.audiences, ['vault'])
  t.match(
    req.requestObject.spec.boundObjectRef,
    { kind: 'Pod', name: 'app', uid: pod.metadata.uid },
    'bound to the pod',
  )
  const tokens = new Set(requested.map((e) => e.responseObject?.status?.token as string))
  // OpenBao's kubernetes auth had that token reviewed by the API server.
  const reviews = audit.filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.objectRef?.resource === 'tokenreviews' &&
      tokens.has(e.requestObject?.spec?.token),
  )
  t.ok(reviews.length > 0, 'a TokenReview of that very token')
  t.equal(reviews[0]!.user.username, 'system:serviceaccount:vault:token-reviewer', 'asked by OpenBao’s reviewer')
  t.equal(reviews[0]!.responseObject.status.authenticated, true)
  t.same(reviews[0]!.responseObject.status.audiences, ['vault'])
  t.equal(reviews[0]!.responseObject.status.user.username, `system:serviceaccount:${ns}:app`)
  t.same(reviews[0]!.responseObject.status.user.extra['authentication.kubernetes.io/pod-uid'], [pod.metadata.uid])
  // …and the login OpenBao audited carried it (its audit log holds the token's HMAC, not the token).
  const hashes = new Set<string>()
  for (const tok of tokens) {
    const h = await bao.api('POST', '/v1/sys/audit-hash/file', { input: tok })
    hashes.add(h.body?.hash ?? h.body?.data?.hash)
  }
  const logins = (await bao.readAuditLog(auditFile)).filter(
    (e) =>
      e.type === 'response' &&
      e.request?.path === `auth/${KUBERNETES_AUTH_MOUNT}/login` &&
      hashes.has(e.request?.data?.jwt),
  )
  t.ok(logins.length > 0, 'OpenBao’s login with the kubelet’s token')
  t.equal(logins[0].auth?.metadata?.role, orderingRole)
  t.equal(logins[0].auth?.metadata?.service_account_namespace, ns)
  t.equal(logins[0].auth?.metadata?.service_account_name, 'app')
  t.comment(
    `token ${createHash('sha256')
      .update([...tokens][0]!)
      .digest('hex')
      .slice(0, 12)} (sha256): TokenRequest by ${req.user.username} ` +
      `for pod uid ${pod.metadata.uid}, TokenReview by ${reviews[0]!.user.username}, login role ${logins[0].auth?.metadata?.role}`,
  )
})

// ---------------------------------------------------------------- 3. rotation, sync, clean-up

t.test('3. rotation by the kubelet’s republish, secretObjects sync, and nothing left after delete', async (t) => {
  const ns = await newNamespace('rotation')
  await kvPut(`${ns}/db`, { password: 'rotation-v1-Hs2k' })
  const { role: r } = await role(ns, readPolicy(`secret/data/${ns}/*`))
  await createSpc(
    ns,
    'db',
    r,
    [{ objectName: 'password', secretPath: `secret/data/${ns}/db`, secretKey: 'password' }],
    [{ secretName: 'db-synced', type: 'Opaque', data: [{ objectName: 'password', key: 'password' }] }],
  )
  const { uid } = await createPod(ns, 'app', 'db', WATCH_PASSWORD)
  await waitRunning(ns, 'app')
  const secret = async (): Promise<string | undefined> => {
    const r2 = await cluster.admin.call('GET', `/api/v1/namespaces/${ns}/secrets/db-synced`)
    return r2.status === 200 ? Buffer.from(r2.body.data?.password ?? '', 'base64').toString() : undefined
  }
  t.equal(
    await waitUntil('the synced Secret', secret, 60_000, 250),
    'rotation-v1-Hs2k',
    'secretObjects created the Secret',
  )
  t.equal((await node.podLog(ns, 'app', 'app')).split('\n')[0], 'rotation-v1-Hs2k')
  const target = join(node.kubeletRoot, 'pods', uid, 'volumes', 'kubernetes.io~csi', 'secrets', 'mount')
  t.ok(node.podMounts(uid).includes(target), 'a mount at the volume’s target')

  const drv = await cluster.admin.must('GET', `/apis/storage.k8s.io/v1/csidrivers/${CSI_DRIVER}`)
  t.equal(drv.spec.requiresRepublish, true, 'the CSIDriver asks the kubelet to republish')
  const rotationsBefore = metricSum(await node.driverMetrics(), 'rotation_reconcile_total')
  await kvPut(`${ns}/db`, { password: 'rotation-v2-Pw9d' })
  const log = await waitUntil(
    'the container seeing the new value',
    async () => {
      const l = await node.podLog(ns, 'app', 'app')
      return l.includes('changed to rotation-v2-Pw9d') ? l : undefined
    },
    180_000,
    1000,
  )
  t.comment(`container output: ${log.split('\n').join(' | ')}`)
  t.ok(
    metricSum(await node.driverMetrics(), 'rotation_reconcile_total') > rotationsBefore,
    'the driver’s rotation count',
  )
  t.equal(
    await waitUntil(
      'the Secret updated',
      async () => ((await secret()) === 'rotation-v2-Pw9d' ? 'rotation-v2-Pw9d' : undefined),
      60_000,
      500,
    ),
    'rotation-v2-Pw9d',
  )
  // The driver gives a synced Secret its owner (the pod's SecretProviderClassPodStatus) afterwards, in a
  // round over its node's pod statuses every 5 s; the garbage collector removes the Secret with it.
  const owned = await waitUntil(
    'the synced Secret’s owner reference',
    async () => {
      const r2 = await cluster.admin.call('GET', `/api/v1/namespaces/${ns}/secrets/db-synced`)
      return (r2.body?.metadata?.ownerReferences ?? []).some((o: any) => o.kind === 'SecretProviderClassPodStatus')
    },
    120_000,
    1000,
  ).catch(async () => {
    const said = (await readFile(node.driverLog, 'utf8')).split('\n').filter((l) => l.includes('owner ref'))
    return `none after 120 s; the driver said: ${said.slice(-3).join(' | ')}`
  })
  t.equal(owned, true, 'the driver made the pod’s SecretProviderClassPodStatus the Secret’s owner')

  await deletePodAndWait(ns, 'app')
  t.same(node.podMounts(uid), [], 'no mount left under the pod’s directory')
  // The kubelet's housekeeping removes the pod's directory, its container garbage collection (every
  // minute) the exited container and the sandbox.
  await waitUntil(
    'the pod’s directory and containers removed',
    async () => !existsSync(join(node.kubeletRoot, 'pods', uid)) && (await node.podContainers(uid)).length === 0,
    180_000,
    1000,
  )
  t.notOk(existsSync(join(node.kubeletRoot, 'pods', uid)), 'the kubelet removed the pod’s directory')
  t.same(await node.podContainers(uid), [], 'no container or sandbox left in containerd')
  const statuses = await cluster.admin.must(
    'GET',
    `/apis/secrets-store.csi.x-k8s.io/v1/namespaces/${ns}/secretproviderclasspodstatuses`,
  )
  t.same(statuses.items, [], 'no SecretProviderClassPodStatus left')
  const collected = await waitUntil(
    'the synced Secret collected',
    async () => (await secret()) === undefined,
    180_000,
    1000,
  )
    .then(() => true)
    .catch(() => false)
  const left = await cluster.admin.call('GET', `/api/v1/namespaces/${ns}/secrets/db-synced`)
  t.ok(collected, `the synced Secret went with its last pod (left: ${JSON.stringify(left.body?.metadata ?? null)})`)
})

// ---------------------------------------------------------------- 5. upgrade

t.test('5. a second build rolls out with maxSurge while pods mount and republish: no failed mount', async (t) => {
  const ns = await newNamespace('upgrade')
  await kvPut(`${ns}/db`, { password: 'upgrade-Lk4c' })
  const { role: r } = await role(ns, readPolicy(`secret/data/${ns}/*`))
  await createSpc(ns, 'db', r, [{ objectName: 'password', secretPath: `secret/data/${ns}/db`, secretKey: 'password' }])
  // Running pods, republished by the kubelet every 10 s through the rollout.
  for (const name of ['steady-1', 'steady-2']) await createPod(ns, name, 'db', WATCH_PASSWORD)
  for (const name of ['steady-1', 'steady-2']) await waitRunning(ns, name)
  const m0 = await node.driverMetrics()
  const before = {
    publish: metricSum(m0, 'node_publish_total'),
    publishErrors: metricSum(m0, 'node_publish_error_total'),
    rotations: metricSum(m0, 'rotation_reconcile_total'),
    rotationErrors: metricSum(m0, 'rotation_reconcile_error_total'),
  }
  const oldPod = providerPodName
  const second = await imageConfigOf(images[1]!.tar)
  t.equal(second.config.Labels['org.opencontainers.image.revision'], 'real-node-2', 'a second build of the Dockerfile')

  // The image tag of a second build; on the host network the new pod's health port must differ
  // from the old one's while both run (a pod network gives each pod its own).
  const ds0 = await cluster.admin.must('GET', `/apis/apps/v1/namespaces/${PROVIDER_NS}/daemonsets/vault-csi-provider`)
  t.match(ds0.spec.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } })
  await apply(await kustomizeObjects(images[1]!.ref, await freePort()))

  let maxProviders = 0
  let created = 0
  const done = (async () => {
    const pod = await waitProviderReady(images[1]!.ref, 300_000)
    await waitUntil(
      'the old provider pod gone',
      async () => !(await providerPods()).some((p) => p.metadata.name === oldPod),
      120_000,
      500,
    )
    return pod
  })()
  let finished = false
  done.then(
    () => (finished = true),
    () => (finished = true),
  )
  // New pods mount all through the rollout, one every 2 s.
  while (!finished) {
    created += 1
    await createPod(ns, `during-${created}`, 'db', WATCH_PASSWORD)
    const running = (await providerPods()).filter((p) => p.status?.phase === 'Running').length
    maxProviders = Math.max(maxProviders, running)
    await keepProviderLogs()
    await new Promise((r2) => setTimeout(r2, 2000))
  }
  const newPod = await done
  await keepProviderLogs()
  for (let i = 1; i <= created; i++) await waitRunning(ns, `during-${i}`)
  // Every pod republished to the new provider after the handover (the kubelet's sync, every 10 s).
  const atHandover = metricSum(await node.driverMetrics(), 'rotation_reconcile_total')
  await waitUntil(
    'a republish of every pod after the handover',
    async () => metricSum(await node.driverMetrics(), 'rotation_reconcile_total') - atHandover >= created + 2,
    120_000,
    1000,
  )

  t.equal(maxProviders, 2, 'maxSurge: the new provider pod ran beside the old one')
  t.not(newPod.metadata.name, oldPod)
  const failed = (await events(ns)).filter((e) => e.reason === 'FailedMount')
  t.same(
    failed.map((e) => e.message),
    [],
    'no FailedMount event',
  )
  const m1 = await node.driverMetrics()
  const after = {
    publish: metricSum(m1, 'node_publish_total'),
    publishErrors: metricSum(m1, 'node_publish_error_total'),
    rotations: metricSum(m1, 'rotation_reconcile_total'),
    rotationErrors: metricSum(m1, 'rotation_reconcile_error_total'),
  }
  t.equal(after.publishErrors - before.publishErrors, 0, 'the driver counted no failed publish')
  t.equal(after.rotationErrors - before.rotationErrors, 0, 'the driver counted no failed republish')
  t.ok(after.publish - before.publish >= created, 'every new pod was published')
  t.ok(after.rotations > before.rotations, 'running pods were republished')
  t.comment(
    `${created} pods created during the rollout; driver: node_publish_total +${after.publish - before.publish} (mounts and republishes), ` +
      `rotation_reconcile_total +${after.rotations - before.rotations} (republishes that reached the provider), ` +
      `node_publish_error_total +${after.publishErrors - before.publishErrors}, rotation_reconcile_error_total +${after.rotationErrors - before.rotationErrors}; ` +
      `FailedMount events: ${failed.length}; providers at once: ${maxProviders}`,
  )
  for (const name of ['steady-1', 'steady-2', ...Array.from({ length: created }, (_, i) => `during-${i + 1}`)]) {
    t.equal((await node.podLog(ns, name, 'app')).split('\n')[0], 'upgrade-Lk4c', `${name} read its file`)
  }
  providerPodName = newPod.metadata.name
})

// ---------------------------------------------------------------- 6. the chart, and vault-helm's DaemonSet

async function mountsWithProvider(t: Test, prefix: string): Promise<void> {
  const ns = await newNamespace(prefix)
  await kvPut(`${ns}/db`, { password: `${prefix}-Zr8e` })
  const { role: r } = await role(ns, readPolicy(`secret/data/${ns}/*`))
  await createSpc(ns, 'db', r, [{ objectName: 'password', secretPath: `secret/data/${ns}/db`, secretKey: 'password' }])
  await createPod(ns, 'app', 'db', WATCH_PASSWORD)
  await waitRunning(ns, 'app')
  t.equal((await node.podLog(ns, 'app', 'app')).split('\n')[0], `${prefix}-Zr8e`, `${prefix}: a pod mounts`)
  await deletePodAndWait(ns, 'app')
}

t.test('6. helm install of daemonset/chart with the README’s values; then vault-helm’s DaemonSet', async (t) => {
  // daemonset/'s objects go with their namespace; the chart then installs into a new one.
  await keepProviderLogs()
  await cluster.admin.must('DELETE', `/api/v1/namespaces/${PROVIDER_NS}`)
  await waitUntil(
    'namespace vault-csi-provider gone',
    async () => (await cluster.admin.call('GET', `/api/v1/namespaces/${PROVIDER_NS}`)).status === 404,
    180_000,
    500,
  )

  const kubeconfig = join(dir, 'helm.kubeconfig')
  await cluster.writeKubeconfig(kubeconfig)
  const repo = images[0]!.ref.slice(0, images[0]!.ref.lastIndexOf(':'))
  // The chart sets the Vault address from the README's values: the overlay adds no VAULT_ADDR.
  const post = { ...overlay(images[0]!.ref, await freePort()), vaultAddr: undefined }
  const helmEnv = {
    ...process.env,
    KUBECONFIG: kubeconfig,
    HELM_CACHE_HOME: join(dir, 'helm-cache'),
    HELM_CONFIG_HOME: join(dir, 'helm-config'),
    HELM_DATA_HOME: join(dir, 'helm-data'),
  }
  const install = await run(
    HELM,
    [
      'install',
      'vault-csi-provider',
      CHART_DIR,
      '-n',
      PROVIDER_NS,
      '--create-namespace',
      // The README's values.
      '--set',
      `csi.image.repository=${repo}`,
      '--set',
      `global.externalVaultAddr=${bao.addr}`,
      '--set',
      `csi.vaultAddrAllowlist={${bao.addr}}`,
      // The test overlay (loopback-overlay.ts), as helm's post-renderer.
      '--post-renderer',
      process.execPath,
      '--post-renderer-args',
      join(PACKAGE_ROOT, 'dist', 'test', 'support', 'loopback-overlay.js'),
      '--post-renderer-args',
      JSON.stringify(post),
    ],
    { env: helmEnv },
  )
  t.equal(install.code, 0, `helm install: ${install.stderr}`)
  t.comment(install.stdout.split('\n').slice(0, 6).join(' | '))
  const pod = await waitProviderReady(images[0]!.ref)
  const chartDs = await cluster.admin.must(
    'GET',
    `/apis/apps/v1/namespaces/${PROVIDER_NS}/daemonsets/vault-csi-provider`,
  )
  t.match(chartDs.metadata.labels, { 'app.kubernetes.io/managed-by': 'Helm' }, 'the chart’s DaemonSet')
  t.match(pod.metadata.ownerReferences, [{ kind: 'DaemonSet', uid: chartDs.metadata.uid }], 'runs its pod')
  t.same(
    pod.spec.containers[0].args.filter((a: string) => a.startsWith('-vault-addr')),
    [`-vault-addr=${bao.addr}`, `-vault-addr-allowlist=${bao.addr}`],
    'the README’s values reached the daemon',
  )
  await hardened(t, pod.status.containerStatuses.find((c: any) => c.name === 'provider').containerID)
  await mountsWithProvider(t, 'chart')
  const uninstall = await run(HELM, ['uninstall', 'vault-csi-provider', '-n', PROVIDER_NS], { env: helmEnv })
  await keepProviderLogs()
  t.equal(uninstall.code, 0, `helm uninstall: ${uninstall.stderr}`)
  await waitNoProviderPods()

  // vault-helm's DaemonSet as test/deploy/vault-helm.test.ts knows it, with the README's one extra line
  // (csi.daemonSet.securityContext.container.runAsUser=0), its ServiceAccount and the HMAC key's RBAC.
  const base = await kustomizeBuild(join(PACKAGE_ROOT, 'daemonset'))
  const rbac = base.filter((o) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(o.kind))
  const labels = { 'app.kubernetes.io/name': 'vault-csi-provider', 'app.kubernetes.io/instance': 'vault' }
  const vaultHelm: K8sObject = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'vault-csi-provider', namespace: PROVIDER_NS },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: 'vault-csi-provider',
          containers: [
            {
              name: 'vault-csi-provider',
              image: images[0]!.ref,
              args: VAULT_HELM_DEFAULT_ARGS,
              env: [{ name: 'VAULT_ADDR', value: bao.addr }],
              securityContext: { runAsUser: 0 },
              volumeMounts: [{ name: 'providervol', mountPath: '/provider' }],
              livenessProbe: { httpGet: { path: VAULT_HELM_PROBE.path, port: VAULT_HELM_PROBE.port, scheme: 'HTTP' } },
              readinessProbe: { httpGet: { path: VAULT_HELM_PROBE.path, port: VAULT_HELM_PROBE.port, scheme: 'HTTP' } },
            },
          ],
          volumes: [{ name: 'providervol', hostPath: { path: '/var/run/secrets-store-csi-providers' } }],
        },
      },
    },
  }
  await apply(loopbackOverlay([...rbac, vaultHelm], overlay(images[0]!.ref)))
  const vhPod = await waitProviderReady(images[0]!.ref)
  t.same(vhPod.spec.containers[0].args, VAULT_HELM_DEFAULT_ARGS, 'exactly vault-helm’s arguments')
  t.match(vhPod.spec.containers[0].readinessProbe.httpGet, { path: '/health/ready', port: 8080 }, 'and its probe')
  t.match(vhPod.status.containerStatuses[0], { ready: true, restartCount: 0 }, 'the kubelet found it ready')
  await mountsWithProvider(t, 'vault-helm')
  await keepProviderLogs()
  await cluster.admin.must('DELETE', `/apis/apps/v1/namespaces/${PROVIDER_NS}/daemonsets/vault-csi-provider`)
  await waitNoProviderPods()
})

t.test('no secret value or token in the provider’s or the driver’s log', async (t) => {
  await keepProviderLogs()
  const provider = [...providerLogs.values()].join('\n')
  t.ok(provider.includes('"msg":"mount"'), 'the provider logged its Mounts')
  t.same(findLeaks(provider, secretValues), [], 'provider')
  t.same(findLeaks(await readFile(node.driverLog, 'utf8'), secretValues), [], 'driver')
})
