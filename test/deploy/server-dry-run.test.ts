// Every deployment manifest against a real API server (kube-apiserver v1.35.4 with the
// Secrets Store CSI driver's CRDs from its deploy/ files): each kustomize variant, every
// example, and the SecretProviderClass fragments of the docs, as a server-side dry run with
// strict field validation (kube-apply.ts). The real built-in schemas, admission and the
// CRDs' own schemas decide; manifests.test.ts keeps the offline checks.
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { applyObjects, dryRunObjects, refusals, type ApplyResult } from '../support/kube-apply.js'
import {
  readYamlObjects,
  startKubeCluster,
  waitUntil,
  type K8sObject,
  type KubeCluster,
} from '../support/kube-cluster.js'
import { CHART_EVERY_OPTION, crdFiles, renderChart } from '../support/helm.js'
import { kustomizeBuild } from '../support/manifests.js'

t.setTimeout(3 * 60_000)

const VARIANTS = ['daemonset', 'daemonset/overlays/token-request', 'daemonset/overlays/root-socket-dir']

let cluster: KubeCluster
t.before(async () => {
  cluster = await startKubeCluster({ nodes: [] })
})
t.teardown(() => cluster?.stop())

function summary(results: ApplyResult[]): string[] {
  return results.map((r) => `${r.kind}/${r.name}`)
}

t.test('every kustomize variant passes a strict server-side dry run', async (t) => {
  for (const v of VARIANTS) {
    const objs = await kustomizeBuild(join(PACKAGE_ROOT, v))
    const results = await dryRunObjects(cluster.admin, objs)
    t.same(refusals(results), [], `${v}: accepted`)
    t.equal(results.length, objs.length, `${v}: ${summary(results).join(', ')}`)
    t.same(
      results.flatMap((r) => r.warnings),
      [],
      `${v}: no warnings (deprecated APIs, unknown fields)`,
    )
  }
  const ds = (await dryRunObjects(cluster.admin, await kustomizeBuild(join(PACKAGE_ROOT, 'daemonset')))).find(
    (r) => r.kind === 'DaemonSet',
  )
  // The API server's defaults filled in: what the DaemonSet will really run with.
  t.equal(ds?.object?.spec?.template?.spec?.dnsPolicy, 'ClusterFirst', 'defaulted by the API server')
  t.equal(ds?.object?.spec?.revisionHistoryLimit, 10)
})

t.test('the Helm chart passes: defaults, each kustomize variant’s values and every option', async (t) => {
  // The monitoring kinds (PodMonitor, ServiceMonitor, PrometheusRule) need the Prometheus
  // Operator's own CRDs on the API server first, as in a cluster that runs the operator.
  const crds = (
    await Promise.all((await crdFiles()).map(async (f) => readYamlObjects(await readFile(f, 'utf8'), f)))
  ).flat()
  t.ok(crds.length >= 3, `${crds.length} Prometheus Operator CRDs`)
  t.same(refusals(await applyObjects(cluster.admin, crds)), [], 'the CRDs are installed')
  for (const crd of crds) {
    await waitUntil(`${crd.metadata.name} established`, async () => {
      const got = await cluster.admin.must(
        'GET',
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
      )
      return (got.status?.conditions ?? []).some((c: any) => c.type === 'Established' && c.status === 'True')
    })
  }
  await waitUntil('monitoring.coreos.com/v1 served', async () => {
    return (await cluster.admin.call('GET', '/apis/monitoring.coreos.com/v1')).status === 200
  })
  const cases: Array<[string, unknown]> = [
    ['defaults', {}],
    ['token-request values', { namespace: { create: true }, rbac: { tokenRequest: true } }],
    ['root-socket-dir values', { namespace: { create: true }, csi: { daemonSet: { runAsRoot: true } } }],
    ['every option', CHART_EVERY_OPTION],
  ]
  for (const [what, values] of cases) {
    const objs = await renderChart(values)
    const results = await dryRunObjects(cluster.admin, objs)
    t.same(refusals(results), [], `${what}: accepted (${summary(results).join(', ')})`)
    t.equal(results.length, objs.length, `${what}: every rendered object was sent`)
    t.same(
      results.flatMap((r) => r.warnings),
      [],
      `${what}: no warnings`,
    )
  }
  const kinds = new Set((await renderChart(CHART_EVERY_OPTION)).map((o) => o.kind))
  for (const k of ['PodMonitor', 'ServiceMonitor', 'PrometheusRule', 'ConfigMap', 'DaemonSet']) {
    t.ok(kinds.has(k), `every option renders a ${k}`)
  }
})

