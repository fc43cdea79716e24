// Every deployment manifest, checked offline: kustomize builds each variant, every object
// is validated against the Kubernetes JSON schemas of the oldest and newest supported
// Kubernetes (kubernetes-validate, strict: unknown fields are errors), SecretProviderClasses
// against the driver's own CRD schema (made strict); then the properties the issue asks of
// the DaemonSet and RBAC are asserted on the built objects. server-dry-run.test.ts sends the
// same objects to a real API server.
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { PACKAGE_ROOT, PACKAGE_VERSION } from '../../src/package-info.js'
import { parseObjects } from '../../src/request/objects.js'
import {
  KUBERNETES_VERSIONS,
  kustomizeBuild,
  parseYamlDocuments,
  validateObjects,
  type K8sObject,
  type ValidationResult,
} from '../support/manifests.js'

const VARIANTS = ['daemonset', 'daemonset/overlays/token-request', 'daemonset/overlays/root-socket-dir']

function failures(results: ValidationResult[]): string[] {
  return results.filter((r) => !r.ok).map((r) => `${r.kind}/${r.name} @${r.version}: ${r.errors.join('; ')}`)
}

function byKind(objs: K8sObject[], kind: string): K8sObject[] {
  return objs.filter((o) => o.kind === kind)
}

function daemonSet(objs: K8sObject[]): any {
  const ds = byKind(objs, 'DaemonSet')
  if (ds.length !== 1) throw new Error(`expected one DaemonSet, got ${ds.length}`)
  return ds[0]
}

const builds = new Map<string, K8sObject[]>()
t.before(async () => {
  for (const v of VARIANTS) builds.set(v, await kustomizeBuild(join(PACKAGE_ROOT, v)))
})

t.test('every kustomize variant validates against the Kubernetes schemas', async (t) => {
  for (const v of VARIANTS) {
    const objs = builds.get(v)!
    const results = await validateObjects(objs)
    t.same(failures(results), [], `${v}: every object valid on Kubernetes ${KUBERNETES_VERSIONS.join(' and ')}`)
    t.equal(results.length, objs.length * KUBERNETES_VERSIONS.length, `${v}: every object checked`)
    t.ok(
      results.every((r) => r.schema === 'kubernetes'),
      `${v}: built-in kinds only`,
    )
  }
  const kinds = builds
    .get('daemonset')!
    .map((o) => o.kind)
    .sort()
  t.same(kinds, ['DaemonSet', 'Namespace', 'NetworkPolicy', 'Role', 'RoleBinding', 'ServiceAccount'])
})

t.test('the validation really rejects bad objects', async (t) => {
  const ds = structuredClone(daemonSet(builds.get('daemonset')!))
  ds.spec.template.spec.containers[0].securityContex = { runAsUser: 0 }
  ds.spec.replicas = 3
  const spc = {
    apiVersion: 'secrets-store.csi.x-k8s.io/v1',
    kind: 'SecretProviderClass',
    metadata: { name: 'bad' },
    spec: { provider: 'vault', parameters: { vaultSkipTLSVerify: true, objects: '[]' }, secretObject: [] },
  }
  const unknownKind = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }
  const results = await validateObjects([ds, spc as unknown as K8sObject, unknownKind], ['1.37.0'])
  const [dsResult, spcResult, widgetResult] = results
  t.notOk(dsResult!.ok, 'unknown fields in a DaemonSet fail')
  t.match(dsResult!.errors.join('\n'), /securityContex|replicas/)
  t.notOk(spcResult!.ok, 'a non-string parameter and an unknown spec field fail')
  t.match(spcResult!.errors.join('\n'), /vaultSkipTLSVerify/)
  t.match(spcResult!.errors.join('\n'), /secretObject/)
  t.notOk(widgetResult!.ok, 'a kind without a schema fails instead of being skipped')
})

