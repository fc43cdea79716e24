// Command-line options of `npm run bench` (node dist/bench/main.js [options]).
import { existsSync } from 'node:fs'
import { isAbsolute } from 'node:path'
export const SCENARIOS = ['storm', 'churn', 'latency', 'footprint', 'fleet', 'upgrade'] as const
export type Scenario = (typeof SCENARIOS)[number]

export interface BenchOptions {
  scenarios: Scenario[]
  /** Pods per node in the storm, churn and footprint scenarios (110 = a full node). */
  pods: number
  /** Republish rounds in the churn scenario. */
  rounds: number
  /** Real seconds per simulated minute in the churn scenario. */
  minuteSec: number
  /** Mounts per concurrency level in the latency scenario (after the warm-up below). */
  latencyMounts: number
  /**
   * Latency: unmeasured Mounts per variant at concurrency 8 before the levels, so that "warm" means
   * the same for every variant: a JIT runtime's code optimised (about 300 Mounts for ours on Node 20),
   * a Go binary's caches filled. Their CPU is reported on its own line. 0: one Mount per pod only.
   */
  latencyWarmup: number
  /**
   * Latency: seconds every variant idles after its levels before one more block of Mounts at
   * concurrency 1, reported on its own ("after idle"). A node's provider waits minutes between
   * pods, and a Node process pays more per Mount after idling than back to back. 0: no such block.
   */
  latencyIdleSec: number
  /** Storm runs per variant (cold each time); the median by completion time is reported. */
  repeat: number
  /** Run the reference provider too (when it can be installed). */
  reference: boolean
  /** Our provider's identity scopes to run (storm and churn run once per scope). */
  scopes: string[]
  /** Where results.md, results.json and chart.svg go. */
  outDir: string
  quick: boolean
  /** Write a V8 CPU profile of each of our provider's processes into <out>/profiles. */
  profile: boolean
  /** Provider processes ("nodes") in the fleet scenario. */
  nodes: number
  /** Fleet: the nodes' pods start one node after another over this many seconds (0: all at once). */
  fleetSpreadSec: number
  /**
   * Older builds of ours run as extra variants "ours@<rev>" (latency and footprint), built by
   * bench/run.sh into .cache/bench/baseline-<rev>/. Empty: none.
   */
  baselines: string[]
  /** Footprint: seconds a fresh provider idles before its settled RSS is read (the 2 s reading comes first). */
  settleSec: number
  /**
   * The Node binary of the image's base (bench/run.sh fetches it from npm): ours (pod) runs on it
   * too, as one more variant of the storm, latency and footprint scenarios. Undefined: not run.
   */
  imageNode: string | undefined
  /**
   * Latency: the providers reach the pods' timing proxies over HTTPS (a self-signed certificate for
   * 127.0.0.1, named by each pod's `vaultCACertPath`), as a real Vault is reached: TLS's cost on every
   * request is in every variant's CPU per Mount. Off: plain HTTP, as in every sample before 2026-12-02.
   */
  vaultTls: boolean
}

/** Latency: Mounts of each variant's block after idling (fewer when a level is smaller). */
export const AFTER_IDLE_MOUNTS = 100

/**
 * Latency: right after a variant's levels, this many Mounts at concurrency 1 (fewer when a level is
 * smaller), one every PACED_INTERVAL_MS. 200 ms is 5 Mounts/s, the pace the reference keeps anyway
 * (client-go's 5 requests/s, and an HMAC Secret GET on each of its Mounts): CPU per Mount compared
 * at the same rate for every variant, not only at each one's own full speed, where ours runs 15–20
 * times as many Mounts per second as the reference on a machine 80–98 % busy.
 */
export const PACED_MOUNTS = 100
export const PACED_INTERVAL_MS = 200

/** The build before the issue-12 work: the default baseline of a full run. */
export const DEFAULT_BASELINE = '9064202'

export const USAGE = `usage: npm run bench -- [options]

  --scenario LIST    storm,churn,latency,footprint,fleet,upgrade (comma-separated; default: all)
  --pods N           pods per node (default 110)
  --nodes N          provider processes in the fleet scenario (default 10)
  --fleet-spread SEC the fleet's nodes start their pods one after another over SEC seconds
                     (default 30; 0: every pod of every node at once)
  --baseline REVS    older builds of ours to run as extra variants, comma-separated git revisions
                     (default ${DEFAULT_BASELINE}, the build before issue 12; "none": no baseline)
  --rounds N         republish rounds in the churn scenario (default 10)
  --minute SEC       real seconds per simulated minute in the churn scenario (default 3)
  --latency-mounts N Mounts per concurrency level in the latency scenario (default 400)
  --latency-warmup N unmeasured Mounts per variant before the latency levels (default 400;
                     --quick: 40; 0: one Mount per pod), their CPU reported on its own line
  --latency-idle SEC after the levels, for each variant: SEC seconds with nothing running, then up
                     to ${AFTER_IDLE_MOUNTS} more Mounts at concurrency 1, reported as "after idle" (default 20;
                     --quick: 1; 0: skip)
  --repeat N         storm runs per variant, median reported (default 3)
  --settle SEC       footprint: read the idle RSS again SEC seconds after start, once V8's memory
                     reducer has collected the garbage of start-up (default 20; --quick: 2)
  --quick            small numbers for a smoke run (6 pods, 3 rounds, 0.5 s minutes, 40 Mounts,
                     2 fleet nodes, no baseline)
  --image-node PATH  also run ours (pod) on this Node binary in the storm, latency and footprint
                     scenarios (bench/run.sh passes the Node of the Dockerfile's base image, fetched
                     from npm, unless --quick or --image-node is given; "none": not run)
  --vault-tls        latency: the providers reach Vault (the timing proxies in front of OpenBao) over
                     HTTPS, the proxies' self-signed CA named by each pod's vaultCACertPath
                     (default: plain HTTP)
  --no-reference     run our provider only
  --profile          write a CPU profile of each of our provider processes to <out>/profiles
  --out DIR          output directory (default bench/results)
  -h, --help         this text
`

