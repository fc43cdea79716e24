// The Helm chart in daemonset/chart/, through the real Helm binary (scripts/setup-helm.sh builds
// it into .cache/bin/helm): render it, lint it, and validate what it renders.
//
// renderChart() is the one place that turns chart values into the objects `helm install` would
// apply; a server-side dry-run on a real API server takes its result as it is (for the
// monitoring.coreos.com kinds, install CRD_FILES first).
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { parse } from 'yaml'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { DEPLOY_PYTHON, parseYamlDocuments, run, type K8sObject, type RunResult } from './manifests.js'

export const HELM = join(PACKAGE_ROOT, '.cache', 'bin', 'helm')
export const CHART_DIR = join(PACKAGE_ROOT, 'daemonset', 'chart')
/** The Prometheus Operator's own CRDs (PodMonitor, ServiceMonitor, PrometheusRule), from scripts/setup-helm.sh. */
export const CRD_DIR = join(PACKAGE_ROOT, '.cache', 'crds')

/** The release the kustomize base corresponds to: its names and namespace. */
export const DEFAULT_RELEASE = { name: 'vault-csi-provider', namespace: 'vault-csi-provider' } as const

/** Labels only Helm adds (`helm.sh/chart` and the release's); everything else matches kustomize. */
export const HELM_ONLY_LABELS = [
  'helm.sh/chart',
  'app.kubernetes.io/managed-by',
  'app.kubernetes.io/instance',
  'app.kubernetes.io/version',
] as const

export interface RenderOptions {
  release?: string
  namespace?: string
  /** `--kube-version` (default: the Kubernetes minor Helm was built for). */
  kubeVersion?: string
}

function templateArgs(opts: RenderOptions): string[] {
  const args = [
    'template',
    opts.release ?? DEFAULT_RELEASE.name,
    CHART_DIR,
    '--namespace',
    opts.namespace ?? DEFAULT_RELEASE.namespace,
    // Values on stdin, as JSON (which is YAML): no temp files, nothing depends on the folder.
    '--values',
    '-',
  ]
  if (opts.kubeVersion !== undefined) args.push('--kube-version', opts.kubeVersion)
  return args
}

/** `helm template` as it ran: for the cases that must fail. */
export function helmTemplate(values: unknown = {}, opts: RenderOptions = {}): Promise<RunResult> {
  return run(HELM, templateArgs(opts), { input: JSON.stringify(values) })
}

/** The objects the chart renders for these values (what `helm install` would apply). */
export async function renderChart(values: unknown = {}, opts: RenderOptions = {}): Promise<K8sObject[]> {
  const res = await helmTemplate(values, opts)
  if (res.code !== 0) throw new Error(`helm template failed: ${res.stderr}`)
  return parseYamlDocuments(res.stdout, 'helm template')
}

/** `helm lint --strict` of the chart with these values. */
export function helmLint(values: unknown = {}): Promise<RunResult> {
  return run(HELM, ['lint', CHART_DIR, '--strict', '--values', '-'], { input: JSON.stringify(values) })
}

/** The objects without Helm's own labels, for comparing with kustomize's. */
export function withoutHelmLabels(objs: readonly K8sObject[]): K8sObject[] {
  return objs.map((o) => {
    const copy = structuredClone(o)
    const labels = copy.metadata.labels as Record<string, string> | undefined
    if (labels) for (const l of HELM_ONLY_LABELS) delete labels[l]
    return copy
  })
}

/** The chart's values.yaml and values.schema.json. */
export async function chartValues(): Promise<{ values: any; schema: any }> {
  const values = parse(await readFile(join(CHART_DIR, 'values.yaml'), 'utf8')) as unknown
  const schema = JSON.parse(await readFile(join(CHART_DIR, 'values.schema.json'), 'utf8')) as unknown
  return { values, schema }
}

export interface ValuesRow {
  /** Dotted path, e.g. `csi.image.tag`. */
  key: string
  type: string
  /** The default from values.yaml as compact JSON (`""`, `[]`, `{"cpu":"50m"}`). */
  default: string
  description: string
}