t.test('examples validate, and their objects parse with the provider’s own parser', async (t) => {
  const dir = join(PACKAGE_ROOT, 'examples')
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort()
  t.ok(files.length >= 5, `examples found: ${files.join(', ')}`)
  const all: K8sObject[] = []
  for (const f of files) {
    const objs = parseYamlDocuments(await readFile(join(dir, f), 'utf8'), f)
    t.ok(objs.length > 0, `${f} holds objects`)
    all.push(...objs)
  }
  const results = await validateObjects(all)
  t.same(failures(results), [], 'every example object is valid')

  const spcs = byKind(all, 'SecretProviderClass') as any[]
  const names = new Set(spcs.map((s) => s.metadata.name))
  for (const want of ['webapp-kv', 'webapp-database', 'webapp-pki']) t.ok(names.has(want), `${want} exists`)
  for (const spc of spcs) {
    t.equal(spc.spec.provider, 'vault', `${spc.metadata.name}: provider vault (vault.sock)`)
    t.ok(spc.spec.parameters.roleName, `${spc.metadata.name}: roleName`)
    const objects = parseObjects(spc.spec.parameters.objects)
    t.ok(objects.length > 0, `${spc.metadata.name}: ${objects.length} objects parse`)
  }
  const pod = byKind(all, 'Pod')[0] as any
  t.ok(pod, 'an example pod')
  for (const vol of pod.spec.volumes) {
    t.equal(vol.csi.driver, 'secrets-store.csi.k8s.io')
    t.ok(names.has(vol.csi.volumeAttributes.secretProviderClass), `volume ${vol.name} names an example SPC`)
  }
})

t.test('driver Helm values: token requests for audiences vault and openbao, rotation', async (t) => {
  const values = parse(await readFile(join(PACKAGE_ROOT, 'daemonset', 'driver-values.yaml'), 'utf8'))
  t.same(values.tokenRequests, [{ audience: 'vault' }, { audience: 'openbao' }])
  t.equal(values.enableSecretRotation, true)
  t.match(values.rotationPollInterval, /^\d+[smh]$/)
  t.equal(values.linux.providersDir, '/var/run/secrets-store-csi-providers')
})

t.test('the DaemonSet', async (t) => {
  const ds = daemonSet(builds.get('daemonset')!)
  const pod = ds.spec.template.spec
  const c = pod.containers.find((x: any) => x.name === 'provider')

  const init0 = pod.initContainers[0]
  t.equal(c.image, `vault-csi-provider-ts:${PACKAGE_VERSION}`, 'the image of this package version, not latest')
  t.equal(init0.image, c.image, 'the init container uses the same image (node is in it)')
  t.equal(ds.metadata.namespace, 'vault-csi-provider')
  t.equal(pod.serviceAccountName, 'vault-csi-provider')
  t.equal(pod.priorityClassName, 'system-node-critical')
  t.ok(
    pod.tolerations.some((tol: any) => tol.operator === 'Exists' && tol.key === undefined && tol.effect === undefined),
    'a toleration for every taint',
  )

  const vol = pod.volumes.find((v: any) => v.hostPath)
  t.equal(vol.hostPath.path, '/var/run/secrets-store-csi-providers')
  t.same(
    c.volumeMounts.find((m: any) => m.name === vol.name),
    { name: vol.name, mountPath: '/provider' },
    'mounted at /provider',
  )
  t.ok(c.args.includes('-endpoint=/provider/vault.sock'))
  t.ok(c.args.includes('-health-addr=:8080'))

  const port = c.ports.find((p: any) => p.name === 'health')
  t.equal(port.containerPort, 8080)
  t.equal(c.livenessProbe.httpGet.path, '/health/live')
  t.equal(c.readinessProbe.httpGet.path, '/health/ready')
  t.equal(c.startupProbe.httpGet.path, '/health/live')
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) t.equal(probe.httpGet.port, 'health')

  t.same(ds.spec.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } })
  t.notOk(
    pod.containers.some((x: any) => (x.ports ?? []).some((p: any) => p.hostPort)),
    'no hostPort (two pods share a node during the handover)',
  )
  t.notOk(pod.hostNetwork, 'pod network')

  t.ok(c.resources.requests.memory && c.resources.limits.memory, 'memory request and limit')
  t.ok(c.resources.requests.cpu, 'cpu request')
  t.equal(c.resources.limits.cpu, undefined, 'no CPU limit (throttling would stretch Mounts)')

  t.same(pod.securityContext, {
    runAsNonRoot: true,
    runAsUser: 65532,
    runAsGroup: 65532,
    seccompProfile: { type: 'RuntimeDefault' },
  })
  t.same(c.securityContext, {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    privileged: false,
    capabilities: { drop: ['ALL'] },
  })

  const init = pod.initContainers.find((x: any) => x.name === 'prepare-socket-dir')
  t.same(init.securityContext.capabilities, { drop: ['ALL'], add: ['CHOWN', 'FOWNER'] })
  t.equal(init.securityContext.readOnlyRootFilesystem, true)
  t.equal(init.securityContext.allowPrivilegeEscalation, false)
  const script = init.command.join(' ')
  t.match(script, `uid = ${pod.securityContext.runAsUser}, gid = ${pod.securityContext.runAsGroup}`, 'ids agree')
  t.ok(
    init.volumeMounts.some((m: any) => m.name === vol.name && m.mountPath === '/provider'),
    'init sees the same directory',
  )
})

