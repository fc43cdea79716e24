// End to end with the real Secrets Store Sync Controller v0.0.4 (built from ../shared/sync-controller
// by scripts/setup-kubernetes.sh): its CRD, ClusterRole and ValidatingAdmissionPolicies from its own
// chart, rendered with daemonset/sync-controller/values.yaml; the controller as a process under its
// own service account's token (so RBAC and the policies apply to it), polling every 3 s; this daemon
// in -mode=sync-controller as its provider on vault.sock in the provider directory; OpenBao's
// kubernetes auth reviewing the controller's tokens with the same API server.
import { randomBytes } from 'node:crypto'
import { mkdir, writeFile, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { findLeaks } from '../support/leaks.js'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { configureKubernetesAuth } from '../support/e2e.js'
import { applyObjects, refusals } from '../support/kube-apply.js'
import {
  ensureNamespace,
  ensureServiceAccount,
  readYamlObjects,
  requestToken,
  spawnLogged,
  startKubeCluster,
  stopChild,
  waitUntil,
} from '../support/kube-cluster.js'
import { HELM } from '../support/helm.js'
import { parseYamlDocuments, run } from '../support/manifests.js'
import { mustSucceed, startOpenBao } from '../support/openbao.js'
import { startProvider } from '../support/provider.js'
import { processTempDir } from '../support/tmp.js'

t.setTimeout(240_000)
t.test('SecretSyncs of two namespaces become Secrets, follow Vault, and a refusal shows', async (t) => {
  const started = Date.now()
  const cluster = await startKubeCluster({ nodes: [] })
  t.teardown(() => cluster.stop())
  const bao = await startOpenBao()
  t.teardown(() => bao.stop())
  const audit = await bao.enableFileAudit()
  await bao.writePolicy('app-read', 'path "secret/*" { capabilities = ["read"] }')
  await configureKubernetesAuth(cluster, bao)
  const chart = join(PACKAGE_ROOT, '.cache/sync-controller/chart')
  const crds = readYamlObjects(await readFile(join(chart, 'crds/secret-sync.x-k8s.io_secretsyncs.yaml'), 'utf8'), 'crd')
  t.same(refusals(await applyObjects(cluster.admin, crds)), [])
  await waitUntil(
    'crd',
    async () => (await cluster.admin.call('GET', '/apis/secret-sync.x-k8s.io/v1alpha1')).status === 200,
  )
  const r = await run(HELM, [
    'template',
    'ssc',
    chart,
    '-n',
    'ssc',
    '-f',
    join(PACKAGE_ROOT, 'daemonset/sync-controller/values.yaml'),
  ])
  const objs = parseYamlDocuments(r.stdout, 'helm').filter((o) => o.kind !== 'Deployment')
  await ensureNamespace(cluster.admin, 'ssc')
  t.same(refusals(await applyObjects(cluster.admin, objs)), [])
  const sa = await requestToken(cluster.admin, 'ssc', 'secrets-store-sync-controller-manager', {
    expirationSeconds: 3600,
  })
  const dir = await processTempDir('ssc-')
  const kubeconfig = join(dir, 'kubeconfig')
  await cluster.writeKubeconfig(kubeconfig, sa.token)
  const sockDir = join(dir, 'provider')
  await mkdir(sockDir)
  await writeFile(join(sockDir, 'hmac.key'), randomBytes(32))
  const p = await startProvider({
    socketDir: sockDir,
    socketNames: ['vault.sock', 'openbao.sock'],
    args: ['-mode=sync-controller', `-vault-addr=${bao.addr}`],
    logLevel: 'info',
  })
  t.teardown(() => p.stop())
  const ctlLog = join(dir, 'controller.log')
  const ctl = spawnLogged(
    join(PACKAGE_ROOT, '.cache/bin/secrets-store-sync-controller'),
    [
      `--kubeconfig=${kubeconfig}`,
      `--provider-volume=${sockDir}`,
      '--token-request-audience=vault',
      '--metrics-bind-address=0',
      '--health-probe-bind-address=0',
      '--rotation-poll-interval=3s',
    ],
    ctlLog,
    {
      ...process.env,
      SYNC_CONTROLLER_POD_NAME: 'ssc-manager-abc',
      SYNC_CONTROLLER_POD_UID: 'c0ffee00-0000-4000-8000-000000000001',
      SYNC_CONTROLLER_POD_NAMESPACE: 'ssc',
    },
  )
  t.teardown(() => stopChild(ctl))
  for (const ns of ['shop', 'bank']) {
    await ensureNamespace(cluster.admin, ns)
    await ensureServiceAccount(cluster.admin, ns, 'app')
    mustSucceed('kv', await bao.api('POST', `/v1/secret/data/${ns}/db`, { data: { password: `pw-${ns}-1` } }))
    mustSucceed(
      'role',
      await bao.api('POST', `/v1/auth/kubernetes/role/${ns}-sync`, {
        bound_service_account_names: ['app'],
        bound_service_account_namespaces: [ns],
        audience: 'vault',
        token_policies: ['app-read'],
      }),
    )
    for (const [name, role] of [
      ['app-db', `${ns}-sync`],
      ['refused', 'bank-sync'],
    ] as const) {
      if (ns === 'bank' && name === 'refused') continue
      await cluster.admin.must('POST', `/apis/secrets-store.csi.x-k8s.io/v1/namespaces/${ns}/secretproviderclasses`, {
        apiVersion: 'secrets-store.csi.x-k8s.io/v1',
        kind: 'SecretProviderClass',
        metadata: { name },
        spec: {
          provider: 'vault',
          parameters: {
            roleName: role,
            objects: JSON.stringify([
              { objectName: 'password', secretPath: `secret/data/${ns}/db`, secretKey: 'password' },
            ]),
          },
        },
      })
      await cluster.admin.must('POST', `/apis/secret-sync.x-k8s.io/v1alpha1/namespaces/${ns}/secretsyncs`, {
        apiVersion: 'secret-sync.x-k8s.io/v1alpha1',
        kind: 'SecretSync',
        metadata: { name },
        spec: {
          serviceAccountName: 'app',
          secretProviderClassName: name,
          secretObject: { type: 'Opaque', data: [{ sourcePath: 'password', targetKey: 'password' }] },
        },
      })
    }
  }
  const secretOf = async (ns: string) => {
    const r = await cluster.admin.call('GET', `/api/v1/namespaces/${ns}/secrets/app-db`)
    return r.status === 200 ? Buffer.from(r.body.data.password, 'base64').toString() : undefined
  }
  t.equal(await waitUntil('shop secret', () => secretOf('shop'), 60_000, 250), 'pw-shop-1')
  t.equal(await waitUntil('bank secret', () => secretOf('bank'), 60_000, 250), 'pw-bank-1')
  mustSucceed('kv2', await bao.api('POST', `/v1/secret/data/shop/db`, { data: { password: 'pw-shop-2' } }))
  await waitUntil('changed', async () => (await secretOf('shop')) === 'pw-shop-2', 60_000, 250)
  const ss = await waitUntil(
    'refused cond',
    async () => {
      const r = await cluster.admin.must(
        'GET',
        '/apis/secret-sync.x-k8s.io/v1alpha1/namespaces/shop/secretsyncs/refused',
      )
      return (r.status?.conditions ?? []).some((c: any) => c.reason === 'ProviderError') ? r : undefined
    },
    60_000,
    250,
  )
  t.match(
    ss.status.conditions,
    [{ type: 'Create', status: 'False', reason: 'ProviderError' }],
    'the refused sync’s condition',
  )
  const ok = await cluster.admin.must('GET', '/apis/secret-sync.x-k8s.io/v1alpha1/namespaces/shop/secretsyncs/app-db')
  t.ok(
    ok.status.conditions.some((c: any) => c.reason === 'CreateSucceeded' && c.status === 'True'),
    'the synced one',
  )
  // v0.0.4 puts a fixed message in the condition and emits no events: the provider's text is in its log.
  const providerText =
    'login to Vault at ' + bao.addr + ' (role "bank-sync", auth mount "kubernetes"): Vault answered 403'
  t.ok(
    (await readFile(ctlLog, 'utf8')).includes(providerText.replaceAll('"', '\\"')),
    'the controller logs the provider’s message',
  )
  const logins = ((await bao.readAuditLog(audit)) as any[])
    .filter((e) => e.type === 'response' && e.request?.path === 'auth/kubernetes/login' && e.auth?.metadata)
    .map((e) => e.auth.metadata)
    // The two SecretSyncs reconcile in either order.
    .sort((a, b) => String(a.role).localeCompare(String(b.role)))
  t.match(
    logins,
    [
      { role: 'bank-sync', service_account_namespace: 'bank', service_account_name: 'app' },
      { role: 'shop-sync', service_account_namespace: 'shop', service_account_name: 'app' },
    ],
    'OpenBao saw each SecretSync’s service account log in: two identities, never the controller’s',
  )
  t.equal(logins.length, 2, 'one login each, reused by the polls')
  const denied = (await cluster.auditEvents()).filter(
    (e) => e.user.username.includes('sync-controller') && (e.responseStatus?.code ?? 200) >= 400,
  )
  t.same(
    denied.map((e) => [e.verb, e.objectRef, e.responseStatus]),
    [],
    'no Secret or token request refused by RBAC or the policies',
  )
  t.same(
    findLeaks(await p.logs(), [sa.token, 'pw-shop-1', 'pw-shop-2', 'pw-bank-1']),
    [],
    'no token or value in the provider log',
  )
  t.comment(`took ${Date.now() - started} ms`)
})
