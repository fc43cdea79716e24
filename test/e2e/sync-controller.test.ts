// End to end with the real Secrets Store Sync Controller v0.0.4 (built from ../shared/sync-controller
// by scripts/setup-kubernetes.sh) and this daemon as its provider, both run as the controller's chart
// renders them with daemonset/sync-controller/values.yaml and post-render.sh: the chart's CRD,
// ClusterRole, leader-election Role and ValidatingAdmissionPolicies applied to a real API server; the
// Deployment's two containers started as processes with the args and env the rendering gives them
// (mapped only where a process on this machine cannot have what a pod has: see podProcess); the
// controller under its own service account's token, so RBAC and the policies apply to it; OpenBao's
// kubernetes auth reviewing the tokens it passes with the same API server. The test reports the status
// conditions and the controller's log lines of one full sync and one refused sync.
import { randomBytes, randomUUID } from 'node:crypto'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { stringify } from 'yaml'
import { SecretSyncCollector } from '../../src/lint/secretsync-lint.js'
import { lintYaml, type LintResult } from '../../src/lint/spc-lint.js'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { configureKubernetesAuth } from '../support/e2e.js'
import { HELM } from '../support/helm.js'
import { imageNodeFlags } from '../support/image.js'
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
  type KubeClient,
} from '../support/kube-cluster.js'
import { findLeaks } from '../support/leaks.js'
import { KUSTOMIZE, parseYamlDocuments, run } from '../support/manifests.js'
import { mustSucceed, startOpenBao } from '../support/openbao.js'
import { canConnect, PROVIDER_MAIN } from '../support/provider.js'
import { processTempDir } from '../support/tmp.js'

const CHART = join(PACKAGE_ROOT, '.cache/sync-controller/chart')
const VALUES_DIR = join(PACKAGE_ROOT, 'daemonset/sync-controller')
const CONTROLLER_BIN = join(PACKAGE_ROOT, '.cache/bin/secrets-store-sync-controller')
const RELEASE_NAMESPACE = 'ssc'
/** The controller's pod, as the downward API would describe it. */
const POD = { name: 'secrets-store-sync-controller-manager-7d9f5-x2x4q', uid: randomUUID() }
/** The poll the test waits for instead of the values' hour. */
const TEST_POLL = '3s'
/**
 * The controller's log verbosity for the evidence: 5 shows each reconcile's start and end ("Reconcile
 * successful", "Done... updated status" at 4). From 8 up client-go logs request bodies, the Secret's
 * data among them (docs/sync-controller.md).
 */
const CONTROLLER_VERBOSITY = 5

interface Container {
  name: string
  command?: string[]
  args?: string[]
  env?: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>
  volumeMounts?: Array<{ name: string; mountPath: string }>
}

interface Volume {
  name: string
  hostPath?: { path: string }
  secret?: { secretName: string; defaultMode?: number; items?: Array<{ key: string; path: string; mode?: number }> }
}

