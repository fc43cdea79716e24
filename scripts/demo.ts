#!/usr/bin/env node
/**
 * `npm run demo`: the provider end to end on one machine, no Kubernetes needed.
 *
 *   1. starts an OpenBao dev server and seeds it: `jwt` auth (standing in for Kubernetes
 *      service-account tokens), a policy, the role `demo-app`, two KV v2 secrets and a PKI role;
 *   2. starts the provider daemon (dist/daemon.js, as the image runs it) on a unix socket in a temp dir;
 *   3. reads examples/demo-secretproviderclass.yaml and mounts it twice through the Secrets
 *      Store CSI driver's own client (.cache/bin/driver-client), as the driver does for a pod;
 *   4. prints the mounted files and a timing table, and stops everything.
 *
 * Usage: node dist/scripts/demo.js [--out DIR] [--show-values]
 */
import { randomBytes, randomUUID, X509Certificate } from 'node:crypto'
import { existsSync } from 'node:fs'
import { lstat, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, resolve, sep } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { parse as parseYaml } from 'yaml'
import { PACKAGE_ROOT } from '../src/package-info.js'
import { configureJwtAuth, createJwtRole, signServiceAccountJwt } from '../test/support/jwt.js'
import { findLeaks } from '../test/support/leaks.js'
import {
  driverMount,
  driverVersion,
  readMountedFiles,
  type DriverMountResult,
  type MountedFile,
} from '../test/support/driver-client.js'
import { startOpenBao, type OpenBao } from '../test/support/openbao.js'
import { configurePki } from '../test/support/pki.js'
import { startProvider, type ProviderProcess } from '../test/support/provider.js'

const SPC_FILE = join(PACKAGE_ROOT, 'examples', 'demo-secretproviderclass.yaml')
const DEFAULT_OUT = join(PACKAGE_ROOT, 'demo-mount')

const AUTH_MOUNT = 'jwt'
const ROLE = 'demo-app'
const POLICY = 'demo-app'
const POD = { namespace: 'default', serviceAccount: 'demo-app', name: 'demo-app-0', uid: randomUUID() }
const AUDIENCE = 'vault'
const PKI_ROLE = 'demo'
const PKI_DOMAIN = 'demo.svc.cluster.local'

const USAGE = `usage: node dist/scripts/demo.js [--out DIR] [--show-values]

  --out DIR       where to mount the secrets (default: ./demo-mount in the repository);
                  cleared first
  --show-values   print the mounted values (default: only the first 2 characters and the length)
  -h, --help      this text`

// ------------------------------------------------------------------ small helpers

class DemoError extends Error {}

function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err)
  const first = text.split('\n').find((l) => l.trim() !== '') ?? text
  return first.trim().slice(0, 400)
}

function ms(n: number): string {
  return `${Math.round(n)} ms`
}

function out(line = ''): void {
  // After Ctrl-C only the signal handler speaks.
  if (!interrupted) process.stdout.write(line + '\n')
}

function mustOk(what: string, res: { status: number; body: unknown }): void {
  if (res.status < 200 || res.status >= 300) {
    throw new DemoError(`${what}: HTTP ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`)
  }
}

/** Runs `fn`, returns its result and how long it took. */
async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now()
  const value = await fn()
  return [value, performance.now() - start]
}

// ------------------------------------------------------------------ resources and shutdown

type Cleanup = () => Promise<unknown>
const cleanups: Array<{ what: string; fn: Cleanup }> = []
let interrupted = false
/** Set once the provider is spawned. */
let providerLogPath: string | undefined
/** Keep the work dir (with the provider log) for a diagnosis: set on failure. */
let keepLog = false

/** Registers a clean-up step; they run in reverse order, each at most once. */
function onCleanup(what: string, fn: Cleanup): void {
  let done = false
  cleanups.push({
    what,
    fn: async () => {
      if (done) return
      done = true
      await fn()
    },
  })
}

let cleaning: Promise<string[]> | undefined

/**
 * Runs every clean-up step (newest first); returns the failures, one line each. A call while
 * a run is under way (Ctrl-C during the final shutdown) joins that run.
 */
function cleanupAll(): Promise<string[]> {
  cleaning ??= (async () => {
    const problems: string[] = []
    while (cleanups.length > 0) {
      const c = cleanups.pop()!
      try {
        await c.fn()
      } catch (err) {
        problems.push(`${c.what}: ${oneLine(err)}`)
      }
    }
    return problems
  })().finally(() => {
    cleaning = undefined
  })
  return cleaning
}