/** One row per leaf of the schema (a property that is not itself an object with properties). */
export function valuesRows(schema: any, values: any, prefix = ''): ValuesRow[] {
  const rows: ValuesRow[] = []
  for (const [name, prop] of Object.entries<any>(schema.properties ?? {})) {
    const key = prefix === '' ? name : `${prefix}.${name}`
    const value = values?.[name]
    if (prop.type === 'object' && prop.properties) {
      rows.push(...valuesRows(prop, value, key))
      continue
    }
    rows.push({
      key,
      type: ([] as string[]).concat(prop.type ?? 'any').join(' or '),
      default: JSON.stringify(value ?? null),
      description: String(prop.description ?? ''),
    })
  }
  return rows
}

export interface CrdValidation {
  kind: string
  name: string
  ok: boolean
  errors: string[]
}

// openAPIV3Schema of the served version of each CRD, applied with jsonschema (in .cache/deploy):
// structural schemas are JSON Schema plus x-kubernetes-* hints, which jsonschema ignores.
const CRD_VALIDATOR = String.raw`
import json, sys
import jsonschema
req = json.load(sys.stdin)
out = []
for res in req["resources"]:
    kind = res.get("kind", "?")
    name = (res.get("metadata") or {}).get("name", "?")
    schema = req["schemas"].get(res.get("apiVersion", "") + "/" + kind)
    item = {"kind": kind, "name": name, "errors": []}
    if schema is None:
        item["errors"].append("no CRD for " + res.get("apiVersion", "?") + " " + kind)
    else:
        v = jsonschema.Draft7Validator(schema)
        for e in sorted(v.iter_errors(res), key=lambda e: list(e.path)):
            item["errors"].append(".".join(str(p) for p in e.path) + ": " + e.message)
    item["ok"] = not item["errors"]
    out.append(item)
json.dump(out, sys.stdout)
`

/** The CRD files of CRD_DIR (to install on an API server before applying the monitoring kinds). */
export async function crdFiles(): Promise<string[]> {
  return (await readdir(CRD_DIR)).filter((f) => f.endsWith('.yaml')).map((f) => join(CRD_DIR, f))
}

/** Validates custom resources against the schemas of the real CRDs in CRD_DIR. */
export async function validateCustomResources(resources: readonly K8sObject[]): Promise<CrdValidation[]> {
  const schemas: Record<string, unknown> = {}
  for (const file of await crdFiles()) {
    for (const crd of parseYamlDocuments(await readFile(file, 'utf8'), file) as any[]) {
      for (const version of crd.spec.versions) {
        if (!version.served) continue
        schemas[`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`] = version.schema.openAPIV3Schema
      }
    }
  }
  const res = await run(DEPLOY_PYTHON, ['-c', CRD_VALIDATOR], { input: JSON.stringify({ resources, schemas }) })
  if (res.code !== 0) throw new Error(`CRD validation crashed: ${res.stderr}`)
  return JSON.parse(res.stdout) as CrdValidation[]
}

/** Values that turn every optional part of the chart on: what lint, schema and dry-run tests render. */
export const CHART_EVERY_OPTION = {
  namespace: { create: true },
  rbac: { tokenRequest: true },
  metrics: {
    podMonitor: { enabled: true, labels: { release: 'prometheus' } },
    serviceMonitor: { enabled: true, interval: '1m', scrapeTimeout: '15s' },
  },
  prometheusRule: { enabled: true, labels: { release: 'prometheus' } },
  grafanaDashboard: { enabled: true, annotations: { grafana_folder: 'Secrets' } },
  global: { externalVaultAddr: 'https://vault.vault.svc:8200', imagePullSecrets: ['regcred', { name: 'other' }] },
  csi: {
    hmacSecretName: 'my-hmac-key',
    vaultAddrAllowlist: ['https://vault.vault.svc:8200', 'https://*.vault.example:8200'],
    extraArgs: ['-identity-scope=serviceaccount', '--static-freshness=30s'],
    proxy: {
      httpsProxy: 'http://proxy.corp.example:3128',
      httpProxy: 'http://proxy.corp.example:3128',
      noProxy: '.svc,.cluster.local,10.0.0.0/8',
      existingSecret: 'egress-proxy',
    },
    volumes: [{ name: 'vault-ca', configMap: { name: 'vault-ca' } }],
    volumeMounts: [{ name: 'vault-ca', mountPath: '/vault/ca', readOnly: true }],
    pod: { annotations: { 'example.com/team': 'platform' }, extraLabels: { team: 'platform' } },
    daemonSet: { annotations: { 'example.com/owner': 'platform' }, extraLabels: { tier: 'node' } },
    serviceAccount: { annotations: { 'example.com/sa': 'yes' }, extraLabels: { sa: 'yes' } },
  },
}