const flagName = (arg: string): string => (arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg)
const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * One container of the rendered pod as a process here: its args and env as rendered, except for what a
 * process outside a pod cannot have, mapped as follows (and nothing else):
 *   - every volume's mountPath, wherever it appears in an arg, becomes a local directory: the chart's
 *     provider volume (a hostPath both containers mount at /provider) one temp directory, the HMAC key's
 *     Secret volume a directory where the test writes the Secret's items as kubelet would;
 *   - listen addresses (the provider's -health-addr :8080, the manager's :8081 probe and :8085 metrics)
 *     become 127.0.0.1:0: fixed ports are shared by every test on this machine;
 *   - the manager's --rotation-poll-interval (1h) becomes 3s: the test watches a changed value arrive;
 *   - the downward API env (SYNC_CONTROLLER_POD_NAME, _UID, _NAMESPACE) gets this test's pod;
 *   - added to the manager, which in a pod reads them from its service-account mount: --kubeconfig (its
 *     service account's token) and --leader-election-namespace; and --zap-log-level (CONTROLLER_VERBOSITY)
 *     for the evidence lines (the chart passes none).
 * The Vault address needs no mapping: the classes name it (vaultAddress), as docs/sync-controller.md does.
 */
function podProcess(
  c: Container,
  dirs: ReadonlyMap<string, string>,
  replace: Readonly<Record<string, string>>,
  added: readonly string[] = [],
): { args: string[]; env: Record<string, string> } {
  const local = (text: string): string => {
    let out = text
    for (const m of c.volumeMounts ?? []) {
      const dir = dirs.get(m.name)
      if (dir === undefined) throw new Error(`${c.name}: no local directory for volume ${m.name}`)
      out = out.replace(new RegExp(`(^|[=,])${escapeRegExp(m.mountPath)}(?=[/,]|$)`, 'g'), `$1${dir}`)
    }
    return out
  }
  const args = (c.args ?? []).map((arg) => {
    const flag = flagName(arg)
    return flag in replace ? `${flag}=${replace[flag]}` : local(arg)
  })
  const fields: Record<string, string> = {
    'metadata.name': POD.name,
    'metadata.uid': POD.uid,
    'metadata.namespace': RELEASE_NAMESPACE,
  }
  const env: Record<string, string> = {}
  for (const e of c.env ?? []) {
    const field = e.valueFrom?.fieldRef?.fieldPath
    const value = e.value ?? (field === undefined ? undefined : fields[field])
    if (value === undefined) throw new Error(`${c.name}: env ${e.name} has a source this test does not map`)
    env[e.name] = local(value)
  }
  return { args: [...args, ...added], env }
}

/** What kubelet writes for a `secret` volume: the Secret's items as files, with the volume's modes. */
async function secretVolume(admin: KubeClient, v: Volume, dir: string): Promise<void> {
  const secret = await admin.must('GET', `/api/v1/namespaces/${RELEASE_NAMESPACE}/secrets/${v.secret!.secretName}`)
  const data = secret.data as Record<string, string>
  const items: Array<{ key: string; path: string; mode?: number }> =
    v.secret!.items ?? Object.keys(data).map((key) => ({ key, path: key }))
  for (const item of items) {
    const file = join(dir, item.path)
    await writeFile(file, Buffer.from(data[item.key]!, 'base64'))
    await chmod(file, item.mode ?? v.secret!.defaultMode ?? 0o644)
  }
}

/** The first line of each controller log entry (zap's development encoder adds stack lines after errors). */
function entriesOf(log: string): string[] {
  return log.split('\n').filter((l) => /^\d{4}-\d\d-\d\dT/.test(l))
}

t.setTimeout(300_000)
t.test('SecretSyncs of two namespaces become Secrets, follow Vault, and a refusal shows', async (t) => {
  const started = Date.now()
  const cluster = await startKubeCluster({ nodes: [] })
  t.teardown(() => cluster.stop())
  const bao = await startOpenBao()
  t.teardown(() => bao.stop())
  const audit = await bao.enableFileAudit()
  await bao.writePolicy('app-read', 'path "secret/*" { capabilities = ["read"] }')
  await configureKubernetesAuth(cluster, bao)

  // The controller's chart as an operator installs it (docs/sync-controller.md), rendered by the real Helm.
  const crds = readYamlObjects(await readFile(join(CHART, 'crds/secret-sync.x-k8s.io_secretsyncs.yaml'), 'utf8'), 'crd')
  t.same(refusals(await applyObjects(cluster.admin, crds)), [])
  await waitUntil(
    'crd',
    async () => (await cluster.admin.call('GET', '/apis/secret-sync.x-k8s.io/v1alpha1')).status === 200,
  )
  const rendered = await run(
    HELM,
    [
      'template',
      'secrets-store-sync-controller',
      CHART,
      '-n',
      RELEASE_NAMESPACE,
      '-f',
      join(VALUES_DIR, 'values.yaml'),
      '--post-renderer',
      join(VALUES_DIR, 'post-render.sh'),
    ],
    { env: { ...process.env, KUSTOMIZE } },
  )
  t.equal(rendered.code, 0, rendered.stderr)
  const objs = parseYamlDocuments(rendered.stdout, 'helm template')
  const deployment = objs.find((o) => o.kind === 'Deployment') as any
  const pod = deployment.spec.template.spec as { containers: Container[]; volumes: Volume[] }
  const manager = pod.containers.find((c) => c.name === 'manager')!
  const provider = pod.containers.find((c) => c.name === 'vault-csi-provider')!
  // Everything but the Deployment, which no kubelet here would run: its containers are the processes below.
  await ensureNamespace(cluster.admin, RELEASE_NAMESPACE)
  t.same(
    refusals(
      await applyObjects(
        cluster.admin,
        objs.filter((o) => o !== deployment),
      ),
    ),
    [],
  )
  // The object-version key, created as docs/sync-controller.md says, before the pod starts.
  await cluster.admin.must('POST', `/api/v1/namespaces/${RELEASE_NAMESPACE}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'vault-csi-provider-hmac-key' },
    data: { key: randomBytes(32).toString('base64') },
  })

  const dir = await processTempDir('ssc-')
  const dirs = new Map<string, string>()
  for (const v of pod.volumes) {
    const local = join(dir, v.name)
    await mkdir(local)
    if (v.secret) await secretVolume(cluster.admin, v, local)
    else if (!v.hostPath) throw new Error(`volume ${v.name}: neither the provider hostPath nor a Secret`)
    dirs.set(v.name, local)
  }
  const sa = await requestToken(cluster.admin, RELEASE_NAMESPACE, 'secrets-store-sync-controller-manager', {
    expirationSeconds: 3600,
  })
  const kubeconfig = join(dir, 'kubeconfig')
  await cluster.writeKubeconfig(kubeconfig, sa.token)
  const listen = '127.0.0.1:0'
  const providerProcess = podProcess(provider, dirs, { '-health-addr': listen })
  const managerProcess = podProcess(
    manager,
    dirs,
    {
      '--health-probe-bind-address': listen,
      '--metrics-bind-address': listen,
      '--rotation-poll-interval': TEST_POLL,
    },
    [
      `--kubeconfig=${kubeconfig}`,
      `--leader-election-namespace=${RELEASE_NAMESPACE}`,
      `--zap-log-level=${CONTROLLER_VERBOSITY}`,
    ],
  )
  for (const [c, p] of [
    [provider, providerProcess],
    [manager, managerProcess],
  ] as const) {
    t.same(p.args.slice(0, c.args!.length).map(flagName), c.args!.map(flagName), `${c.name}: every rendered flag`)
  }
  t.match(
    managerProcess.args,
    ['--provider-volume=' + dirs.get('providervol'), '--token-request-audience=vault'],
    'the provider volume and the audience as the values set them',
  )

  // The provider as the image runs it (its ENTRYPOINT's node flags), with the values' args.
  const providerLog = join(dir, 'provider.log')
  const providerChild = spawnLogged(
    process.execPath,
    [...imageNodeFlags(), PROVIDER_MAIN, ...providerProcess.args],
    providerLog,
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', ...providerProcess.env },
  )
  t.teardown(() => stopChild(providerChild))
  for (const socket of ['vault.sock', 'openbao.sock']) {
    await waitUntil(socket, () => canConnect(join(dirs.get('providervol')!, socket)), 20_000)
  }
  const ctlLog = join(dir, 'controller.log')
  const ctl = spawnLogged(CONTROLLER_BIN, managerProcess.args, ctlLog, {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    ...managerProcess.env,
  })
  t.teardown(() => stopChild(ctl))

  // SecretSyncs as a tenant writes them; lint reads the same manifests first.
  const manifests: Array<{ ns: string; objects: Array<Record<string, unknown>> }> = []
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
    // shop: app-db syncs; refused uses bank's role, which Vault refuses to shop's service account;
    // bad-source names a file the class does not write.
    const syncs: Array<[name: string, role: string, sourcePath: string]> =
      ns === 'shop'
        ? [
            ['app-db', 'shop-sync', 'password'],
            ['refused', 'bank-sync', 'password'],
            ['bad-source', 'shop-sync', 'passwd'],
          ]
        : [['app-db', 'bank-sync', 'password']]
    const objects: Array<Record<string, unknown>> = []
    for (const [name, role, sourcePath] of syncs) {
      objects.push({
        apiVersion: 'secrets-store.csi.x-k8s.io/v1',
        kind: 'SecretProviderClass',
        metadata: { name, namespace: ns },
        spec: {
          provider: 'vault',
          parameters: {
            vaultAddress: bao.addr,
            roleName: role,
            objects: stringify([{ objectName: 'password', secretPath: `secret/data/${ns}/db`, secretKey: 'password' }]),
          },
        },
      })
      objects.push({
        apiVersion: 'secret-sync.x-k8s.io/v1alpha1',
        kind: 'SecretSync',
        metadata: { name, namespace: ns },
        spec: {
          serviceAccountName: 'app',
          secretProviderClassName: name,
          secretObject: { type: 'Opaque', data: [{ sourcePath, targetKey: 'password' }] },
        },
      })
    }
    manifests.push({ ns, objects })
  }
  const secretSyncs = new SecretSyncCollector({ audiences: ['vault'] })
  const classes: LintResult = { problems: [], checked: 0, skipped: 0 }
  for (const { ns, objects } of manifests) {
    lintYaml(
      objects.map((o) => stringify(o)).join('---\n'),
      `${ns}.yaml`,
      { vaultDefaults: { authMount: 'kubernetes', tls: { skipVerify: false } }, secretSyncs },
      classes,
    )
  }
  const linted = [...classes.problems, ...secretSyncs.lint().problems]
  t.same(
    linted.map((p) => [p.code, p.secretSync ?? p.secretProviderClass]),
    [
      ['SECRETSYNC_SOURCE', 'shop/bad-source'],
      ['SECRETSYNC_SHARED', 'shop/bad-source'],
      ['SECRETSYNC_UNUSED', 'shop/bad-source'],
    ],
    'lint: the one SecretSync the controller refuses (below), which shares shop/app-db’s identity (one login below)',
  )
  for (const { ns, objects } of manifests) {
    for (const o of objects) {
      const path =
        o.kind === 'SecretSync'
          ? `/apis/secret-sync.x-k8s.io/v1alpha1/namespaces/${ns}/secretsyncs`
          : `/apis/secrets-store.csi.x-k8s.io/v1/namespaces/${ns}/secretproviderclasses`
      await cluster.admin.must('POST', path, o)
    }
  }

  const secretOf = async (ns: string): Promise<string | undefined> => {
    const r = await cluster.admin.call('GET', `/api/v1/namespaces/${ns}/secrets/app-db`)
    return r.status === 200 ? Buffer.from(r.body.data.password, 'base64').toString() : undefined
  }
  t.equal(await waitUntil('shop secret', () => secretOf('shop'), 60_000, 250), 'pw-shop-1')
  t.equal(await waitUntil('bank secret', () => secretOf('bank'), 60_000, 250), 'pw-bank-1')
  mustSucceed('kv2', await bao.api('POST', `/v1/secret/data/shop/db`, { data: { password: 'pw-shop-2' } }))
  await waitUntil('changed', async () => (await secretOf('shop')) === 'pw-shop-2', 60_000, 250)

  const secretSync = (name: string): Promise<any> =>
    cluster.admin.must('GET', `/apis/secret-sync.x-k8s.io/v1alpha1/namespaces/shop/secretsyncs/${name}`)
  const conditionsOf = async (name: string, reason: string): Promise<any[] | undefined> => {
    const conditions = ((await secretSync(name)).status?.conditions ?? []) as any[]
    return conditions.some((c) => c.reason === reason) ? conditions : undefined
  }
  const refused = await waitUntil('refused condition', () => conditionsOf('refused', 'ProviderError'), 60_000, 250)
  t.match(refused, [{ type: 'Create', status: 'False', reason: 'ProviderError' }], 'the refused sync’s condition')
  const badSource = await waitUntil(
    'bad-source condition',
    () => conditionsOf('bad-source', 'UserInputValidationFailed'),
    60_000,
    250,
  )
  t.match(badSource, [{ type: 'Create', status: 'False', reason: 'UserInputValidationFailed' }], 'as lint said')
  // The changed value came with an update; the next polls find no change.
  const synced = await waitUntil(
    'a poll without change',
    () => conditionsOf('app-db', 'UpdateNoValueChangeSucceeded'),
    60_000,
    250,
  )
  t.match(
    [...synced].sort((a, b) => String(a.type).localeCompare(b.type)),
    [
      { type: 'Create', status: 'True', reason: 'CreateSucceeded' },
      { type: 'Update', status: 'True', reason: 'UpdateNoValueChangeSucceeded' },
    ],
    'the synced one: created, then updated by the polls',
  )

  // v0.0.4 writes a fixed message in a ProviderError condition and emits no events: the provider's
  // own text reaches only the controller's log (and the provider's).
  const providerText = `login to Vault at ${bao.addr} (role "bank-sync", auth mount "kubernetes"): Vault answered 403`
  t.match(refused[0].message, /^Secret creation failed due to provider error, check the logs/)
  const ctlText = await readFile(ctlLog, 'utf8')
  const entries = entriesOf(ctlText)
  const about = (name: string): string[] =>
    entries.filter((l) => l.includes(`"SecretSync": {"name":"${name}","namespace":"shop"}`))
  const failed = about('refused').filter((l) => l.includes('failed to get secrets from provider'))
  t.ok(failed.length > 0, 'the controller logs the failed sync')
  t.ok(failed[0]!.includes(providerText.replaceAll('"', '\\"')), 'with the provider’s message')
  // One full sync: the entries of the reconcile that created shop/app-db's Secret (its first that
  // wrote the Secret: "Done... updated status").
  const created = about('app-db').find((l) => l.includes('Done... updated status'))
  const reconcileId = /"reconcileID": "([^"]+)"/.exec(created ?? '')?.[1]
  t.ok(reconcileId, 'the controller logs the sync that created the Secret')
  const fullSync = entries.filter((l) => l.includes(`"reconcileID": "${reconcileId}"`))
  t.ok(
    fullSync.some((l) => l.includes('Reconcile successful')),
    'to its end',
  )
  const refusedId = /"reconcileID": "([^"]+)"/.exec(failed[0]!)?.[1]
  const refusedSync = entries.filter((l) => l.includes(`"reconcileID": "${refusedId}"`))

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
  // shop/bad-source logs in as shop/app with shop-sync too: the same identity as shop/app-db.
  t.equal(logins.length, 2, 'one login each, reused by the polls (-identity-idle-timeout as the values set it)')
  const denied = (await cluster.auditEvents()).filter(
    (e) => e.user.username.includes('sync-controller') && (e.responseStatus?.code ?? 200) >= 400,
  )
  t.same(
    denied.map((e) => [e.verb, e.objectRef, e.responseStatus]),
    [],
    'no Secret, token, lease or status request refused by RBAC or the policies',
  )
  // In the Secret the controller writes (and would log, at verbosity 8 and above), values are base64.
  const values = ['pw-shop-1', 'pw-shop-2', 'pw-bank-1'].flatMap((v) => [v, Buffer.from(v).toString('base64')])
  t.same(
    findLeaks(await readFile(providerLog, 'utf8'), [sa.token, ...values]),
    [],
    'no token or value in the provider log',
  )
  t.same(findLeaks(ctlText, [sa.token, ...values]), [], `nor in the controller’s, at verbosity ${CONTROLLER_VERBOSITY}`)

  // The evidence (issue 45's closing note): conditions and log lines of one full sync and one refused.
  t.comment(`full sync, shop/app-db: conditions ${JSON.stringify(synced)}`)
  t.comment(`full sync, shop/app-db: the controller's log of the reconcile that created it:\n${fullSync.join('\n')}`)
  t.comment(`refused sync, shop/refused: conditions ${JSON.stringify(refused)}`)
  t.comment(`refused sync, shop/refused: the controller's log of its first reconcile:\n${refusedSync.join('\n')}`)
  const providerRefusal = (await readFile(providerLog, 'utf8'))
    .split('\n')
    .find((l) => l.includes('"msg":"mount"') && l.includes('"role":"bank-sync"') && l.includes('"namespace":"shop"'))
  t.ok(providerRefusal, 'the provider logs the refused Mount')
  t.comment(`refused sync, shop/refused: the provider's log line:\n${providerRefusal}`)
  t.comment(`took ${Date.now() - started} ms`)
})
