// The Helm chart (daemonset/chart/), through the real Helm binary: `helm lint --strict`, the
// values schema refusing typos at render time, the chart rendering exactly the objects kustomize
// builds for the same settings (so the two cannot drift), every rendered object valid against the
// Kubernetes schemas and the Prometheus Operator's own CRDs, a vault-helm `csi:` block copied as it
// is, the rendered daemon flags accepted by the daemon's own parser, the alert rules and dashboard
// equal to docs/, and the values table in docs/configuration.md equal to the schema.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { loadConfig } from '../../src/config/config.js'
import { PACKAGE_ROOT, PACKAGE_VERSION } from '../../src/package-info.js'
import {
  CHART_DIR,
  CHART_EVERY_OPTION,
  HELM_ONLY_LABELS,
  chartValues,
  helmLint,
  helmTemplate,
  renderChart,
  validateCustomResources,
  valuesRows,
  withoutHelmLabels,
} from '../support/helm.js'
import { KUBERNETES_VERSIONS, kustomizeBuild, validateObjects, type K8sObject } from '../support/manifests.js'

function key(o: K8sObject): string {
  return `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`
}

function byKey(objs: readonly K8sObject[]): Map<string, K8sObject> {
  return new Map(objs.map((o) => [key(o), o]))
}

function only(objs: readonly K8sObject[], kind: string): any {
  const found = objs.filter((o) => o.kind === kind)
  if (found.length !== 1) throw new Error(`expected one ${kind}, got ${found.length}`)
  return found[0]
}

function provider(objs: readonly K8sObject[]): any {
  return only(objs, 'DaemonSet').spec.template.spec.containers.find((c: any) => c.name === 'provider')
}

/** Every option of the chart switched on, with a vault-helm-style block on top. */

t.test('helm lint --strict passes, and really lints', async (t) => {
  for (const [what, values] of [
    ['defaults', {}],
    ['every option', CHART_EVERY_OPTION],
  ] as const) {
    const res = await helmLint(values)
    t.equal(res.code, 0, `${what}: helm lint --strict (${res.stdout}${res.stderr})`)
    t.match(res.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/)
  }
  const bad = await helmLint({ csi: { image: { pullPolicy: 'Sometimes' } } })
  t.not(bad.code, 0, 'a value the schema refuses fails the lint')
  t.match(bad.stdout + bad.stderr, /pullPolicy/)
})

t.test('the chart’s defaults render exactly what kustomize builds, for each variant', async (t) => {
  const variants: Array<[string, unknown]> = [
    ['daemonset', { namespace: { create: true } }],
    ['daemonset/overlays/token-request', { namespace: { create: true }, rbac: { tokenRequest: true } }],
    ['daemonset/overlays/root-socket-dir', { namespace: { create: true }, csi: { daemonSet: { runAsRoot: true } } }],
    ['daemonset/overlays/openbao', { namespace: { create: true }, csi: { providers: ['openbao'] } }],
  ]
  for (const [dir, values] of variants) {
    const kustomized = await kustomizeBuild(join(PACKAGE_ROOT, dir))
    const charted = await renderChart(values)
    t.same([...byKey(charted).keys()].sort(), [...byKey(kustomized).keys()].sort(), `${dir}: the same objects`)
    const plain = byKey(withoutHelmLabels(charted))
    for (const [k, obj] of byKey(kustomized)) {
      t.strictSame(plain.get(k), obj, `${dir}: ${k} is identical, field by field`)
    }
    for (const o of charted) {
      const labels = o.metadata.labels as Record<string, string>
      t.ok(
        HELM_ONLY_LABELS.every((l) => typeof labels[l] === 'string'),
        `${key(o)} carries Helm's labels (the only difference)`,
      )
    }
    for (const o of kustomized) {
      const labels = (o.metadata.labels ?? {}) as Record<string, string>
      t.notOk(
        HELM_ONLY_LABELS.some((l) => l in labels),
        `${key(o)} from kustomize has none of them, so nothing else was stripped`,
      )
    }
  }
  const noNamespace = await renderChart()
  t.notOk(
    noNamespace.some((o) => o.kind === 'Namespace'),
    'by default the chart leaves the namespace to helm',
  )
})

