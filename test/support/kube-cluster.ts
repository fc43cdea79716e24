// A real Kubernetes control plane for the end-to-end tests: etcd and kube-apiserver
// (built by scripts/setup-kubernetes.sh into .cache/bin), on loopback ports of their own,
// with the Secrets Store CSI driver's CRDs, CSIDriver object and RBAC applied from the
// driver module's own deploy/ files (.cache/kube-deploy).
//
// What is not there, because nothing here needs it and each costs start-up time and memory:
// kube-controller-manager (so no service-account controller: every namespace gets its
// ServiceAccounts created explicitly; no namespace deletion: suites leave their namespaces
// and throw the whole cluster away; no garbage collection) and kube-scheduler (pods are
// created with spec.nodeName). Kubelets are played by test/kubelet (kube-node.ts).
//
// Facts about kube-apiserver v1.35.4 that shaped this module:
// - With --cert-dir and no serving certificate it writes a self-signed CA and a serving
//   certificate for 127.0.0.1 (not localhost) into apiserver.crt (both certificates);
//   clients must trust that CA (the provider reads it from ca.crt in its service-account
//   directory, as in a pod).
// - --api-audiences is left at its default (the issuer), as in real clusters: a token for
//   audience "vault" then passes TokenReview only when the review names that audience
//   (OpenBao's kubernetes auth role with audience=vault does).
// - A static token file still works; the admin token is in group system:masters, and each
//   node's token is system:node:<name> in system:nodes, so the Node authorizer judges the
//   kubelet stand-in as it judges a kubelet.
// - Stop the API server before etcd: the other order makes the API server retry for 30 s.
import { spawn, type ChildProcess } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import https from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { freePort } from './ports.js'

export const KUBE_BIN_DIR = join(PACKAGE_ROOT, '.cache', 'bin')
export const ETCD_BIN = join(KUBE_BIN_DIR, 'etcd')
export const KUBE_APISERVER_BIN = join(KUBE_BIN_DIR, 'kube-apiserver')
export const KUBECTL_BIN = join(KUBE_BIN_DIR, 'kubectl')
/** The driver module's deploy/ files, copied by scripts/setup-kubernetes.sh. */
export const KUBE_DEPLOY_DIR = join(PACKAGE_ROOT, '.cache', 'kube-deploy')
export const SA_ISSUER = 'https://kubernetes.default.svc.cluster.local'
export const CSI_DRIVER_NAME = 'secrets-store.csi.k8s.io'

export type K8sObject = {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; [k: string]: unknown }
  [k: string]: unknown
}

export interface KubeResponse {
  status: number
  /** Parsed JSON, or the text when not JSON, or null when empty. */
  body: any
  /** `Warning:` headers (deprecations, unknown fields under fieldValidation=Warn). */
  warnings: string[]
}

/** One identity's view of the API server. */
export interface KubeClient {
  call(method: string, path: string, body?: unknown, opts?: { contentType?: string }): Promise<KubeResponse>
  /** call(), but throws with the API server's message unless the status is 2xx (or listed in `ok`). */
  must(method: string, path: string, body?: unknown, opts?: { contentType?: string; ok?: number[] }): Promise<any>
}

export interface KubeCluster {
  url: string
  port: number
  /** The CA the API server's serving certificate chains to (PEM; apiserver.crt). */
  caPem: string
  caPath: string
  /** Public half of the service-account signing key (SPKI PEM). */
  saPublicKeyPem: string
  issuer: string
  dir: string
  /** system:masters. */
  admin: KubeClient
  /** A client with another bearer token (a service account's, a node's). */
  as(token: string): KubeClient
  /** Node names with a static kubelet token (see nodeToken). */
  nodes: string[]
  /** Path of the token file for system:node:<name>. */
  nodeTokenPath(node: string): string
  /** A kubeconfig file for this token, default the admin's (for the driver and kubectl). */
  writeKubeconfig(path: string, token?: string): Promise<void>
  /** Log files, for failure messages. */
  logs(): { etcd: string; apiserver: string }
  /**
   * The API server's audit log (level Metadata) for Secrets, TokenRequests and TokenReviews:
   * who asked for what, as the API server saw it. Other requests are not recorded.
   */
  auditEvents(): Promise<AuditEvent[]>
  stop(): Promise<void>
}

export interface AuditEvent {
  stage: string
  verb: string
  user: { username: string }
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string }
  responseStatus?: { code?: number }
  /** Bodies, recorded only with StartKubeClusterOptions.auditTokenBodies. */
  requestObject?: any
  responseObject?: any
}