export class UsageError extends Error {}

function positive(name: string, v: string | undefined, integer: boolean): number {
  const n = Number(v)
  if (v === undefined || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new UsageError(`${name} needs a positive ${integer ? 'integer' : 'number'}, got ${v ?? 'nothing'}`)
  }
  return n
}

/** Parses argv (without node and the script); `--name value` and `--name=value` both work. */
export function parseOptions(argv: string[], defaultOutDir: string): BenchOptions | 'help' {
  const given = new Map<string, string | undefined>()
  const flags = new Set(['--quick', '--no-reference', '--profile', '--vault-tls', '-h', '--help'])
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const eq = a.indexOf('=')
    const name = eq > 0 ? a.slice(0, eq) : a
    if (flags.has(name)) {
      if (eq > 0) throw new UsageError(`${name} takes no value, got ${a}`)
      given.set(name, undefined)
      continue
    }
    if (!name.startsWith('--')) throw new UsageError(`unexpected argument ${a}`)
    given.set(name, eq > 0 ? a.slice(eq + 1) : argv[++i])
  }
  if (given.has('-h') || given.has('--help')) return 'help'
  const known = [
    '--scenario',
    '--pods',
    '--rounds',
    '--minute',
    '--latency-mounts',
    '--latency-warmup',
    '--latency-idle',
    '--repeat',
    '--out',
    '--nodes',
    '--fleet-spread',
    '--baseline',
    '--settle',
    '--image-node',
    ...flags,
  ]
  for (const k of given.keys()) if (!known.includes(k)) throw new UsageError(`unknown option ${k}`)

  const quick = given.has('--quick')
  const o: BenchOptions = {
    scenarios: [...SCENARIOS],
    pods: quick ? 6 : 110,
    rounds: quick ? 3 : 10,
    minuteSec: quick ? 0.5 : 3,
    latencyMounts: quick ? 40 : 400,
    latencyWarmup: quick ? 40 : 400,
    latencyIdleSec: quick ? 1 : 20,
    repeat: quick ? 1 : 3,
    reference: !given.has('--no-reference'),
    scopes: ['pod', 'serviceaccount'],
    outDir: given.get('--out') ?? defaultOutDir,
    quick,
    profile: given.has('--profile'),
    nodes: quick ? 2 : 10,
    fleetSpreadSec: quick ? 0 : 30,
    baselines: quick ? [] : [DEFAULT_BASELINE],
    settleSec: quick ? 2 : 20,
    imageNode: undefined,
    vaultTls: given.has('--vault-tls'),
  }
  if (given.has('--scenario')) {
    const list = (given.get('--scenario') ?? '').split(',').map((s) => s.trim())
    for (const s of list) {
      if (!(SCENARIOS as readonly string[]).includes(s)) {
        throw new UsageError(`unknown scenario ${s} (expected ${SCENARIOS.join(', ')})`)
      }
    }
    o.scenarios = SCENARIOS.filter((s) => list.includes(s))
  }
  if (given.has('--image-node')) {
    const v = given.get('--image-node') ?? ''
    if (v !== 'none') {
      if (!isAbsolute(v) || !existsSync(v))
        throw new UsageError(`--image-node needs an absolute path to a Node binary, got ${v || 'nothing'}`)
      o.imageNode = v
    }
  }
  if (given.has('--settle')) o.settleSec = Math.max(2, positive('--settle', given.get('--settle'), false))
  if (given.has('--pods')) o.pods = positive('--pods', given.get('--pods'), true)
  if (given.has('--repeat')) o.repeat = positive('--repeat', given.get('--repeat'), true)
  if (given.has('--rounds')) o.rounds = positive('--rounds', given.get('--rounds'), true)
  if (given.has('--minute')) o.minuteSec = positive('--minute', given.get('--minute'), false)
  if (given.has('--nodes')) o.nodes = positive('--nodes', given.get('--nodes'), true)
  if (given.has('--fleet-spread')) {
    const v = given.get('--fleet-spread')
    o.fleetSpreadSec = v === '0' ? 0 : positive('--fleet-spread', v, false)
  }
  if (given.has('--baseline')) {
    const v = given.get('--baseline') ?? ''
    const revs = v === 'none' ? [] : v.split(',').map((r) => r.trim())
    for (const r of revs) {
      // A git revision, used in a path and a variant label: hex or a plain ref name.
      if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$/.test(r)) throw new UsageError(`--baseline: not a git revision: ${r}`)
    }
    o.baselines = revs
  }
  if (given.has('--latency-warmup')) {
    const v = given.get('--latency-warmup')
    o.latencyWarmup = v === '0' ? 0 : positive('--latency-warmup', v, true)
  }
  if (given.has('--latency-idle')) {
    const v = given.get('--latency-idle')
    o.latencyIdleSec = v === '0' ? 0 : positive('--latency-idle', v, false)
  }
  if (given.has('--latency-mounts')) {
    o.latencyMounts = positive('--latency-mounts', given.get('--latency-mounts'), true)
  }
  return o
}