t.test('every example passes', async (t) => {
  const dir = join(PACKAGE_ROOT, 'examples')
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort()
  t.ok(files.length >= 5, files.join(', '))
  for (const f of files) {
    const objs = readYamlObjects(await readFile(join(dir, f), 'utf8'), f)
    const results = await dryRunObjects(cluster.admin, objs)
    t.same(refusals(results), [], `${f}: accepted (${summary(results).join(', ')})`)
  }
})

/** The docs' SecretProviderClass fragments (`objects: |`, `spec:`, a bare object list), each made a whole one. */
async function docFragments(): Promise<Array<{ where: string; spc: K8sObject }>> {
  const out: Array<{ where: string; spc: K8sObject }> = []
  for (const file of ['docs/outputs.md', 'docs/configuration.md', 'docs/migration.md', 'README.md']) {
    const text = await readFile(join(PACKAGE_ROOT, file), 'utf8')
    let i = 0
    for (const m of text.matchAll(/```yaml\n([\s\S]*?)```/g)) {
      const block = m[1]!
      i += 1
      let spec: Record<string, unknown> | undefined
      if (/^objects: \|/m.test(block) && !/^kind:/m.test(block)) {
        spec = { provider: 'vault', parameters: { roleName: 'app', ...(parse(block) as Record<string, string>) } }
      } else if (block.startsWith('- objectName:')) {
        spec = { provider: 'vault', parameters: { roleName: 'app', objects: block } }
      } else if (block.startsWith('spec:')) {
        const parsed = parse(block) as { spec: Record<string, unknown> }
        spec = { provider: 'vault', parameters: { roleName: 'app', objects: '[]' }, ...parsed.spec }
      }
      if (spec === undefined) continue
      out.push({
        where: `${file} yaml block ${i}`,
        spc: {
          apiVersion: 'secrets-store.csi.x-k8s.io/v1',
          kind: 'SecretProviderClass',
          metadata: { name: `doc-${out.length}`, namespace: 'docs' },
          spec,
        },
      })
    }
  }
  return out
}

t.test('the SecretProviderClass fragments of the docs pass, made whole', async (t) => {
  const fragments = await docFragments()
  t.ok(fragments.length >= 8, `${fragments.length} fragments`)
  const results = await dryRunObjects(
    cluster.admin,
    fragments.map((f) => f.spc),
  )
  for (const [i, r] of results.entries()) t.ok(r.ok, `${fragments[i]!.where}: ${r.message || 'accepted'}`)
})

t.test('the dry run really refuses bad objects, with the API server’s reasons', async (t) => {
  const [ds] = (await kustomizeBuild(join(PACKAGE_ROOT, 'daemonset'))).filter((o) => o.kind === 'DaemonSet')
  const bad = structuredClone(ds!) as any
  bad.spec.template.spec.containers[0].securityContex = { runAsUser: 0 }
  const spcTyped = {
    apiVersion: 'secrets-store.csi.x-k8s.io/v1',
    kind: 'SecretProviderClass',
    metadata: { name: 'typed', namespace: 'default' },
    // A YAML boolean where the CRD wants a string (the offline check read the same file).
    spec: parse(stringify({ provider: 'vault', parameters: { vaultSkipTLSVerify: true, roleName: 'x' } })),
  }
  const spcUnknown = {
    apiVersion: 'secrets-store.csi.x-k8s.io/v1',
    kind: 'SecretProviderClass',
    metadata: { name: 'unknown', namespace: 'default' },
    spec: { provider: 'vault', parameters: { roleName: 'x' }, secretObject: [] },
  }
  const widget = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }
  const [d, typed, unknown, w] = await dryRunObjects(cluster.admin, [
    bad,
    spcTyped as K8sObject,
    spcUnknown as K8sObject,
    widget as K8sObject,
  ])
  t.match(d, { ok: false, status: 400 })
  t.match(d?.message, /strict decoding error: unknown field "spec\.template\.spec\.containers\[0\]\.securityContex"/)
  t.match(typed, { ok: false, status: 422 })
  t.match(
    typed?.message,
    /spec\.parameters\.vaultSkipTLSVerify: Invalid value: "boolean": spec\.parameters\.vaultSkipTLSVerify in body must be of type string/,
  )
  t.match(unknown, { ok: false, status: 400 })
  t.match(unknown?.message, /strict decoding error: unknown field "spec\.secretObject"/)
  t.match(w, { ok: false, status: 0, message: /serves no kind Widget/ })
  const list = await cluster.admin.must(
    'GET',
    '/apis/secrets-store.csi.x-k8s.io/v1/namespaces/default/secretproviderclasses',
  )
  t.same(list.items, [], 'a dry run stores nothing')
})