// Metadata only (never request or response bodies: they hold Secrets and tokens).
const AUDIT_POLICY = {
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived'],
  rules: [
    { level: 'Metadata', resources: [{ group: '', resources: ['secrets', 'serviceaccounts/token'] }] },
    { level: 'Metadata', resources: [{ group: 'authentication.k8s.io', resources: ['tokenreviews'] }] },
    { level: 'None' },
  ],
}

export interface StartKubeClusterOptions {
  /** Nodes whose kubelets the tests play. Default ['node-1']. */
  nodes?: string[]
  /**
   * Record TokenRequests and TokenReviews with their bodies (tokens included), so that a test can
   * follow one token from the kubelet that asked for it to the review that accepted it. The log
   * stays in the cluster's directory, which stop() removes.
   */
  auditTokenBodies?: boolean
}

/** AUDIT_POLICY, with the bodies of TokenRequests and TokenReviews. */
const AUDIT_POLICY_TOKEN_BODIES = {
  ...AUDIT_POLICY,
  rules: [
    { level: 'RequestResponse', resources: [{ group: '', resources: ['serviceaccounts/token'] }] },
    { level: 'RequestResponse', resources: [{ group: 'authentication.k8s.io', resources: ['tokenreviews'] }] },
    ...AUDIT_POLICY.rules,
  ],
}

const live = new Set<ChildProcess>()
let exitHook = false
function track(child: ChildProcess): void {
  live.add(child)
  child.once('exit', () => live.delete(child))
  if (!exitHook) {
    exitHook = true
    process.on('exit', () => {
      for (const c of live) c.kill('SIGKILL')
    })
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Polls `cond` every `everyMs` until it returns a truthy value or `timeoutMs` passes (then throws `what`). */
export async function waitUntil<T>(
  what: string,
  cond: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 30_000,
  everyMs = 50,
): Promise<T> {
  const until = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await cond()
      if (v) return v as T
    } catch (err) {
      last = err
    }
    if (Date.now() > until) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`)
    }
    await sleep(everyMs)
  }
}

export function kubeClient(url: string, caPem: string, token: string | undefined, agent?: https.Agent): KubeClient {
  const ag = agent ?? new https.Agent({ keepAlive: true, ca: caPem, maxSockets: 16 })
  const call: KubeClient['call'] = (method, path, body, opts = {}) => {
    const payload = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
    const headers: Record<string, string> = { accept: 'application/json' }
    if (token !== undefined) headers.authorization = `Bearer ${token}`
    if (payload !== undefined) {
      headers['content-type'] = opts.contentType ?? 'application/json'
      headers['content-length'] = String(payload.length)
    }
    return new Promise<KubeResponse>((resolve, reject) => {
      const req = https.request(url + path, { method, headers, agent: ag, ca: caPem, timeout: 30_000 }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let parsed: unknown = null
          if (text !== '') {
            try {
              parsed = JSON.parse(text)
            } catch {
              parsed = text
            }
          }
          const w = res.headers.warning
          const warnings = (Array.isArray(w) ? w : w === undefined ? [] : [w]).map((x) => x.replace(/^299 - /, ''))
          resolve({ status: res.statusCode ?? 0, body: parsed, warnings })
        })
        res.on('error', reject)
      })
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)))
      req.on('error', reject)
      req.end(payload)
    })
  }
  return {
    call,
    async must(method, path, body, opts = {}) {
      const res = await call(method, path, body, opts)
      const ok = res.status >= 200 && res.status < 300
      if (!ok && !(opts.ok ?? []).includes(res.status)) {
        const msg = typeof res.body === 'object' && res.body !== null ? res.body.message : res.body
        throw new Error(`${method} ${path}: ${res.status} ${msg}`)
      }
      return res.body
    },
  }
}

/** Every non-empty document of a YAML file, as objects. */
export function readYamlObjects(text: string, where: string): K8sObject[] {
  const out: K8sObject[] = []
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors[0]!.message}`)
    const v = doc.toJS() as unknown
    if (v !== null && v !== undefined) out.push(v as K8sObject)
  }
  return out
}

/** The driver module's deploy/<file> objects. */
export async function driverDeployObjects(file: string): Promise<K8sObject[]> {
  const p = join(KUBE_DEPLOY_DIR, file)
  if (!existsSync(p)) throw new Error(`${p} missing: run scripts/setup.sh (setup-kubernetes.sh) first`)
  return readYamlObjects(await readFile(p, 'utf8'), p)
}