t.test('the comparison can fail: one changed setting shows up', async (t) => {
  const kustomized = byKey(await kustomizeBuild(join(PACKAGE_ROOT, 'daemonset')))
  const charted = byKey(
    withoutHelmLabels(await renderChart({ namespace: { create: true }, csi: { healthPort: 9090 } })),
  )
  const k = 'DaemonSet/vault-csi-provider/vault-csi-provider'
  t.notSame(charted.get(k), kustomized.get(k), 'a different health port is a different DaemonSet')
})

t.test('every object the chart can render is valid', async (t) => {
  const objs = await renderChart(CHART_EVERY_OPTION)
  const kinds = objs.map((o) => o.kind).sort()
  t.same(kinds, [
    'ClusterRole',
    'ClusterRoleBinding',
    'ConfigMap',
    'DaemonSet',
    'Namespace',
    'NetworkPolicy',
    'PodMonitor',
    'PrometheusRule',
    'Role',
    'RoleBinding',
    'Service',
    'ServiceAccount',
    'ServiceMonitor',
  ])
  const custom = objs.filter((o) => o.apiVersion.startsWith('monitoring.coreos.com/'))
  const core = objs.filter((o) => !custom.includes(o))
  const results = await validateObjects(core)
  t.same(
    results.filter((r) => !r.ok).map((r) => `${r.kind}/${r.name} @${r.version}: ${r.errors.join('; ')}`),
    [],
    `built-in kinds valid on Kubernetes ${KUBERNETES_VERSIONS.join(' and ')}`,
  )
  t.equal(results.length, core.length * KUBERNETES_VERSIONS.length, 'every built-in object checked')
  const crdResults = await validateCustomResources(custom)
  t.same(
    crdResults.filter((r) => !r.ok),
    [],
    'PodMonitor, ServiceMonitor and PrometheusRule valid against the Prometheus Operator’s CRDs',
  )
  t.equal(crdResults.length, 3)

  // The CRD check really checks.
  const broken = structuredClone(only(custom, 'PodMonitor'))
  broken.spec.podMetricsEndpoints[0].interval = 'thirty seconds'
  broken.spec.podMetricsEndpoint = []
  const [bad] = await validateCustomResources([broken])
  t.notOk(bad!.ok, 'a bad interval is refused')
  t.match(bad!.errors.join('\n'), /interval/)
})

t.test('values.schema.json refuses typos and wrong types at render time', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [{ csii: { enabled: true } }, /additional properties 'csii' not allowed/],
    [{ csi: { imagee: { tag: '1' } } }, /at '\/csi': additional properties 'imagee'/],
    [{ csi: { image: { pullPolicy: 'Sometimes' } } }, /\/csi\/image\/pullPolicy/],
    [{ csi: { logLevel: 'verbose' } }, /\/csi\/logLevel/],
    [{ csi: { debug: 'yes' } }, /\/csi\/debug/],
    [{ csi: { pod: { tolerations: 5 } } }, /\/csi\/pod\/tolerations/],
    [{ csi: { daemonSet: { providersDir: 'relative/dir' } } }, /\/csi\/daemonSet\/providersDir/],
    [{ csi: { hmacSecretName: 'Not_A_Name' } }, /\/csi\/hmacSecretName/],
    [{ csi: { healthPort: 70000 } }, /\/csi\/healthPort/],
    [{ csi: { vaultAddrAllowlist: ['vault.example:8200'] } }, /\/csi\/vaultAddrAllowlist/],
    [{ global: { externalVaultAddr: 'vault:8200' } }, /\/global\/externalVaultAddr/],
    [{ metrics: { podMonitor: { interval: '30 seconds' } } }, /\/metrics\/podMonitor\/interval/],
    // vault-helm's Vault Agent sidecar does not exist here: say so at install, not at the first Mount.
    [{ csi: { agent: { enabled: true } } }, /additional properties 'agent' not allowed/],
  ]
  for (const [values, want] of cases) {
    const res = await helmTemplate(values)
    t.not(res.code, 0, `${JSON.stringify(values)} fails`)
    t.match(res.stderr, want, `${JSON.stringify(values)}: the error names the value`)
  }
})

