// The image as a drop-in for vault-helm's `csi.image`, and the binary as hand-written manifests
// start the reference provider.
//
// vault-helm's csi-daemonset.yaml gives the provider container only `args` (no `command`), so the
// image's ENTRYPOINT runs with them: `--endpoint=/provider/vault.sock`, `--debug=<csi.debug>`,
// `--hmac-secret-name=<name>`, then `csi.extraArgs` as written; VAULT_ADDR is its Vault Agent
// sidecar's socket; no securityContext; liveness and readiness are GET /health/ready on port 8080.
// Here the Dockerfile's ENTRYPOINT runs with exactly those arguments in a network namespace of its
// own (so port 8080 is really 8080 without touching the machine's), with /provider mapped to a
// temp dir the way the hostPath is, and is probed and asked Version through the driver's client.
import { spawn, execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, cp, mkdir, readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { PACKAGE_ROOT, PACKAGE_VERSION, RUNTIME_NAME } from '../../src/package-info.js'
import { driverVersion } from '../support/driver-client.js'
import { dockerStages, execForm, parseDockerfile } from '../support/manifests.js'
import { CLI_MAIN, PROVIDER_MAIN, canConnect } from '../support/provider.js'
import { makeTempDir } from '../support/tmp.js'
import {
  VAULT_HELM_DEFAULT_ARGS,
  VAULT_HELM_ENV,
  VAULT_HELM_PROBE,
  VAULT_HELM_TYPICAL_ARGS,
} from '../support/vault-helm.js'

const isRoot = process.getuid?.() === 0
const needsRoot = isRoot ? false : 'needs root: a network namespace of its own, and the image’s uid'

let entrypoint: string[]
let imageUser: [number, number]
/** The image's /app, laid out in a temp dir every uid can read (see imageLayout). */
let appDir: string
t.before(async () => {
  const stages = dockerStages((await parseDockerfile(join(PACKAGE_ROOT, 'Dockerfile'))).instructions)
  const final = stages.at(-1)!
  const ep = final.instructions.filter((i) => i.instruction === 'ENTRYPOINT').at(-1)!
  entrypoint = execForm(ep.value, 'ENTRYPOINT')
  const user = final.instructions.filter((i) => i.instruction === 'USER').at(-1)!.value
  imageUser = user.split(':').map(Number) as [number, number]
  appDir = await imageLayout()
})

/**
 * What the image's WORKDIR holds (package.json, proto/, dist/daemon.js and its source map, the
 * production node_modules per
 * package-lock.json), copied into a fresh 0755 directory: the image's uid must be able to read it,
 * which a checkout in a private directory (a CI clone in `mktemp -d`) does not allow.
 * test/deploy/dockerfile.test.ts checks that the image is laid out this way.
 */
async function imageLayout(): Promise<string> {
  const tmp = await makeTempDir('vcp-vault-helm-app-')
  t.teardown(tmp.cleanup)
  await chmod(tmp.path, 0o755)
  const app = join(tmp.path, 'app')
  const lock = JSON.parse(await readFile(join(PACKAGE_ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean }>
  }
  const production = Object.entries(lock.packages)
    .filter(([path, p]) => path !== '' && p.dev !== true && p.devOptional !== true)
    .map(([path]) => path)
  for (const path of ['package.json', 'proto', ...production]) {
    await cp(join(PACKAGE_ROOT, path), join(app, path), { recursive: true, dereference: true })
  }
  // The daemon build this test run uses (VCP_PROVIDER_MAIN may name another), where the entrypoint names
  // it, with its source map beside it (a build without one still runs).
  await cp(PROVIDER_MAIN, join(app, entrypoint.at(-1)!))
  if (existsSync(`${PROVIDER_MAIN}.map`)) await cp(`${PROVIDER_MAIN}.map`, join(app, `${entrypoint.at(-1)!}.map`))
  return app
}

t.test('the daemon’s own parser reads vault-helm’s arguments as vault-helm means them', async (t) => {
  const defaults = loadConfig(VAULT_HELM_DEFAULT_ARGS, VAULT_HELM_ENV)
  t.match(defaults, {
    endpoint: '/provider/vault.sock',
    logLevel: 'info',
    hmacSecretName: 'vault-csi-provider-hmac-key',
    // vault-helm passes no -health-addr: its probes rely on the default port.
    healthAddr: `:${VAULT_HELM_PROBE.port}`,
    vault: { address: VAULT_HELM_ENV.VAULT_ADDR },
  })
  const typical = loadConfig(VAULT_HELM_TYPICAL_ARGS, VAULT_HELM_ENV)
  t.match(typical, {
    logLevel: 'debug',
    hmacSecretName: 'vault-hmac',
    cacheSize: 500,
    vault: { authMount: 'jwt', tls: { serverName: 'vault.vault.svc' } },
  })
})

interface Daemon {
  pid: number
  output(): string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  running(): boolean
}

/**
 * ENTRYPOINT + args, as uid:gid, in a network namespace with only loopback (up). The namespace is
 * made as root; setpriv then drops to the ids, as the container runtime would.
 */
function startIsolated(args: string[], uid: number, gid: number): Daemon {
  // tap's process tracker adds its loader (in this checkout's node_modules) to every child's
  // NODE_OPTIONS; the image has none, and uid 65532 cannot read a checkout in a private directory.
  const drop =
    'unset NODE_OPTIONS && ip link set lo up && uid=$0 gid=$1 && shift && ' +
    'exec setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"'
  const child = spawn('unshare', ['--net', '--', 'sh', '-c', drop, String(uid), String(gid), ...entrypoint, ...args], {
    cwd: appDir,
    env: {
      PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin`,
      NODE_ENV: 'production',
      ...VAULT_HELM_ENV,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr.on('data', (c: Buffer) => (output += c.toString()))
  let alive = true
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      alive = false
      resolve({ code, signal })
    }),
  )
  return { pid: child.pid!, output: () => output, exited, running: () => alive }
}

/** GET http://127.0.0.1:<port><path> from inside the daemon's network namespace. */
function probe(pid: number, port: number, path: string): Promise<number> {
  const script = `fetch('http://127.0.0.1:${port}${path}').then((r) => console.log(r.status), () => console.log(0))`
  return new Promise((resolve) => {
    execFile(
      'nsenter',
      [`--net=/proc/${pid}/ns/net`, '--', process.execPath, '-e', script],
      { timeout: 20_000 },
      (err, stdout) => resolve(err ? -1 : Number(stdout.trim())),
    )
  })
}

async function waitForSocket(socket: string, daemon: Daemon): Promise<void> {
  const deadline = Date.now() + 20_000
  while (daemon.running() && Date.now() < deadline && !(await canConnect(socket))) {
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** The provider directory as the driver leaves it: root-owned, 0755. */
async function providerDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const tmp = await makeTempDir('vcp-vault-helm-')
  t.teardown(tmp.cleanup)
  await chmod(tmp.path, 0o755)
  const dir = join(tmp.path, 'secrets-store-csi-providers')
  await mkdir(dir, { mode: 0o755 })
  await chmod(dir, 0o755)
  return dir
}

function mapProvider(args: string[], dir: string): string[] {
  return args.map((a) => a.replace(/(^|=)\/provider\//, `$1${dir}/`))
}

t.test(
  'vault-helm’s arguments start the image’s entrypoint, which serves and passes its probes',
  { skip: needsRoot },
  async (t) => {
    for (const args of [VAULT_HELM_DEFAULT_ARGS, VAULT_HELM_TYPICAL_ARGS]) {
      const dir = await providerDir(t)
      // As root: vault-helm sets no securityContext; with this image it needs runAsUser 0 (below).
      const daemon = startIsolated(mapProvider(args, dir), 0, 0)
      t.teardown(() => {
        if (daemon.running()) process.kill(daemon.pid, 'SIGKILL')
      })
      const socket = join(dir, 'vault.sock')
      await waitForSocket(socket, daemon)
      t.ok(daemon.running(), `${args.join(' ')}: running (${daemon.output().slice(0, 1500)})`)

      for (const path of [VAULT_HELM_PROBE.path, '/health/live']) {
        t.equal(
          await probe(daemon.pid, VAULT_HELM_PROBE.port, path),
          200,
          `GET ${path} on :${VAULT_HELM_PROBE.port} answers 200`,
        )
      }
      const version = await driverVersion({ socketDir: dir, provider: 'vault' })
      t.ok(version.ok, `Version through the driver's client: ${version.message ?? ''}`)
      t.equal(version.runtimeName, RUNTIME_NAME)
      t.equal(version.runtimeVersion, PACKAGE_VERSION)

      process.kill(daemon.pid, 'SIGTERM')
      t.same(await daemon.exited, { code: 0, signal: null }, 'SIGTERM: a clean exit')
    }
  },
)

t.test(
  'as the image’s own user in the driver’s root-owned directory, it says what to change',
  { skip: needsRoot },
  async (t) => {
    // Only swapping csi.image in vault-helm runs this image as its USER (65532), which may not
    // create a socket in the root-owned provider directory: the daemon must say so and how to fix it.
    const dir = await providerDir(t)
    const daemon = startIsolated(mapProvider(VAULT_HELM_DEFAULT_ARGS, dir), imageUser[0], imageUser[1])
    const exit = await daemon.exited
    t.not(exit.code, 0, 'it does not pretend to serve')
    t.match(daemon.output(), `may not create its socket in ${dir} (owner uid 0, group 0, mode 0755)`)
    t.match(daemon.output(), 'csi.daemonSet.securityContext.container.runAsUser=0', 'names the vault-helm setting')
    t.notOk(await canConnect(join(dir, 'vault.sock')))
  },
)

t.test('`vault-csi-provider -endpoint=… -vault-addr=…` starts the daemon, as the reference binary does', async (t) => {
  const tmp = await makeTempDir('vcp-cli-serve-')
  t.teardown(tmp.cleanup)
  const socket = join(tmp.path, 'vault.sock')
  const child = spawn(
    process.execPath,
    [
      CLI_MAIN,
      `-endpoint=${socket}`,
      '-vault-addr=https://vault.example:8200',
      '-health-addr=127.0.0.1:0',
      `-hmac-key-file=${join(tmp.path, 'hmac.key')}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
  )
  let output = ''
  child.stdout.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr.on('data', (c: Buffer) => (output += c.toString()))
  let alive = true
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      alive = false
      resolve({ code, signal })
    }),
  )
  t.teardown(() => {
    if (alive) child.kill('SIGKILL')
  })
  const deadline = Date.now() + 20_000
  while (alive && Date.now() < deadline && !(await canConnect(socket))) await new Promise((r) => setTimeout(r, 50))
  t.ok(alive, `running, not "unknown option" (${output.slice(0, 1000)})`)
  const version = await driverVersion({ socketDir: tmp.path, provider: 'vault' })
  t.ok(version.ok, 'serves Version')
  child.kill('SIGTERM')
  t.same(await exited, { code: 0, signal: null })
  t.match(output, /"msg":"provider ready"/)

  const run = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) =>
      execFile(process.execPath, [CLI_MAIN, ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
      ),
    )
  const version2 = await run(['-version'])
  t.equal(version2.code, 0)
  t.equal(version2.stdout, `${RUNTIME_NAME} ${PACKAGE_VERSION}\n`, '-version is the daemon’s flag')
  const help = await run(['--help'])
  t.equal(help.code, 0)
  t.match(help.stdout, /Commands:[\s\S]*lint/, '--help is still the CLI’s help')
  const bad = await run(['-no-such-flag=1'])
  t.equal(bad.code, 2, 'an unknown daemon flag is the daemon’s usage error')
  t.match(bad.stderr, /no-such-flag/)
})

t.test('the Dockerfile’s entrypoint is what the drop-in test runs', async (t) => {
  const dockerfile = await readFile(join(PACKAGE_ROOT, 'Dockerfile'), 'utf8')
  t.match(dockerfile, /^ENTRYPOINT \["node",/m, 'node is the entrypoint, so vault-helm’s args reach the daemon')
  t.ok(entrypoint.includes('dist/daemon.js'), 'the daemon’s bundle, relative to the WORKDIR')
  t.notOk(/^CMD .*--?health-addr/m.test(dockerfile), 'the image sets no -health-addr: port 8080 is the default')
})