/** Starts `bin` with stdout and stderr appended to `logPath`; killed if the test process exits first. */
export function spawnLogged(bin: string, args: string[], logPath: string, env?: NodeJS.ProcessEnv): ChildProcess {
  if (!existsSync(bin)) throw new Error(`${bin} missing: run scripts/setup.sh (setup-kubernetes.sh) first`)
  const fd = openSync(logPath, 'a')
  try {
    const child = spawn(bin, args, { stdio: ['ignore', fd, fd], env: env ?? process.env })
    track(child)
    return child
  } finally {
    closeSync(fd)
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  child.kill('SIGTERM')
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(t)
}

function tail(path: string, chars = 3000): string {
  try {
    return readFileSync(path, 'utf8').slice(-chars)
  } catch {
    return ''
  }
}

export async function startKubeCluster(opts: StartKubeClusterOptions = {}): Promise<KubeCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'vcp-kube-'))
  const nodes = opts.nodes ?? ['node-1']
  const children: ChildProcess[] = []
  const etcdLog = join(dir, 'etcd.log')
  const apiLog = join(dir, 'apiserver.log')
  const stopAll = async (): Promise<void> => {
    // The API server first: etcd gone under it makes it retry for half a minute.
    for (const c of [...children].reverse()) await stopChild(c)
  }
  try {
    // Service-account signing key pair.
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const saKey = join(dir, 'sa.key')
    const saPub = join(dir, 'sa.pub')
    const saPublicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString()
    await writeFile(saKey, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 })
    await writeFile(saPub, saPublicKeyPem)
    // Static tokens: the test's admin and one kubelet per node.
    const adminToken = randomBytes(24).toString('hex')
    const lines = [`${adminToken},e2e-admin,e2e-admin-uid,system:masters`]
    for (const n of nodes) {
      const tok = randomBytes(24).toString('hex')
      lines.push(`${tok},system:node:${n},node-${n}-uid,system:nodes`)
      await writeFile(join(dir, `node-${n}.token`), tok, { mode: 0o600 })
    }
    await writeFile(join(dir, 'tokens.csv'), lines.join('\n') + '\n', { mode: 0o600 })
    const auditPolicy = join(dir, 'audit-policy.json')
    const auditLog = join(dir, 'audit.log')
    await writeFile(auditPolicy, JSON.stringify(opts.auditTokenBodies ? AUDIT_POLICY_TOKEN_BODIES : AUDIT_POLICY))

    const etcdPort = await freePort()
    const peerPort = await freePort()
    const etcd = spawnLogged(
      ETCD_BIN,
      [
        '--name=e2e',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=e2e=http://127.0.0.1:${peerPort}`,
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      etcdLog,
    )
    children.push(etcd)
    await waitUntil(
      `etcd healthy (log: ${etcdLog})`,
      async () => {
        if (etcd.exitCode !== null) throw new Error(`etcd exited: ${tail(etcdLog)}`)
        const r = await fetch(`http://127.0.0.1:${etcdPort}/health`).catch(() => undefined)
        return r?.ok === true
      },
      30_000,
      50,
    )

    const port = await freePort()
    const certDir = join(dir, 'certs')
    await mkdir(certDir)
    const apiserver = spawnLogged(
      KUBE_APISERVER_BIN,
      [
        `--etcd-servers=http://127.0.0.1:${etcdPort}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${port}`,
        `--cert-dir=${certDir}`,
        `--service-account-issuer=${SA_ISSUER}`,
        `--service-account-key-file=${saPub}`,
        `--service-account-signing-key-file=${saKey}`,
        `--token-auth-file=${join(dir, 'tokens.csv')}`,
        '--authorization-mode=Node,RBAC',
        '--service-cluster-ip-range=10.96.0.0/16',
        // No kube-controller-manager keeps the kubernetes Service's endpoints here.
        '--endpoint-reconciler-type=none',
        `--audit-policy-file=${auditPolicy}`,
        `--audit-log-path=${auditLog}`,
        // Written as each request completes, so a test reads what happened before it asked.
        '--audit-log-mode=blocking',
      ],
      apiLog,
    )
    children.push(apiserver)
    const caPath = join(certDir, 'apiserver.crt')
    const url = `https://127.0.0.1:${port}`
    let caPem = ''
    await waitUntil(
      `kube-apiserver ready (log: ${apiLog})`,
      async () => {
        if (apiserver.exitCode !== null) throw new Error(`kube-apiserver exited: ${tail(apiLog)}`)
        if (caPem === '') {
          if (!existsSync(caPath)) return false
          caPem = await readFile(caPath, 'utf8')
        }
        const r = await kubeClient(url, caPem, adminToken).call('GET', '/readyz')
        return r.status === 200
      },
      60_000,
      100,
    )
    const agent = new https.Agent({ keepAlive: true, ca: caPem, maxSockets: 16 })
    const admin = kubeClient(url, caPem, adminToken, agent)

    const cluster: KubeCluster = {
      url,
      port,
      caPem,
      caPath,
      saPublicKeyPem,
      issuer: SA_ISSUER,
      dir,
      admin,
      as: (token) => kubeClient(url, caPem, token),
      nodes,
      nodeTokenPath: (n) => join(dir, `node-${n}.token`),
      async writeKubeconfig(path, token) {
        const cfg = {
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'e2e', cluster: { server: url, 'certificate-authority': caPath } }],
          users: [{ name: 'user', user: { token: token ?? adminToken } }],
          contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: 'user' } }],
          'current-context': 'e2e',
        }
        await writeFile(path, JSON.stringify(cfg, null, 2), { mode: 0o600 })
      },
      logs: () => ({ etcd: etcdLog, apiserver: apiLog }),
      async auditEvents() {
        const text = await readFile(auditLog, 'utf8').catch(() => '')
        return text
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as AuditEvent)
      },
      async stop() {
        agent.destroy()
        await stopAll()
        if (process.env['KEEP_TEST_TMP'] !== '1') await rm(dir, { recursive: true, force: true })
      },
    }
    await installDriverApi(cluster)
    return cluster
  } catch (err) {
    await stopAll()
    throw err
  }
}