/** Start-ups in flight, so that an interrupt can wait for them and stop what they started. */
const starting = new Set<Promise<unknown>>()
function starts<T>(p: Promise<T>): Promise<T> {
  starting.add(p)
  const forget = (): void => {
    starting.delete(p)
  }
  p.then(forget, forget)
  return p
}

function installSignalHandlers(): void {
  const handler = (signal: NodeJS.Signals): void => {
    if (interrupted) {
      // Second Ctrl-C: give up waiting. openbao.ts SIGKILLs its servers on exit.
      process.stdout.write(`\n${signal} again: exiting without waiting\n`)
      process.exit(130)
    }
    interrupted = true
    process.stdout.write(`\n${signal}: stopping OpenBao and the provider...\n`)
    void (async () => {
      // Let a start-up that is under way finish, so what it started is stopped too.
      await Promise.race([Promise.allSettled([...starting]), new Promise((r) => setTimeout(r, 5000))])
      let problems = await cleanupAll()
      // A run that was already under way (the final shutdown) may have left nothing more to do.
      if (cleanups.length > 0) problems = problems.concat(await cleanupAll())
      for (const p of problems) process.stdout.write(`  clean-up: ${p}\n`)
      process.stdout.write('stopped\n')
      process.exit(130)
    })()
  }
  process.on('SIGINT', handler)
  process.on('SIGTERM', handler)
}

// ------------------------------------------------------------------ steps

/** The SecretProviderClass's spec.parameters, checked to be the strings the driver sends. */
async function loadSecretProviderClass(
  file: string,
): Promise<{ name: string; provider: string; parameters: Record<string, string> }> {
  let doc: any
  try {
    doc = parseYaml(await readFile(file, 'utf8'))
  } catch (err) {
    throw new DemoError(`cannot read ${relative(process.cwd(), file)}: ${oneLine(err)}`)
  }
  const where = relative(process.cwd(), file)
  if (
    doc?.kind !== 'SecretProviderClass' ||
    typeof doc?.apiVersion !== 'string' ||
    !doc.apiVersion.startsWith('secrets-store.csi.x-k8s.io/')
  ) {
    throw new DemoError(`${where} is not a secrets-store.csi.x-k8s.io SecretProviderClass`)
  }
  const params = doc.spec?.parameters
  if (params === null || typeof params !== 'object' || Array.isArray(params)) {
    throw new DemoError(`${where}: spec.parameters must be a map`)
  }
  const parameters: Record<string, string> = {}
  for (const [k, v] of Object.entries(params as Record<string, unknown>)) {
    if (typeof v !== 'string') throw new DemoError(`${where}: spec.parameters.${k} must be a string (quote it)`)
    parameters[k] = v
  }
  return { name: String(doc.metadata?.name ?? 'demo'), provider: String(doc.spec?.provider ?? ''), parameters }
}

interface DemoSecrets {
  username: string
  password: string
  apiToken: string
}

/** Auth, policy, role, KV secrets and PKI, in parallel where they are independent. */
async function seed(bao: OpenBao): Promise<DemoSecrets> {
  const secrets: DemoSecrets = {
    username: 'demo_app',
    password: randomBytes(18).toString('base64url'),
    apiToken: `tok_${randomBytes(16).toString('hex')}`,
  }
  const auth = async (): Promise<void> => {
    await configureJwtAuth(bao, AUTH_MOUNT)
    await createJwtRole(bao, AUTH_MOUNT, ROLE, {
      policies: [POLICY],
      boundAudiences: [AUDIENCE],
      boundSubject: `system:serviceaccount:${POD.namespace}:${POD.serviceAccount}`,
      ttl: '1h',
    })
  }
  const policy = (): Promise<void> =>
    bao.writePolicy(
      POLICY,
      [
        'path "secret/data/demo/*" { capabilities = ["read"] }',
        `path "pki/issue/${PKI_ROLE}" { capabilities = ["create", "update"] }`,
      ].join('\n'),
    )
  const kv = async (): Promise<void> => {
    mustOk(
      'write secret/demo/db',
      await bao.api('POST', '/v1/secret/data/demo/db', {
        data: { username: secrets.username, password: secrets.password },
      }),
    )
    mustOk(
      'write secret/demo/api',
      await bao.api('POST', '/v1/secret/data/demo/api', { data: { token: secrets.apiToken } }),
    )
  }
  const pki = (): Promise<void> =>
    configurePki(bao, {
      rootCommonName: 'Demo Root CA',
      rootTtl: '720h',
      role: PKI_ROLE,
      allowedDomains: [PKI_DOMAIN],
      maxTtl: '24h',
    })
  await Promise.all([auth(), policy(), kv(), pki()])
  return secrets
}

