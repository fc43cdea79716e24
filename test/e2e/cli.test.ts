// End to end: the troubleshooting CLI against the real API server, the real provider
// socket and OpenBao: `doctor` (the HMAC Secret, the provider's RBAC as the API server
// judges it, a pod token from the real kubectl) and `mount` (through the socket and
// in-process, with tokens taken from the API server).
import { execFile } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { stringify } from 'yaml'
import { spcParameters, startE2e, type E2eWorld } from '../support/e2e.js'
import { KUBECTL_BIN, ensureServiceAccount, requestToken, waitUntil } from '../support/kube-cluster.js'
import { PROVIDER_NAMESPACE } from '../support/kube-node.js'
import { findLeaks } from '../support/leaks.js'
import { CLI_MAIN } from '../support/provider.js'
import { tempDirFor } from '../support/tmp.js'

t.setTimeout(4 * 60_000)

const SECRET = 'cli-e2e-Hq7r'

let w: E2eWorld
let ns: string
let dir: string
let spcFile: string
let kubeconfig: string

interface CliRun {
  code: number
  stdout: string
  stderr: string
}

function cli(args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI_MAIN, ...args],
      {
        // What an operator's shell would have: the real kubectl and a kubeconfig.
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: dir,
          KUBECTL: KUBECTL_BIN,
          KUBECONFIG: kubeconfig,
        },
        timeout: 120_000,
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    )
  })
}

const checks = (run: CliRun): Map<string, any> =>
  new Map((JSON.parse(run.stdout).checks as any[]).map((c) => [c.id, c]))

/** A service-account directory (token, ca.crt, namespace) for `serviceAccount` of the provider's namespace. */
async function saDir(name: string): Promise<string> {
  const d = join(dir, `sa-${name}`)
  await mkdir(d, { recursive: true })
  await ensureServiceAccount(w.cluster.admin, PROVIDER_NAMESPACE, name)
  const { token } = await requestToken(w.cluster.admin, PROVIDER_NAMESPACE, name, { expirationSeconds: 3600 })
  await writeFile(join(d, 'token'), token)
  await writeFile(join(d, 'ca.crt'), w.cluster.caPem)
  await writeFile(join(d, 'namespace'), PROVIDER_NAMESPACE)
  return d
}

t.before(async () => {
  w = await startE2e()
  dir = await tempDirFor(t, 'vcp-cli-e2e-')
  kubeconfig = join(dir, 'kubeconfig')
  await w.cluster.writeKubeconfig(kubeconfig)
  ns = await w.newNamespace('cli')
  await w.kubernetesRole('cli-app', [ns])
  await w.kvPut(`${ns}/app`, { password: SECRET })
  const params = spcParameters(w.bao, 'cli-app', [
    { objectName: 'password', secretPath: `secret/data/${ns}/app`, secretKey: 'password' },
  ])
  spcFile = join(dir, 'spc.yaml')
  await writeFile(
    spcFile,
    stringify({
      apiVersion: 'secrets-store.csi.x-k8s.io/v1',
      kind: 'SecretProviderClass',
      metadata: { name: 'cli-spc', namespace: ns },
      spec: { provider: 'vault', parameters: params },
    }),
  )
})
t.teardown(() => w?.stop())

const doctorBase = (): string[] => [
  'doctor',
  '--socket',
  join(w.node().providerDir, 'vault.sock'),
  `--vault-addr=${w.bao.addr}`,
  '--vault-mount=kubernetes',
  '--role=cli-app',
  `--kube-api-url=${w.cluster.url}`,
  '--json',
]

t.test(
  'doctor on a fresh cluster: a pod token from kubectl logs in; no HMAC Secret yet; RBAC as deployed',
  async (t) => {
    const run = await cli([
      ...doctorBase(),
      `--kube-service-account-dir=${w.provider().serviceAccountDir}`,
      '--token-from-kubectl',
      `--namespace=${ns}`,
      '--service-account=app',
    ])
    t.equal(run.code, 0, 'exit 0', { stdout: run.stdout, stderr: run.stderr })
    const c = checks(run)
    for (const id of ['socket.version', 'socket.health', 'vault.sealed', 'auth.mount', 'auth.role', 'auth.login']) {
      t.equal(c.get(id)?.status, 'pass', `${id}: ${c.get(id)?.detail}`)
    }
    t.match(c.get('hmac.key'), {
      status: 'warn',
      detail: /Secret vault-csi-provider\/vault-csi-provider-hmac-key does not exist yet/,
    })
    t.match(c.get('kube.rbac'), {
      status: 'pass',
      detail:
        /get Secret vault-csi-provider\/vault-csi-provider-hmac-key, create Secrets in vault-csi-provider, no other Secret access; no TokenRequest/,
    })
  },
)