/** The driver's two CRDs, established. */
async function installDriverApi(cluster: KubeCluster): Promise<void> {
  const crds = [
    ...(await driverDeployObjects('secrets-store.csi.x-k8s.io_secretproviderclasses.yaml')),
    ...(await driverDeployObjects('secrets-store.csi.x-k8s.io_secretproviderclasspodstatuses.yaml')),
  ]
  for (const crd of crds) {
    await cluster.admin.must('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
  }
  for (const crd of crds) {
    await waitUntil(`CRD ${crd.metadata.name} established`, async () => {
      const got = await cluster.admin.must(
        'GET',
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
      )
      return (got.status?.conditions ?? []).some((c: any) => c.type === 'Established' && c.status === 'True')
    })
  }
  // The new resources reach discovery a moment after Established.
  await waitUntil('secretproviderclasses served', async () => {
    const r = await cluster.admin.call('GET', '/apis/secrets-store.csi.x-k8s.io/v1')
    return r.status === 200
  })
}

// ---------------------------------------------------------------- small helpers for suites

/** A namespace (idempotent). */
export async function ensureNamespace(c: KubeClient, name: string): Promise<void> {
  await c.must('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, { ok: [409] })
}

/** A ServiceAccount (idempotent): without kube-controller-manager, not even `default` exists. */
export async function ensureServiceAccount(c: KubeClient, namespace: string, name: string): Promise<void> {
  await c.must(
    'POST',
    `/api/v1/namespaces/${namespace}/serviceaccounts`,
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } },
    { ok: [409] },
  )
}

export interface TokenRequestOptions {
  audiences?: string[]
  expirationSeconds?: number
  /** Bind the token to this pod (it then dies with the pod). */
  pod?: { name: string; uid: string }
}

/** TokenRequest for a service account; returns the token and its expiry. */
export async function requestToken(
  c: KubeClient,
  namespace: string,
  serviceAccount: string,
  o: TokenRequestOptions = {},
): Promise<{ token: string; expirationTimestamp: string }> {
  const spec: Record<string, unknown> = { audiences: o.audiences ?? [], expirationSeconds: o.expirationSeconds ?? 3600 }
  if (o.pod) spec.boundObjectRef = { apiVersion: 'v1', kind: 'Pod', name: o.pod.name, uid: o.pod.uid }
  const res = await c.must('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec,
  })
  return { token: res.status.token, expirationTimestamp: res.status.expirationTimestamp }
}

/** Decodes (does not verify) a JWT's claims. */
export function jwtClaims(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8'))
}
