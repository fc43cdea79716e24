// daemonset/sync-controller/values.yaml through the Secrets Store Sync Controller's own chart
// (v0.0.4, copied into .cache/sync-controller/chart by scripts/setup-kubernetes.sh) and
// post-render.sh, with the real Helm and kustomize: the provider sidecar's flags accepted by the
// daemon's parser, its sockets in the controller's --provider-volume, the key file on the Secret
// volume the post-renderer adds, the audience the controller requests, an identity idle timeout of at
// least two of its polls, and every object valid.
import { join } from 'node:path'
import t from 'tap'
import { loadConfig, parseDurationMs } from '../../src/config/config.js'
import { FLAVOURS } from '../../src/config/flavour.js'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { HELM } from '../support/helm.js'
import { KUSTOMIZE, parseYamlDocuments, run, validateObjects, type K8sObject } from '../support/manifests.js'

const CHART = join(PACKAGE_ROOT, '.cache', 'sync-controller', 'chart')
const DIR = join(PACKAGE_ROOT, 'daemonset', 'sync-controller')

async function render(postRender: boolean): Promise<K8sObject[]> {
  const args = ['template', 'secrets-store-sync-controller', CHART, '-n', 'secrets-store-sync-controller']
  args.push('-f', join(DIR, 'values.yaml'))
  if (postRender) args.push('--post-renderer', join(DIR, 'post-render.sh'))
  const res = await run(HELM, args, { env: { ...process.env, KUSTOMIZE } })
  if (res.code !== 0) throw new Error(`helm template failed: ${res.stderr}`)
  return parseYamlDocuments(res.stdout, 'helm template')
}

function pod(objs: readonly K8sObject[]): any {
  const d = objs.find((o) => o.kind === 'Deployment') as any
  return d.spec.template.spec
}

const flagValue = (args: string[], name: string): string | undefined =>
  args.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1)

t.test('the sidecar: flags the daemon accepts, sockets where the controller dials, the key on a Secret', async (t) => {
  const spec = pod(await render(true))
  const provider = spec.containers.find((c: any) => c.name === 'vault-csi-provider')
  const manager = spec.containers.find((c: any) => c.name === 'manager')
  const config = loadConfig(provider.args, {})
  t.equal(config.mode, 'sync-controller')
  const providerVolume = flagValue(manager.args, '--provider-volume')!
  t.same(
    config.endpoints.map((e) => e.path),
    [`${providerVolume}/vault.sock`, `${providerVolume}/openbao.sock`],
    'vault.sock and openbao.sock in the controller’s --provider-volume',
  )
  const mountOf = (c: any, path: string): any =>
    c.volumeMounts.find((m: any) => path === m.mountPath || path.startsWith(`${m.mountPath}/`))
  t.equal(mountOf(provider, providerVolume)?.name, mountOf(manager, providerVolume)?.name, 'one shared volume')
  const keyMount = mountOf(provider, config.hmacKeyFile!)
  const keyVolume = spec.volumes.find((v: any) => v.name === keyMount?.name)
  t.equal(keyVolume?.secret?.secretName, 'vault-csi-provider-hmac-key', 'the key file is on the Secret volume')
  for (const c of spec.containers) {
    for (const m of c.volumeMounts) {
      t.ok(
        spec.volumes.some((v: any) => v.name === m.name),
        `${c.name}: ${m.name} is a pod volume`,
      )
    }
  }
  t.equal(flagValue(manager.args, '--token-request-audience'), FLAVOURS.vault.defaultAudience)
  // A SecretSync is seen once per poll: an identity idle for less than two polls is still in use,
  // and revoking it would revoke the dynamic credential its Secret holds.
  const poll = parseDurationMs(flagValue(manager.args, '--rotation-poll-interval')!, '--rotation-poll-interval')
  t.ok(poll > 0, 'the controller polls')
  t.ok(
    config.identityIdleMs >= 2 * poll,
    `-identity-idle-timeout (${config.identityIdleMs} ms) is at least twice the poll (${poll} ms)`,
  )
  t.match(provider.securityContext, {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  })
  t.ok(provider.resources?.limits?.memory, 'a memory limit')
  const ports = spec.containers.flatMap((c: any) => (c.ports ?? []).map((p: any) => p.containerPort))
  t.equal(new Set(ports).size, ports.length, 'no port taken twice in the pod')
})

t.test('without the post-renderer the key volume is missing: why post-render.sh exists', async (t) => {
  const spec = pod(await render(false))
  t.notOk(spec.volumes.some((v: any) => v.name === 'vault-csi-provider-hmac-key'))
})

t.test('every rendered object is valid (Kubernetes 1.30 and 1.37 schemas)', async (t) => {
  const results = await validateObjects(await render(true), ['1.30.0', '1.37.0'])
  t.ok(results.length > 20, `${results.length} checks`)
  t.same(
    results.filter((r) => !r.ok).map((r) => `${r.kind}/${r.name} ${r.version}: ${r.errors.join('; ')}`),
    [],
  )
})
