// End to end, two nodes: the HMAC key Secret behind object versions, created by whichever
// provider needs it first when both start together on an empty cluster, and nothing else
// readable with the provider's RBAC; then provider restarts by socket handover while the
// real driver keeps republishing and publishing, and what the driver does when a republish
// finds no provider.
import { readFile } from 'node:fs/promises'
import t from 'tap'
import { driverMount, readMountedFiles } from '../support/driver-client.js'
import { spcParameters, startE2e, type AppPod, type E2eWorld } from '../support/e2e.js'
import { requestToken, waitUntil, type AuditEvent } from '../support/kube-cluster.js'
import { PROVIDER_NAMESPACE, metricSum, startClusterProvider, type ClusterProvider } from '../support/kube-node.js'
import { findLeaks } from '../support/leaks.js'
import { tempDirFor } from '../support/tmp.js'

t.setTimeout(5 * 60_000)

const HMAC_SECRET = 'vault-csi-provider-hmac-key'
const PROVIDER_USER = 'system:serviceaccount:vault-csi-provider:vault-csi-provider'
let w: E2eWorld
const extraProviders: ClusterProvider[] = []

t.before(async () => {
  // No provider yet: the test starts them together.
  w = await startE2e({ nodes: ['node-1', 'node-2'], startProviders: false })
})
t.teardown(async () => {
  for (const p of extraProviders) await p.stop().catch(() => undefined)
  await w?.stop()
})

async function providerSecrets(): Promise<string[]> {
  const list = await w.cluster.admin.must('GET', `/api/v1/namespaces/${PROVIDER_NAMESPACE}/secrets`)
  return (list.items as any[]).map((s) => s.metadata.name).sort()
}

t.test('HMAC key: two providers start together on an empty cluster; one Secret, one set of versions', async (t) => {
  t.same(await providerSecrets(), [], 'no Secret in the provider namespace yet')
  // node-1's provider finds the API server in-cluster (KUBERNETES_SERVICE_HOST/PORT); node-2's
  // is given -kube-api-url: both trust the cluster's CA from ca.crt in the service-account dir.
  const [one, two] = await Promise.all([
    w.startProvider(w.node('node-1')),
    w.startProvider(w.node('node-2'), [`-kube-api-url=${w.cluster.url}`]),
  ])
  t.ok(one && two)

  const ns = await w.newNamespace('hmac')
  await w.kubernetesRole('hmac-app', [ns])
  await w.kvPut(`${ns}/app`, { a: 'hmac-value-a', b: 'hmac-value-b' })
  await w.createSpc(ns, 'spc', {
    parameters: spcParameters(w.bao, 'hmac-app', [
      { objectName: 'a', secretPath: `secret/data/${ns}/app`, secretKey: 'a' },
      { objectName: 'b', secretPath: `secret/data/${ns}/app`, secretKey: 'b' },
    ]),
  })
  const pods = await Promise.all(
    ['node-1', 'node-2'].map((node, i) => w.createPod(ns, `app-${i}`, { spc: 'spc', node })),
  )
  // Both first Mounts at the same moment: both providers need the key now.
  const results = await Promise.all(pods.map((p) => w.node(p.node).publish(ns, p.name)))
  for (const r of results) t.ok(r.ok, r.message)

  t.same(await providerSecrets(), [HMAC_SECRET], 'exactly one Secret exists')
  const secret = await w.cluster.admin.must('GET', `/api/v1/namespaces/${PROVIDER_NAMESPACE}/secrets/${HMAC_SECRET}`)
  t.equal(secret.immutable, true, 'immutable')
  t.equal(Buffer.from(secret.data.key, 'base64').length, 32, 'a 32-byte key')

  const versions = await Promise.all(
    pods.map(async (p) => {
      const st = await waitUntil(`status of ${p.name}`, () => w.podStatus(p, 'spc'))
      return Object.fromEntries((st.status.objects as any[]).map((o) => [o.id, o.version]))
    }),
  )
  t.same(Object.keys(versions[0]!).sort(), ['a', 'b'])
  t.same(versions[0], versions[1], 'both nodes produced the same object versions')

  // What the API server saw of the key: one create won; the key is then kept in memory.
  const keyCalls = async (): Promise<AuditEvent[]> =>
    (await w.cluster.auditEvents()).filter(
      (e) =>
        e.stage === 'ResponseComplete' &&
        e.user.username === PROVIDER_USER &&
        e.objectRef?.resource === 'secrets' &&
        e.objectRef.namespace === PROVIDER_NAMESPACE,
    )
  const before = await keyCalls()
  t.equal(before.filter((e) => e.verb === 'create' && e.responseStatus?.code === 201).length, 1, 'one create won')
  for (let i = 0; i < 3; i++) for (const p of pods) await w.republishThroughToProvider(p)
  t.equal(await w.providerMounts(pods[0]!, one), 4, "node-1's provider answered 4 Mounts")
  t.equal(await w.providerMounts(pods[1]!, two), 4, "node-2's provider answered 4 Mounts")
  t.equal((await keyCalls()).length, before.length, 'no further reads of the Secret: the key is kept in memory')
})