t.test('csi.proxy: the egress proxy variables, and a Secret for a URL with credentials', async (t) => {
  const env = (c: any): Array<{ name: string; value?: string }> => c.env
  const defaults = provider(await renderChart({}))
  t.same(
    env(defaults).map((e) => e.name),
    ['POD_NAMESPACE'],
    'nothing by default',
  )
  t.equal(defaults.envFrom, undefined)
  const set = provider(await renderChart(CHART_EVERY_OPTION))
  t.same(
    env(set).filter((e) => e.name !== 'POD_NAMESPACE'),
    [
      { name: 'HTTPS_PROXY', value: 'http://proxy.corp.example:3128' },
      { name: 'HTTP_PROXY', value: 'http://proxy.corp.example:3128' },
      { name: 'NO_PROXY', value: '.svc,.cluster.local,10.0.0.0/8' },
    ],
  )
  t.same(set.envFrom, [{ secretRef: { name: 'egress-proxy' } }])
  const bad = await helmTemplate({ csi: { proxy: { httpsProxi: 'http://p:3128' } } })
  t.match(bad.stderr, /at '\/csi\/proxy': additional properties 'httpsProxi' not allowed/)
})

// A vault-helm `csi:` block as vault-helm users write it (its value names and forms: probe
// settings, a templated string of annotations, tolerations as a YAML string, null volumes, an empty
// maxUnavailable, global.externalVaultAddr and imagePullSecrets).
const VAULT_HELM_VALUES = {
  global: { externalVaultAddr: 'https://vault.example:8200', imagePullSecrets: [{ name: 'regcred' }] },
  csi: {
    enabled: true,
    image: { repository: 'registry.example/vault-csi-provider-ts', tag: '0.1.0', pullPolicy: 'IfNotPresent' },
    volumes: null,
    volumeMounts: null,
    resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '50m', memory: '128Mi' } },
    hmacSecretName: 'vault-hmac',
    hostNetwork: false,
    daemonSet: {
      updateStrategy: { type: 'RollingUpdate', maxUnavailable: '' },
      annotations: 'example.com/release: "{{ .Release.Name }}"\n',
      providersDir: '/etc/kubernetes/secrets-store-csi-providers',
      kubeletRootDir: '/var/lib/kubelet',
      extraLabels: { team: 'platform' },
      securityContext: { pod: {}, container: {} },
    },
    pod: {
      annotations: {},
      tolerations: '- key: node-role.kubernetes.io/control-plane\n  operator: Exists\n  effect: NoSchedule\n',
      nodeSelector: {},
      affinity: {},
      extraLabels: {},
    },
    priorityClassName: 'system-node-critical',
    serviceAccount: { annotations: {}, extraLabels: {} },
    readinessProbe: {
      failureThreshold: 2,
      initialDelaySeconds: 5,
      periodSeconds: 5,
      successThreshold: 1,
      timeoutSeconds: 3,
    },
    livenessProbe: {
      failureThreshold: 2,
      initialDelaySeconds: 5,
      periodSeconds: 5,
      successThreshold: 1,
      timeoutSeconds: 3,
    },
    logLevel: 'info',
    debug: true,
    extraArgs: ['-cache-size=500'],
  },
}

t.test('a vault-helm csi block installs and means the same here', async (t) => {
  const objs = await renderChart(VAULT_HELM_VALUES, { release: 'vault', namespace: 'vault' })
  const ds = only(objs, 'DaemonSet')
  const pod = ds.spec.template.spec
  const c = provider(objs)
  t.equal(c.image, 'registry.example/vault-csi-provider-ts:0.1.0')
  t.equal(c.imagePullPolicy, 'IfNotPresent')
  t.same(c.resources, VAULT_HELM_VALUES.csi.resources)
  t.equal(pod.priorityClassName, 'system-node-critical')
  t.same(pod.tolerations, [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }])
  t.same(pod.imagePullSecrets, [{ name: 'regcred' }])
  t.equal(ds.metadata.annotations['example.com/release'], 'vault', 'templated annotations, as vault-helm renders them')
  t.equal(ds.metadata.labels.team, 'platform')
  t.equal(
    pod.volumes.find((v: any) => v.name === 'providervol').hostPath.path,
    '/etc/kubernetes/secrets-store-csi-providers',
  )
  t.same(
    ds.spec.updateStrategy,
    { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } },
    'an empty maxUnavailable is unset',
  )
  for (const probe of ['livenessProbe', 'readinessProbe'] as const) {
    t.match(c[probe], VAULT_HELM_VALUES.csi[probe], `${probe} settings`)
  }
  t.same(c.args, [
    '-endpoint=/provider/vault.sock',
    '-health-addr=:8080',
    '-log-level=debug',
    '-hmac-secret-name=vault-hmac',
    '-vault-addr=https://vault.example:8200',
    '-cache-size=500',
  ])
  const role = only(objs, 'Role')
  t.same(role.rules[0].resourceNames, ['vault-hmac'], 'the Role follows hmacSecretName')
  t.equal(ds.metadata.name, 'vault-vault-csi-provider')
  t.equal(pod.serviceAccountName, only(objs, 'ServiceAccount').metadata.name)
  t.same(only(objs, 'RoleBinding').subjects, [
    { kind: 'ServiceAccount', name: 'vault-vault-csi-provider', namespace: 'vault' },
  ])

  const disabled = await renderChart({ csi: { enabled: false } })
  t.same(disabled, [], 'csi.enabled: false renders nothing, as in vault-helm')
})