/** Empties `dir` (creating it if needed), refusing anything that does not look like a demo mount. */
async function prepareOutDir(dir: string): Promise<void> {
  const dangerous = new Set([sep, PACKAGE_ROOT, resolve(process.env['HOME'] ?? sep), process.cwd()])
  if (dangerous.has(dir)) throw new DemoError(`refusing to use ${dir} as the mount folder: choose a dedicated one`)
  if (existsSync(dir)) {
    const st = await lstat(dir)
    if (!st.isDirectory()) throw new DemoError(`${dir} exists and is not a directory`)
    const names = await readdir(dir)
    if (names.length > 0 && !names.includes('..data')) {
      throw new DemoError(`refusing to clear ${dir}: it is not empty and does not look like an earlier demo mount`)
    }
    await rm(dir, { recursive: true, force: true })
  }
  await mkdir(dir, { recursive: true })
}

async function mountOnce(
  socketDir: string,
  provider: string,
  targetPath: string,
  attributes: Record<string, string>,
  label: string,
): Promise<DriverMountResult> {
  const result = await driverMount({
    socketDir,
    provider,
    targetPath,
    permission: '420', // 0644, the driver's default
    attributes,
    secrets: 'null', // no nodePublishSecretRef, as driver v1.6.0 sends it
    timeoutMs: 30_000,
  })
  if (!result.ok) {
    throw new DemoError(`${label} failed: ${result.errorCode || result.grpcCode}: ${oneLine(result.message)}`)
  }
  return result
}

interface ProviderDaemon {
  pid: number
  socketPath: string
  logPath: string
  /** From spawn to the socket accepting a connection. */
  startMs: number
  logs(): Promise<string>
}

/**
 * Starts the built daemon (dist/daemon.js) the way the integration tests do: a clean
 * environment, its socket and HMAC key file in `dir`, and waits until the socket answers.
 */
async function launchProvider(dir: string): Promise<ProviderDaemon> {
  const start = performance.now()
  let provider: ProviderProcess
  try {
    provider = await startProvider({ socketDir: dir, logLevel: 'debug', hmacKeyFile: join(dir, 'hmac.key') })
  } catch (err) {
    throw new DemoError(`cannot start the provider: ${oneLine((err as Error).message)}`)
  }
  const startMs = performance.now() - start
  providerLogPath = provider.logPath
  const killOnExit = (): void => {
    provider.child.kill('SIGKILL')
  }
  process.on('exit', killOnExit)
  onCleanup('stop the provider', async () => {
    const e = await provider.stop('SIGTERM')
    process.off('exit', killOnExit)
    // After Ctrl-C the provider may have been signalled before it could set up its handlers.
    if (e.code !== 0 && !interrupted) {
      keepLog = true
      throw new DemoError(`provider exited with code ${e.code} signal ${e.signal}`)
    }
  })
  return { pid: provider.pid, socketPath: provider.socketPath, logPath: provider.logPath, startMs, logs: provider.logs }
}

// ------------------------------------------------------------------ output

function mask(value: string, show: boolean): string {
  if (show) return JSON.stringify(value)
  const chars = [...value]
  return `${chars.slice(0, 2).join('')}${'•'.repeat(4)} (${chars.length} chars)`
}

interface TreeRow {
  label: string
  mode: string
  size: string
  version: string
  value: string
}