t.test('mount through the socket with a kubectl token, and in-process: the same files and versions', async (t) => {
  const pod = await w.createPod(ns, 'cli-pod', { spc: 'cli-spc' })
  const identity = [`--namespace=${ns}`, '--service-account=app', `--pod-name=${pod.name}`, `--pod-uid=${pod.uid}`]
  const mountArgs = [
    'mount',
    spcFile,
    '--socket',
    join(w.node().providerDir, 'vault.sock'),
    ...identity,
    '--token-from-kubectl',
    '--json',
  ]
  // The file names the Vault address the operator's minted token would go to: shown, and not
  // minted without a confirmation (no terminal here, so --yes).
  const unconfirmed = await cli(mountArgs)
  t.equal(unconfirmed.code, 2, 'a usage error', { stdout: unconfirmed.stdout, stderr: unconfirmed.stderr })
  t.match(unconfirmed.stderr, /the SecretProviderClass file chose the Vault address \(vaultAddress\): not confirmed/)
  t.match(unconfirmed.stderr, `send it to ${w.bao.addr}`)
  const viaSocket = await cli([...mountArgs, '--yes'])
  t.equal(viaSocket.code, 0, 'exit 0', { stdout: viaSocket.stdout, stderr: viaSocket.stderr })
  const socketOut = JSON.parse(viaSocket.stdout)
  t.equal(socketOut.ok, true)
  t.same(
    socketOut.files.map((f: any) => f.path),
    ['password'],
  )

  // In-process, with the provider's service account (the same HMAC Secret) and a pod-bound
  // token straight from the TokenRequest API.
  const { token } = await requestToken(w.cluster.admin, ns, 'app', {
    audiences: ['vault'],
    pod: { name: pod.name, uid: pod.uid },
  })
  const tokenFile = join(dir, 'pod.jwt')
  await writeFile(tokenFile, token, { mode: 0o600 })
  const inProcess = await cli([
    'mount',
    spcFile,
    '--in-process',
    `--kube-api-url=${w.cluster.url}`,
    `--kube-service-account-dir=${w.provider().serviceAccountDir}`,
    ...identity,
    `--token-file=${tokenFile}`,
    '--json',
  ])
  t.equal(inProcess.code, 0, 'exit 0', { stdout: inProcess.stdout, stderr: inProcess.stderr })
  const inOut = JSON.parse(inProcess.stdout)
  t.same(inOut.objects, socketOut.objects, 'the versions agree: both read the key from the same Secret')
  t.same(findLeaks(viaSocket.stdout + viaSocket.stderr + inProcess.stdout + inProcess.stderr, [SECRET, token]), [])

  const again = await cli([...doctorBase(), `--kube-service-account-dir=${w.provider().serviceAccountDir}`])
  t.match(checks(again).get('hmac.key'), { status: 'pass', detail: /holds a 32-byte key/ }, 'the Secret exists now')
})

t.test(
  "a tenant's file never makes doctor mint a token silently; an address outside the allow-list gets nothing",
  async (t) => {
    const base = [
      'doctor',
      '--socket',
      join(w.node().providerDir, 'vault.sock'),
      '--spc',
      spcFile,
      `--kube-api-url=${w.cluster.url}`,
      '--token-from-kubectl',
      '--service-account=app',
      '--json',
    ]
    const fromFile = await cli(base)
    t.equal(fromFile.code, 2, 'namespace and address from the file: refused without --yes')
    t.match(fromFile.stderr, `kubectl will mint a token for service account ${ns}/app`)
    t.match(
      fromFile.stderr,
      /the SecretProviderClass file chose the namespace, Vault address \(vaultAddress\): not confirmed/,
    )
    const outside = await cli([...base, '--yes', '--vault-addr-allowlist=https://vault.elsewhere:8200'])
    t.equal(outside.code, 1)
    t.match(checks(outside).get('vault.reachable'), {
      status: 'fail',
      detail: `${w.bao.addr} (parameter "vaultAddress" of the SecretProviderClass) is not in --vault-addr-allowlist; nothing was sent there`,
    })
    const confirmed = await cli([...base, '--yes', `--vault-addr-allowlist=${w.bao.addr}`])
    t.equal(checks(confirmed).get('auth.login')?.status, 'pass', confirmed.stdout)
  },
)

t.test('doctor as an identity without the RBAC: the 403 and what to grant', async (t) => {
  const run = await cli([...doctorBase(), `--kube-service-account-dir=${await saDir('no-rbac')}`])
  t.equal(run.code, 1)
  const c = checks(run)
  t.match(c.get('hmac.key'), {
    status: 'fail',
    detail: /failed with 403: .*system:serviceaccount:vault-csi-provider:no-rbac.* cannot get resource "secrets"/,
    fix: /grant the provider's ServiceAccount get/,
  })
  t.match(c.get('kube.rbac'), { status: 'fail', detail: /may not get Secret/, fix: /daemonset\// })
})

t.test('doctor as an identity with too much: a warning naming the extra rights', async (t) => {
  const sa = 'too-much'
  const d = await saDir(sa)
  await w.cluster.admin.must('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'too-much-view-secrets' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'too-much-secrets' },
    subjects: [{ kind: 'ServiceAccount', name: sa, namespace: PROVIDER_NAMESPACE }],
  })
  await w.cluster.admin.must('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'too-much-secrets' },
    rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create'] }],
  })
  const c = await waitUntil('the binding to take effect', async () => {
    const run = await cli([...doctorBase(), `--kube-service-account-dir=${d}`])
    const got = checks(run)
    return got.get('kube.rbac')?.status === 'warn' ? got : undefined
  })
  t.match(c.get('kube.rbac'), {
    detail: /more than it needs: list secrets in vault-csi-provider, get every Secret of the cluster/,
    fix: /daemonset\/base\/rbac\.yaml/,
  })
  t.equal(c.get('hmac.key')?.status, 'pass')
})