t.test('the daemon’s own flag parser accepts every argument the chart renders', async (t) => {
  const cases: Array<[string, unknown, Record<string, unknown>]> = [
    ['defaults', {}, { endpoint: '/provider/vault.sock', healthAddr: ':8080', logLevel: 'info' }],
    ['vault-helm block', VAULT_HELM_VALUES, { logLevel: 'debug', hmacSecretName: 'vault-hmac', cacheSize: 500 }],
    [
      'every option',
      CHART_EVERY_OPTION,
      {
        hmacSecretName: 'my-hmac-key',
        identityScope: 'serviceaccount',
        staticFreshnessMs: 30_000,
        vaultAddrAllowlist: ['https://vault.vault.svc:8200', 'https://*.vault.example:8200'],
      },
    ],
    ['another health port', { csi: { healthPort: 9090, logLevel: 'warn' } }, { healthAddr: ':9090', logLevel: 'warn' }],
  ]
  for (const [what, values, want] of cases) {
    const objs = await renderChart(values)
    const c = provider(objs)
    const config = loadConfig(c.args, {})
    t.match(config, want, `${what}: ${c.args.join(' ')}`)
    const port = Number(/:(\d+)$/.exec(config.healthAddr)![1])
    t.equal(c.ports.find((p: any) => p.name === 'health').containerPort, port, `${what}: the probes' port is served`)
    t.equal(only(objs, 'DaemonSet').spec.template.metadata.annotations['prometheus.io/port'], String(port))
  }
  const vaultHelm = provider(await renderChart(VAULT_HELM_VALUES))
  t.equal(loadConfig(vaultHelm.args, {}).vault.address, 'https://vault.example:8200', 'global.externalVaultAddr')
})

t.test('security contexts: hardened by default, user keys win one by one, the init step follows the ids', async (t) => {
  const objs = await renderChart({
    csi: { daemonSet: { securityContext: { pod: { runAsUser: 1000, runAsGroup: 2000, fsGroup: 2000 } } } },
  })
  const pod = only(objs, 'DaemonSet').spec.template.spec
  t.same(pod.securityContext, {
    runAsNonRoot: true,
    runAsUser: 1000,
    runAsGroup: 2000,
    fsGroup: 2000,
    seccompProfile: { type: 'RuntimeDefault' },
  })
  t.match(pod.initContainers[0].command[2], 'uid = 1000, gid = 2000', 'the socket directory is prepared for those ids')

  const asRootContainer = await renderChart({
    csi: { daemonSet: { securityContext: { container: { runAsUser: 0, runAsNonRoot: false } } } },
  })
  const ds = only(asRootContainer, 'DaemonSet').spec.template.spec
  t.equal(ds.containers[0].securityContext.runAsUser, 0, 'a 0 from the user is kept (not taken for empty)')
  t.same(ds.containers[0].securityContext.capabilities, { drop: ['ALL'] }, 'the rest stays hardened')
  t.match(ds.initContainers[0].command[2], 'uid = 0, gid = 65532')

  const hostNet = only(await renderChart({ csi: { hostNetwork: true } }), 'DaemonSet').spec.template.spec
  t.equal(hostNet.hostNetwork, true)
  t.equal(hostNet.dnsPolicy, 'ClusterFirstWithHostNet', 'cluster DNS still works on the host network')
})