function buildTreeRows(
  files: Map<string, MountedFile>,
  versions: Record<string, string>,
  showValues: boolean,
): { rows: TreeRow[]; longValues: Array<[string, string]> } {
  interface Node {
    children: Map<string, Node>
    file?: { path: string; f: MountedFile }
  }
  const root: Node = { children: new Map() }
  for (const [path, f] of files) {
    let node = root
    for (const part of path.split('/')) {
      let next = node.children.get(part)
      if (next === undefined) {
        next = { children: new Map() }
        node.children.set(part, next)
      }
      node = next
    }
    node.file = { path, f }
  }
  const rows: TreeRow[] = []
  const longValues: Array<[string, string]> = []
  const walk = (node: Node, prefix: string): void => {
    const names = [...node.children.keys()].sort()
    names.forEach((name, i) => {
      const child = node.children.get(name)!
      const last = i === names.length - 1
      const branch = prefix + (last ? '└── ' : '├── ')
      if (child.file === undefined) {
        rows.push({ label: branch + name + '/', mode: '', size: '', version: '', value: '' })
        walk(child, prefix + (last ? '    ' : '│   '))
        return
      }
      const { path, f } = child.file
      const text = f.bytes.toString('utf8')
      let value = mask(text, showValues)
      if (showValues && (text.includes('\n') || text.length > 60)) {
        longValues.push([path, text])
        value = '(printed below)'
      }
      rows.push({
        label: branch + name,
        mode: '0' + f.mode.toString(8).padStart(3, '0'),
        size: `${f.bytes.length} B`,
        version: versions[path] ?? '(none)',
        value,
      })
    })
  }
  walk(root, '')
  return { rows, longValues }
}

function printTree(
  title: string,
  files: Map<string, MountedFile>,
  versions: Record<string, string>,
  showValues: boolean,
): void {
  const { rows, longValues } = buildTreeRows(files, versions, showValues)
  const head: TreeRow = {
    label: title,
    mode: 'MODE',
    size: 'SIZE',
    version: 'OBJECT VERSION',
    value: showValues ? 'VALUE' : 'VALUE (masked)',
  }
  const all = [head, ...rows]
  const w = (k: keyof TreeRow): number => Math.max(...all.map((r) => [...r[k]].length))
  const pad = (s: string, n: number): string => s + ' '.repeat(Math.max(0, n - [...s].length))
  const [wl, wm, ws, wv] = [w('label'), w('mode'), w('size'), w('version')]
  for (const r of all) {
    out(
      `  ${pad(r.label, wl)}  ${pad(r.mode, wm)}  ${' '.repeat(ws - r.size.length)}${r.size}  ${pad(r.version, wv)}  ${r.value}`.trimEnd(),
    )
  }
  for (const [path, text] of longValues) {
    let shownText = text.replace(/\n$/, '')
    let note = ''
    try {
      shownText = JSON.stringify(JSON.parse(text), null, 2)
      note = ' (JSON, indented here for reading)'
    } catch {
      /* not JSON: as it is */
    }
    out()
    out(`  ── ${path}${note} ──`)
    for (const line of shownText.split('\n')) out(`  ${line}`)
  }
}

/** Not secret: who the issued certificate is for and until when. */
function describeCertificate(bundle: MountedFile | undefined): string | undefined {
  if (bundle === undefined) return undefined
  try {
    const data = JSON.parse(bundle.bytes.toString('utf8'))?.data
    const cert = new X509Certificate(String(data?.certificate))
    const hasKey = typeof data?.private_key === 'string' && data.private_key.includes('PRIVATE KEY')
    return `${cert.subject.replace(/\n/g, ', ')} issued by ${cert.issuer.replace(/\n/g, ', ')}, serial ${data?.serial_number}, valid until ${new Date(cert.validTo).toISOString()}${hasKey ? ', private key included' : ''}`
  } catch {
    return undefined
  }
}

// ------------------------------------------------------------------ main