const notRoot = process.getuid?.() !== 0 ? 'needs root to chown' : false
t.test('the init container’s directory preparation, run for real', { skip: notRoot }, async (t) => {
  // The same script against a temp dir standing in for /provider: as root (the test
  // machine), it must leave a root-owned dir group 65532, g+rwx, sticky.
  const { mkdtemp, stat, rm, chmod } = await import('node:fs/promises')
  const { tmpdir } = await import('node:os')
  const { execFileSync } = await import('node:child_process')
  const ds = daemonSet(builds.get('daemonset')!)
  const init = ds.spec.template.spec.initContainers[0]
  const dir = await mkdtemp(join(tmpdir(), 'vcp-provider-dir-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await chmod(dir, 0o755)
  const [cmd, flag, script] = init.command as string[]
  t.equal(cmd, 'node')
  const patched = script!.replace(`'/provider'`, JSON.stringify(dir))
  t.not(patched, script, 'the script names /provider')
  // A vault.sock left by a root-run provider (still listening) is handed to the provider's user.
  const net = await import('node:net')
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(join(dir, 'vault.sock'), resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  t.equal((await stat(join(dir, 'vault.sock'))).uid, 0)
  const out = execFileSync(process.execPath, [flag!, patched], { encoding: 'utf8' })
  t.match(out, /provider directory ready/)
  const sock = await stat(join(dir, 'vault.sock'))
  t.same([sock.uid, sock.gid], [65532, 65532], 'a root-owned vault.sock is handed over')
  const st = await stat(dir)
  t.equal(st.uid, 0, 'owner unchanged')
  t.equal(st.gid, 65532, 'group is the provider’s')
  t.equal(st.mode & 0o7777, 0o1775, 'g+rwx and sticky')
  execFileSync(process.execPath, [flag!, patched], { encoding: 'utf8' })
  t.equal((await stat(dir)).mode & 0o7777, 0o1775, 'idempotent')
})

t.test('RBAC: least privilege in the base, TokenRequest only in its overlay', async (t) => {
  const base = builds.get('daemonset')!
  const role = byKind(base, 'Role')[0] as any
  t.same(role.rules, [
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['vault-csi-provider-hmac-key'], verbs: ['get'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
  ])
  t.equal(byKind(base, 'ClusterRole').length, 0, 'no cluster-wide rights in the base')
  const binding = byKind(base, 'RoleBinding')[0] as any
  t.same(binding.subjects, [{ kind: 'ServiceAccount', name: 'vault-csi-provider', namespace: 'vault-csi-provider' }])

  const overlay = builds.get('daemonset/overlays/token-request')!
  const clusterRole = byKind(overlay, 'ClusterRole')[0] as any
  t.same(clusterRole.rules, [{ apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] }])
  const crb = byKind(overlay, 'ClusterRoleBinding')[0] as any
  t.equal(crb.roleRef.name, clusterRole.metadata.name)
  t.same(crb.subjects, binding.subjects)
  t.same(daemonSet(overlay), daemonSet(base), 'same DaemonSet')

  for (const objs of builds.values()) {
    for (const r of [...byKind(objs, 'Role'), ...byKind(objs, 'ClusterRole')] as any[]) {
      for (const rule of r.rules) {
        t.notOk([...rule.verbs, ...rule.resources, ...rule.apiGroups].includes('*'), `${r.metadata.name}: no wildcards`)
      }
    }
  }
})

t.test('root-socket-dir overlay: uid 0 but still no capabilities', async (t) => {
  const ds = daemonSet(builds.get('daemonset/overlays/root-socket-dir')!)
  const pod = ds.spec.template.spec
  t.equal(pod.initContainers, undefined, 'no init container')
  t.equal(pod.securityContext.runAsUser, 0)
  t.equal(pod.securityContext.runAsNonRoot, false)
  t.same(pod.securityContext.seccompProfile, { type: 'RuntimeDefault' })
  t.same(pod.containers[0].securityContext.capabilities, { drop: ['ALL'] })
  t.equal(pod.containers[0].securityContext.readOnlyRootFilesystem, true)
})