t.test('monitoring objects select the provider pods; rules and dashboard are docs/’s', async (t) => {
  const objs = await renderChart(CHART_EVERY_OPTION)
  const podLabels = only(objs, 'DaemonSet').spec.template.metadata.labels
  for (const kind of ['PodMonitor', 'ServiceMonitor']) {
    const m = only(objs, kind)
    t.match(podLabels, m.spec.selector.matchLabels, `${kind} selects the provider pods`)
    t.same(m.spec.namespaceSelector, { matchNames: ['vault-csi-provider'] })
  }
  const svc = only(objs, 'Service')
  t.match(podLabels, svc.spec.selector, 'the metrics Service selects the provider pods')
  t.match(
    svc.metadata.labels,
    only(objs, 'ServiceMonitor').spec.selector.matchLabels,
    'and the ServiceMonitor selects it',
  )
  t.equal(svc.spec.clusterIP, 'None')
  t.equal(only(objs, 'PodMonitor').spec.podMetricsEndpoints[0].port, 'health')
  t.equal(only(objs, 'PodMonitor').metadata.labels.release, 'prometheus')

  const alerts = parse(await readFile(join(PACKAGE_ROOT, 'docs', 'prometheus-alerts.yaml'), 'utf8')) as any
  t.strictSame(only(objs, 'PrometheusRule').spec.groups, alerts.groups, 'every alert of docs/prometheus-alerts.yaml')
  t.match(
    JSON.stringify(only(objs, 'PrometheusRule').spec.groups),
    /\{\{ \$value/,
    'Prometheus templates reach Prometheus untouched',
  )
  const dashboard = JSON.parse(await readFile(join(PACKAGE_ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as unknown
  const cm = only(objs, 'ConfigMap')
  t.same(JSON.parse(cm.data['vault-csi-provider.json']), dashboard, 'docs/grafana-dashboard.json')
  t.equal(cm.metadata.labels.grafana_dashboard, '1', 'the Grafana sidecar’s default label')
  t.equal(cm.metadata.annotations.grafana_folder, 'Secrets')

  // Helm cannot read outside the chart: the chart carries copies, which must stay docs/'s.
  for (const file of ['prometheus-alerts.yaml', 'grafana-dashboard.json']) {
    t.equal(
      await readFile(join(CHART_DIR, 'files', file), 'utf8'),
      await readFile(join(PACKAGE_ROOT, 'docs', file), 'utf8'),
      `daemonset/chart/files/${file} is docs/${file} (cp docs/${file} daemonset/chart/files/)`,
    )
  }
})

t.test('the chart’s version and default image are the package’s', async (t) => {
  const chart = parse(await readFile(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as any
  t.equal(chart.version, PACKAGE_VERSION)
  t.equal(chart.appVersion, PACKAGE_VERSION)
  t.equal(provider(await renderChart()).image, `vault-csi-provider-ts:${PACKAGE_VERSION}`)
  const old = await helmTemplate({}, { kubeVersion: '1.28.0' })
  t.not(old.code, 0, 'Kubernetes older than the oldest validated minor is refused')
  t.match(old.stderr, /kubeVersion/)
})

t.test('docs/configuration.md lists every value of the schema, with its default', async (t) => {
  const { values, schema } = await chartValues()
  const want = valuesRows(schema, values)
  t.ok(want.length >= 50, `${want.length} values`)
  t.ok(
    want.every((r) => r.description !== ''),
    'every value has a description in values.schema.json',
  )
  const doc = await readFile(join(PACKAGE_ROOT, 'docs', 'configuration.md'), 'utf8')
  const start = doc.indexOf('<!-- CHART VALUES: generated from daemonset/chart/values.schema.json')
  t.not(start, -1, 'the generated table is marked')
  const lines = doc.slice(start).split('\n').slice(1)
  const table: string[] = []
  for (const line of lines.slice(lines.findIndex((l) => l.startsWith('|')))) {
    if (!line.startsWith('|')) break
    table.push(line)
  }
  const rows = table.slice(2).map((line) =>
    line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim().replace(/\\\|/g, '|')),
  )
  const expected = want.map((r) => [`\`${r.key}\``, r.type, `\`${r.default}\``, r.description])
  t.strictSame(rows, expected, 'the table is the schema (rows in the schema’s order)')
  if (JSON.stringify(rows) !== JSON.stringify(expected)) {
    // Shown on failure only: the table to paste (then npx prettier --write docs/configuration.md).
    t.comment(
      ['| value | type | default | meaning |', '| --- | --- | --- | --- |']
        .concat(expected.map((r) => `| ${r.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`))
        .join('\n'),
    )
  }
})