t.test('the provider’s RBAC: its own Secret only (403 from the API server for anything else)', async (t) => {
  const provider = w.provider('node-1')
  const token = (await readFile(`${provider.serviceAccountDir}/token`, 'utf8')).trim()
  const as = w.cluster.as(token)
  const ns = await w.newNamespace('rbac')
  for (const [namespace, name] of [
    [PROVIDER_NAMESPACE, 'not-the-hmac-key'],
    [ns, 'app-secret'],
  ] as const) {
    await w.cluster.admin.must('POST', `/api/v1/namespaces/${namespace}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name },
      stringData: { x: 'y' },
    })
    const got = await as.call('GET', `/api/v1/namespaces/${namespace}/secrets/${name}`)
    t.equal(got.status, 403, `GET ${namespace}/${name} refused`)
  }
  t.equal((await as.call('GET', `/api/v1/namespaces/${PROVIDER_NAMESPACE}/secrets`)).status, 403, 'no list')
  t.equal((await as.call('GET', `/api/v1/namespaces/${PROVIDER_NAMESPACE}/secrets/${HMAC_SECRET}`)).status, 200)

  // A provider told to use another Secret name fails its Mounts with the API server's refusal
  // (asked here through the driver's client library, beside the node's running provider).
  const p = await startClusterProvider(w.cluster, w.node('node-1'), {
    args: [`-vault-addr=${w.bao.addr}`, '-hmac-secret-name=not-the-hmac-key'],
    serviceAccountDir: provider.serviceAccountDir,
    podName: provider.podName,
    socketDir: await tempDirFor(t),
  })
  t.teardown(() => p.stop())
  await w.kubernetesRole('rbac-app', [ns])
  await w.kvPut(`${ns}/app`, { v: 'rbac-value-1' })
  const pod = await w.createPod(ns, 'app-0', { spc: 'spc' })
  const { token: podToken, expirationTimestamp } = await requestToken(w.cluster.admin, ns, 'app', {
    audiences: ['vault'],
    pod: { name: pod.name, uid: pod.uid },
  })
  const r = await driverMount({
    socketDir: p.socketDir,
    provider: 'vault',
    targetPath: await tempDirFor(t),
    attributes: {
      ...spcParameters(w.bao, 'rbac-app', [{ objectName: 'v', secretPath: `secret/data/${ns}/app`, secretKey: 'v' }]),
      secretProviderClass: 'spc',
      'csi.storage.k8s.io/pod.name': pod.name,
      'csi.storage.k8s.io/pod.namespace': ns,
      'csi.storage.k8s.io/pod.uid': pod.uid,
      'csi.storage.k8s.io/serviceAccount.name': 'app',
      'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({ vault: { token: podToken, expirationTimestamp } }),
    },
    secrets: 'null',
  })
  t.notOk(r.ok)
  t.equal(r.grpcCode, 'Unavailable')
  t.match(
    r.message,
    /reading Secret vault-csi-provider\/not-the-hmac-key failed with 403: .*cannot get resource "secrets"/,
    'the error names the Secret and the missing permission',
  )
})

t.test('socket handover and restart while the real driver republishes: no failed NodePublishVolume', async (t) => {
  const node = w.node('node-1')
  const ns = await w.newNamespace('handover')
  await w.kubernetesRole('handover-app', [ns])
  await w.kvPut(`${ns}/app`, { v: 'handover-value-1' })
  await w.createSpc(ns, 'spc', {
    parameters: spcParameters(w.bao, 'handover-app', [
      { objectName: 'v', secretPath: `secret/data/${ns}/app`, secretKey: 'v' },
    ]),
  })
  const steady: AppPod[] = []
  for (let i = 0; i < 3; i++) steady.push(await w.createPod(ns, `steady-${i}`, { spc: 'spc' }))
  for (const p of steady) t.ok((await node.publish(ns, p.name)).ok)
  const errorsBefore = metricSum(await node.driverMetrics(), 'rotation_reconcile_error_total')
  const rotationsBefore = metricSum(await node.driverMetrics(), 'rotation_reconcile_total')

  interface Call {
    kind: 'republish' | 'publish'
    ok: boolean
    message: string
    at: number
  }
  const calls: Call[] = []
  let running = true
  // kubelet's periodic republishes of the running pods…
  const republishers = steady.map(async (p) => {
    while (running) {
      const r = await node.publish(ns, p.name)
      calls.push({ kind: 'republish', ok: r.ok, message: r.message, at: Date.now() })
    }
  })
  // …and new pods starting on the node.
  let n = 0
  const starter = (async () => {
    while (running) {
      const p = await w.createPod(ns, `new-${n++}`, { spc: 'spc' })
      const r = await node.publish(ns, p.name)
      calls.push({ kind: 'publish', ok: r.ok, message: r.message, at: Date.now() })
    }
  })()

  const current = w.provider('node-1')
  const instances: ClusterProvider[] = [current]
  const restartArgs = {
    args: [`-vault-addr=${w.bao.addr}`],
    serviceAccountDir: current.serviceAccountDir,
    podName: current.podName,
  }
  // Two handovers, as the DaemonSet's maxSurge update does them: the new instance takes the
  // socket over, the old one drains and is stopped.
  for (let round = 0; round < 2; round++) {
    await new Promise((r) => setTimeout(r, 1500))
    const old = instances[instances.length - 1]!
    const next = await startClusterProvider(w.cluster, node, restartArgs)
    extraProviders.push(next)
    instances.push(next)
    await waitUntil('the old instance to hand over', async () => /handover complete/.test(await old.logs()))
    const exit = await old.stop('SIGTERM')
    t.equal(exit.code, 0, `handover ${round + 1}: the replaced instance exits cleanly`)
  }
  await new Promise((r) => setTimeout(r, 1500))
  running = false
  await Promise.all([...republishers, starter])

  // And a plain restart with a gap: the driver's client waits for the socket (waitForReady in
  // its gRPC service config), so calls in the gap complete once the new process serves.
  const exit = await instances[instances.length - 1]!.stop('SIGTERM')
  t.equal(exit.code, 0, 'restart: the old process exits cleanly')
  // Nothing serves the socket now: kubelet republishes the steady pods and starts a new one.
  const gapPod = await w.createPod(ns, 'during-restart', { spc: 'spc' })
  const inGap = [...steady, gapPod].map(async (p) => {
    const r = await node.publish(ns, p.name)
    return { ...r, at: Date.now() }
  })
  await new Promise((r) => setTimeout(r, 1000))
  const restartAt = Date.now()
  const restarted = await startClusterProvider(w.cluster, node, restartArgs)
  const gapResults = await Promise.all(inGap)
  t.same(
    gapResults.map((r) => r.message),
    gapResults.map(() => ''),
    'calls made while no provider served the socket succeeded',
  )
  t.ok(
    gapResults.every((r) => r.ok && r.at >= restartAt),
    'they waited for the restarted provider (the driver’s client waits for the socket)',
  )
  extraProviders.push(restarted)
  instances.push(restarted)

  const failed = calls.filter((c) => !c.ok)
  t.equal(failed.length, 0, failed.map((c) => `${c.kind}: ${c.message}`).join('\n'))
  t.ok(calls.filter((c) => c.kind === 'publish').length >= 3, `${calls.length} calls, new pods among them`)
  // A republish error would not show in NodePublishVolume (the driver masks it): check its metric.
  const metrics = await node.driverMetrics()
  t.equal(metricSum(metrics, 'rotation_reconcile_error_total'), errorsBefore, 'no failed rotation in the driver')
  t.ok(metricSum(metrics, 'rotation_reconcile_total') > rotationsBefore, 'republishes reached the provider')
  const last = instances[instances.length - 1]!
  const served = (await last.logLines()).filter((l) => l.msg === 'mount' && l.outcome === 'success')
  t.ok(served.length > 0, 'the last instance served Mounts')
})

t.test('a republish the provider refuses: NodePublishVolume still answers OK (the driver masks it)', async (t) => {
  const node = w.node('node-2')
  const ns = await w.newNamespace('masked')
  await w.bao.writePolicy('masked-read', `path "secret/data/${ns}/*" { capabilities = ["read"] }`)
  await w.kubernetesRole('masked-app', [ns], ['app'], ['masked-read'])
  await w.kvPut(`${ns}/app`, { v: 'masked-value-1' })
  await w.createSpc(ns, 'spc', {
    parameters: spcParameters(w.bao, 'masked-app', [
      { objectName: 'v', secretPath: `secret/data/${ns}/app`, secretKey: 'v' },
    ]),
  })
  const pod = await w.createPod(ns, 'app-0', { spc: 'spc', node: 'node-2' })
  const first = await node.publish(ns, pod.name)
  t.ok(first.ok, first.message)
  // The value rotates, but the pod's policy no longer lets it read: the provider answers
  // PermissionDenied to the republish.
  await w.kvPut(`${ns}/app`, { v: 'masked-value-2' })
  await w.bao.writePolicy('masked-read', `path "secret/data/nothing" { capabilities = ["read"] }`)
  const errorsBefore = metricSum(await node.driverMetrics(), 'rotation_reconcile_error_total')
  const failuresBefore = (await w.provider('node-2').logLines()).filter((l) => l.outcome === 'failure').length
  const r = await waitUntil(
    'a republish that reaches the provider',
    async () => {
      const res = await node.publish(ns, pod.name)
      const failures = (await w.provider('node-2').logLines()).filter((l) => l.outcome === 'failure').length
      return failures > failuresBefore ? res : undefined
    },
    20_000,
    300,
  )
  t.equal(r.ok, true, 'kubelet is told the republish worked (the driver masks it: kubernetes#121271)')
  t.equal(
    (await readMountedFiles(first.targetPath)).get('v')?.bytes.toString(),
    'masked-value-1',
    'the old content stays',
  )
  await waitUntil(
    'the driver to count the failed rotation',
    async () => metricSum(await node.driverMetrics(), 'rotation_reconcile_error_total') > errorsBefore,
  )
  t.match(
    await readFile(node.driverLog, 'utf8'),
    /failed to mount secrets store object content.*PermissionDenied/,
    'only the driver log and its metrics say',
  )
  // Allowed again: the next republish brings the new value.
  await w.bao.writePolicy('masked-read', `path "secret/data/${ns}/*" { capabilities = ["read"] }`)
  await waitUntil(
    'the new value once the policy allows it again',
    async () => {
      const res = await node.publish(ns, pod.name)
      if (!res.ok) throw new Error(res.message)
      return (await readMountedFiles(first.targetPath)).get('v')?.bytes.toString() === 'masked-value-2'
    },
    20_000,
    300,
  )
})

t.test('no secret value, JWT or Vault token in the logs', async (t) => {
  const secrets = [
    'hmac-value-a',
    'hmac-value-b',
    'rbac-value-1',
    'handover-value-1',
    'masked-value-1',
    'masked-value-2',
    ...(await w.tokensSeen()),
  ]
  for (const p of [...w.providers.values(), ...extraProviders]) t.same(findLeaks(await p.logs(), secrets), [])
  for (const n of w.nodes) t.same(findLeaks(await readFile(n.driverLog, 'utf8'), secrets), [], `${n.name} driver log`)
})