async function main(): Promise<number> {
  installSignalHandlers()
  let args
  try {
    args = parseArgs({
      args: process.argv.slice(2),
      options: {
        out: { type: 'string' },
        'show-values': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values
  } catch (err) {
    throw new DemoError(`${oneLine(err)} (see --help)`)
  }
  if (args.help) {
    out(USAGE)
    return 0
  }
  const showValues = args['show-values'] === true
  const outDir = args.out === undefined ? DEFAULT_OUT : resolve(process.cwd(), args.out)
  const shown = (p: string): string => {
    const r = relative(process.cwd(), p)
    return r === '' ? '.' : r.startsWith('..') ? p : r
  }

  const t0 = performance.now()
  const timings: Array<[string, number]> = []

  out('Vault/OpenBao provider for the Secrets Store CSI driver: local demo')
  out()

  // The SecretProviderClass first: a broken example should fail before anything starts.
  const spc = await loadSecretProviderClass(SPC_FILE)
  if (spc.provider !== 'vault') {
    throw new DemoError(
      `${shown(SPC_FILE)}: spec.provider is ${JSON.stringify(spc.provider)}, this provider serves "vault"`,
    )
  }
  await prepareOutDir(outDir)

  // 1. OpenBao
  const [bao, baoMs] = await timed(() =>
    // Registered as soon as it runs, so that a Ctrl-C during start-up stops it too.
    starts(
      startOpenBao().then((b: OpenBao) => {
        onCleanup('stop OpenBao', () => b.stop())
        return b
      }),
    ),
  )
  timings.push(['OpenBao dev server start', baoMs])
  const status = await bao.api('GET', '/v1/sys/seal-status', undefined, { token: '' }).catch(() => undefined)
  const baoVersion = typeof status?.body?.version === 'string' ? ` (OpenBao ${status.body.version})` : ''
  out(`[1/5] OpenBao dev server at ${bao.addr}${baoVersion}  ${ms(baoMs)}`)

  // 2. Seed
  const [secrets, seedMs] = await timed(() => seed(bao))
  timings.push(['seeding (auth, policy, KV, PKI)', seedMs])
  out(`[2/5] Seeded OpenBao  ${ms(seedMs)}`)
  out(`      auth    jwt/ with a local test RSA key. It stands in for Kubernetes service-account`)
  out(
    `              tokens: the demo signs a token for ${POD.namespace}/${POD.serviceAccount} itself, where in a cluster`,
  )
  out(`              the CSI driver passes the pod's projected token (kubernetes or jwt auth)`)
  out(
    `      role    ${ROLE}: bound to system:serviceaccount:${POD.namespace}:${POD.serviceAccount}, audience "${AUDIENCE}", policy ${POLICY}`,
  )
  out(`      KV v2   secret/demo/db (username, password), secret/demo/api (token)`)
  out(`      PKI     pki/ with an internal root; role ${PKI_ROLE} issues *.${PKI_DOMAIN}`)

  // 3. Provider
  const workDir = await mkdtemp(join(tmpdir(), 'vcp-demo-'))
  // The work dir holds the socket, the HMAC key and the provider log; on failure it stays for the log.
  onCleanup('remove the work dir', async () => {
    if (!keepLog || providerLogPath === undefined) await rm(workDir, { recursive: true, force: true })
  })
  const provider = await starts(launchProvider(workDir))
  timings.push(['provider start (spawn → serving socket)', provider.startMs])
  out(`[3/5] Provider daemon (pid ${provider.pid}) serving ${provider.socketPath}  ${ms(provider.startMs)}`)
  const socketDir = workDir

  // The driver's health check; also how long the driver client's own round trip takes.
  const [version, versionMs] = await timed(() => driverVersion({ socketDir, provider: spc.provider }))
  if (!version.ok)
    throw new DemoError(`Version RPC failed: ${version.grpcCode ?? ''} ${oneLine(version.message ?? '')}`)

  // 4. + 5. Mounts
  const jwt = signServiceAccountJwt({
    namespace: POD.namespace,
    serviceAccount: POD.serviceAccount,
    podName: POD.name,
    podUid: POD.uid,
    audience: AUDIENCE,
    expiresInSec: 600,
  })
  // What the driver sends: the SecretProviderClass parameters, the volume's attributes and the pod's.
  const attributes: Record<string, string> = {
    ...spc.parameters,
    vaultAddress: bao.addr,
    secretProviderClass: spc.name,
    'csi.storage.k8s.io/pod.name': POD.name,
    'csi.storage.k8s.io/pod.namespace': POD.namespace,
    'csi.storage.k8s.io/pod.uid': POD.uid,
    'csi.storage.k8s.io/serviceAccount.name': POD.serviceAccount,
    'csi.storage.k8s.io/ephemeral': 'true',
    'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({
      [AUDIENCE]: { token: jwt, expirationTimestamp: new Date(Date.now() + 600_000).toISOString() },
    }),
  }
  const [first, firstMs] = await timed(() => mountOnce(socketDir, spc.provider, outDir, attributes, 'first Mount'))
  timings.push(['first Mount (cold: includes the login)', firstMs])
  out(`[4/5] Mount #1 (cold: logs in as ${POD.namespace}/${POD.serviceAccount}) into ${shown(outDir)}  ${ms(firstMs)}`)
  const [second, secondMs] = await timed(() => mountOnce(socketDir, spc.provider, outDir, attributes, 'second Mount'))
  timings.push(['second Mount (warm: cached token)', secondMs])
  out(`[5/5] Mount #2 (warm: reuses the pod's cached token)  ${ms(secondMs)}`)
  out()

  // What the pod would see.
  const files = await readMountedFiles(outDir)
  const expected = Object.keys(second.objectVersions).sort()
  const got = [...files.keys()].sort()
  if (JSON.stringify(expected) !== JSON.stringify(got)) {
    throw new DemoError(`mounted files [${got.join(', ')}] do not match the object versions [${expected.join(', ')}]`)
  }
  out(`Mounted from SecretProviderClass "${spc.name}" (${shown(SPC_FILE)}):`)
  printTree(shown(outDir) + '/', files, second.objectVersions, showValues)
  out()
  const same = expected.filter((id) => first.objectVersions[id] === second.objectVersions[id])
  const changed = expected.filter((id) => first.objectVersions[id] !== second.objectVersions[id])
  out(`Object versions unchanged by Mount #2: ${same.join(', ') || 'none'}`)
  if (changed.length > 0) {
    out(
      `Changed by Mount #2: ${changed.join(', ')}${changed.includes('tls/bundle.json') ? ' (PKI issues a new certificate on every request)' : ''}`,
    )
  }
  const cert = describeCertificate(files.get('tls/bundle.json'))
  if (cert !== undefined) out(`tls/bundle.json: ${cert}`)
  const dbPassword = files.get('db-password')?.bytes.toString('utf8')
  if (dbPassword !== secrets.password)
    throw new DemoError('db-password does not hold the value seeded into secret/demo/db')

  // Log hygiene: nothing secret in what the provider logged at debug level.
  const logs = await provider.logs()
  const lines = logs.split('\n').filter((l) => l.trim() !== '').length
  const leaks = findLeaks(logs, [secrets.password, secrets.apiToken, jwt])
  out(
    leaks.length === 0
      ? `Provider log: ${lines} lines at debug level, no secret values, JWTs or Vault tokens in them`
      : `WARNING: the provider log holds ${leaks.map((l) => l.what).join(', ')} (log: ${provider.logPath})`,
  )

  if (leaks.length > 0) keepLog = true

  // Stop everything before the timing table, so that the total covers it. The provider log
  // goes only if the provider exited cleanly and logged nothing secret.
  const [problems, stopMs] = await timed(cleanupAll)
  if (problems.length > 0) throw new DemoError(`clean-up failed: ${problems.join('; ')}`)
  timings.push(['shutdown (provider, OpenBao)', stopMs])
  const total = performance.now() - t0

  out()
  out('Timings')
  const rows: Array<[string, string]> = [...timings.map(([k, v]): [string, string] => [k, ms(v)]), ['total', ms(total)]]
  const wk = Math.max(...rows.map(([k]) => [...k].length))
  const wv = Math.max(...rows.map(([, v]) => v.length))
  for (const [k, v] of rows) {
    if (k === 'total') out(`  ${'─'.repeat(wk + wv + 2)}`)
    out(`  ${k}${' '.repeat(wk - [...k].length)}  ${' '.repeat(wv - v.length)}${v}`)
  }
  out(`  (each Mount runs the driver's client as a new process; its bare Version RPC round trip took ${ms(versionMs)})`)
  out()
  out(`Done. The files stay in ${shown(outDir)}; OpenBao and the provider are stopped.`)
  return 0
}

main().then(
  (code) => {
    if (!interrupted) process.exit(code) // else the signal handler exits once clean-up is done
  },
  async (err: unknown) => {
    // Ctrl-C from a terminal reaches OpenBao and the provider too, and their exit can surface
    // here (e.g. "fetch failed") a moment before our own SIGINT handler runs: give it that moment.
    if (!interrupted) await new Promise((r) => setTimeout(r, 150))
    if (interrupted) return // the signal handler is cleaning up and exits
    keepLog = true
    const problems = await cleanupAll()
    const log = providerLogPath !== undefined ? ` (provider log: ${providerLogPath})` : ''
    const extra = problems.length > 0 ? ` (clean-up: ${problems.join('; ')})` : ''
    process.stderr.write(`demo failed: ${oneLine(err)}${log}${extra}\n`)
    process.exit(1)
  },
)
