// `npm run bench` (bash bench/run.sh → node dist/bench/main.js [options]):
// the side-by-side benchmark of issues 3 and 12. Starts one OpenBao (and PostgreSQL),
// runs every scenario against our provider (both identity scopes where the
// scope matters) and, when it could be installed, the reference provider, on
// the same OpenBao, counts what OpenBao did from its audit log, and writes
// results.md, results.json and chart.svg.
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import { cpus, hostname, loadavg } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { execFileSync } from 'node:child_process'
import { PACKAGE_ROOT } from '../src/package-info.js'
import { BAO_BIN } from '../test/support/openbao.js'
import { parseOptions, USAGE, UsageError, type BenchOptions } from './options.js'
import { imageEntrypoint, imageNodeFlags } from '../test/support/image.js'
import { OUR_MAIN, OUR_NODE_BIN, REFERENCE_BIN, productionNodeFlags } from './providers.js'
import { renderMarkdown, renderSvg, type BenchResults, type ReferenceInfo } from './report.js'
import {
  FLOOR_MAIN,
  floorVariant,
  medianStorm,
  runChurn,
  runFootprint,
  runLatency,
  runStorm,
  type Context,
  type StormResult,
  type Variant,
} from './scenarios.js'
import { startWorld, TTL, type World } from './world.js'
import { runFleet } from './fleet.js'
import { runUpgrade, upgradeVariants } from './upgrade.js'
import { renderSummary, summariseFile } from './profile.js'

export const DEFAULT_OUT_DIR = join(PACKAGE_ROOT, 'bench', 'results')
/** Written by bench/run.sh: the module it tried to install and, on failure, why. */
export const REFERENCE_STATUS_FILE = join(PACKAGE_ROOT, '.cache', 'bench', 'reference-status.json')

function referenceInfo(wanted: boolean): ReferenceInfo {
  let info: ReferenceInfo = {
    available: false,
    module: 'openbao-csi-provider@2.0.2',
    name: 'openbao-csi-provider',
    version: '2.0.2',
    how: 'bash ../shared/reference/build.sh (bench/run.sh)',
  }
  let reason: string | undefined
  if (process.env['VCP_REFERENCE_BIN'] !== undefined) {
    // An explicit VCP_REFERENCE_BIN wins over what bench/run.sh recorded.
    info = { available: false, module: `VCP_REFERENCE_BIN=${process.env['VCP_REFERENCE_BIN']}`, how: 'given' }
  } else if (existsSync(REFERENCE_STATUS_FILE)) {
    const st = JSON.parse(readFileSync(REFERENCE_STATUS_FILE, 'utf8')) as {
      module?: string
      name?: string
      version?: string
      how?: string
      ok?: boolean
      error?: string
    }
    info = { available: false, module: st.module ?? info.module, name: st.name, version: st.version, how: st.how }
    // The registry's address stays out of reports (they may be committed as samples).
    const error = (st.error ?? 'unknown error').replace(/https?:\/\/\S+/g, '<module proxy URL>')
    if (st.ok !== true) reason = `${st.how ?? 'installing it'} failed: ${error}`
  }
  if (!wanted) return { ...info, reason: '--no-reference' }
  if (reason === undefined && !existsSync(REFERENCE_BIN)) reason = `${REFERENCE_BIN} not found (bench/run.sh builds it)`
  if (reason === undefined && process.getuid?.() !== 0)
    reason = 'needs root for its private mount namespace (unshare -m)'
  return reason === undefined ? { ...info, available: true } : { ...info, reason }
}

/** A Node binary's version, without the "v". */
function nodeVersion(bin: string): string {
  return bin === process.execPath
    ? process.versions.node
    : execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '')
}

/**
 * Where bench/run.sh builds an older revision of ours, and the variant that runs it as that
 * revision's image did: its own Dockerfile's ENTRYPOINT (Node's flags and the script, e.g.
 * dist/src/main.js, or a launcher). A revision without an exec-form ENTRYPOINT runs its tsc output
 * with today's flags.
 */
function baselineVariant(rev: string): Variant {
  let short = rev
  try {
    short = execFileSync('git', ['-C', PACKAGE_ROOT, 'rev-parse', '--short=7', `${rev}^{commit}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim()
  } catch {
    /* not a revision here: the missing build says so when the variant starts */
  }
  const dir = join(PACKAGE_ROOT, '.cache', 'bench', `baseline-${short}`)
  const variant: Variant = { label: `ours@${short}`, kind: 'ours', args: [], main: join(dir, 'dist', 'src', 'main.js') }
  try {
    return { ...variant, main: join(dir, imageEntrypoint(dir).at(-1)!), nodeFlags: imageNodeFlags(dir) }
  } catch {
    return variant
  }
}

function notes(o: BenchOptions, ref: ReferenceInfo): string[] {
  return [
    'Vault: a real OpenBao dev server (`bao server -dev`, in memory) with a `file` audit device; every count comes from its audit log (response entries, requests made with the root token excluded).',
    "Login: OpenBao's `jwt` auth method at `jwt/` (role `bench`, `token_ttl` 1 h) validates Kubernetes-shaped service-account JWTs signed by the harness; the pod tokens arrive in the `csi.storage.k8s.io/serviceAccount.tokens` attribute, as from a driver with `tokenRequests`, so neither provider calls TokenRequest. Each pod keeps its token across re-mounts (kubelet reuses a token until 80% of its 1 h lifetime).",
    "Kubernetes API: a real kube-apiserver v1.35.4 with etcd (scripts/setup-kubernetes.sh); the providers use the ServiceAccount, Role and RoleBinding of daemonset/ with a token from its TokenRequest API, and read the HMAC key Secret `vault-csi-provider/vault-csi-provider-hmac-key` (created beforehand). A timing HTTPS front (bench/proxy.ts) with a self-signed certificate made by `openssl` for 127.0.0.1 sits before it, since the reference uses client-go's in-cluster config; KUBERNETES_SERVICE_HOST/PORT name that front for both providers.",
    'Provider service account: a directory with `token` (a real token of vault-csi-provider/vault-csi-provider from the TokenRequest API), `namespace` (`vault-csi-provider`) and `ca.crt` (the front’s self-signed certificate). Ours reads it through `-kube-service-account-dir`; the reference runs under `unshare --mount --propagation private` where a tmpfs is mounted over /run (/var/run links there) and the three files are copied to /run/secrets/kubernetes.io/serviceaccount — a private mount namespace, nothing changes outside it.',
    `Load: the Secrets Store CSI driver's own client code (sigs.k8s.io/secrets-store-csi-driver v1.6.0 PluginClientBuilder + MountContent) in test/driver-client, mode \`mount-many\`: one process, one gRPC connection, N concurrent Mounts, files written by the kubelet atomic writer, per-call timing of the Mount RPC (client interceptor) and of the whole MountContent.`,
    `Churn time: one simulated minute = ${o.minuteSec} s real; round k starts k minutes after the first (or when round k−1 ends, if later: "late" in the per-round table). TTLs stay at production-like values, unscaled (token ${TTL.token}, database credentials ${TTL.dbCreds}, certificates ${TTL.cert}): ten simulated minutes end long before two thirds of any TTL, in simulated and in real time, so the counts are those of ten real minutes. Renewal at a TTL boundary is not exercised here (the integration tests do that).`,
    "Latency: Vault time is measured from the outside by timing HTTP proxies (bench/proxy.ts) between the provider and OpenBao, one per pod (the pod's `vaultAddress`), so each Vault request belongs to exactly one Mount; the proxy's own forwarding time counts as Vault time." +
      (o.vaultTls
        ? " With --vault-tls (this run) the providers reach those proxies over HTTPS: a self-signed certificate for 127.0.0.1 made by `openssl` (P-256), named by each pod's `vaultCACertPath`, TLS negotiated by the two ends as they would with Vault; the proxies forward to OpenBao over plain HTTP (their TLS work is the bench's, not a provider's)."
        : ' The providers reach those proxies over plain HTTP (--vault-tls: over HTTPS).'),
    'CPU per Mount: utime + stime of the provider process from /proc/<pid>/stat (clock ticks, usually 10 ms each), read before and after every latency level (one block of Mounts), divided by its Mounts (and by the Vault requests its timing proxies saw). Everything the process did in that time counts (for the reference, its HMAC Secret GET over HTTPS on every Mount; for ours, timers and GC too).',
    `Fleet: ${o.nodes} provider processes stand for ${o.nodes} nodes (each its own socket, its own service-account files and read of the HMAC key Secret, its own ${o.pods} pods with their own JWTs); one \`mount-many\` driver client per node, all started together, each mounting its node's pods at once (5 KV values + one database credential, username and password from one lease). Requests, the busiest second and logins come from the audit log (its own timestamps); tokens held = logins − token revocations, leases held = secret leases created − lease revocations, both at the end of the rollout.`,
    "Footprint: VmRSS / VmHWM from /proc/<pid>/status of the provider process (for the reference, the unshare+sh wrapper execs into it, so the pid is the provider's and its start-up time includes the wrapper's mount and copy).",
    `Our provider: \`${OUR_MAIN}\`, default flags plus \`-identity-scope=serviceaccount\` for the serviceaccount rows (and \`-static-freshness=30s\` for the row that says so), run with the Node flags of the Dockerfile's ENTRYPOINT (\`${productionNodeFlags().join(' ')}\`), as the image runs it; log level info. The floor (\`${FLOOR_MAIN}\`, bench/floor-provider.ts built by bench/build-floor.mjs with the daemon's bundle options) runs with the same flags; a baseline \`ours@<rev>\` runs as that revision's own ENTRYPOINT says.`,
    ...(o.imageNode === undefined
      ? []
      : [
          `Image's Node: the row "ours (pod, image's Node …)" is the same build and flags on \`${o.imageNode}\`, the Node of the Dockerfile's base image (npm's node-linux-<arch> package, fetched by bench/run.sh: the base's exact version when npm has it, else the newest of its major), in the storm, latency and footprint scenarios; every other row of ours runs on the Node named above.`,
        ]),
    ref.available
      ? `Reference: ${ref.name ?? ref.module} ${ref.version ?? ''}, built by ${ref.how ?? 'unknown'}; default flags (its \`-openbao-addr\` where it has no \`-vault-addr\`), log level info; SecretProviderClass parameter \`audience: vault\` for both providers.`
      : `Reference: not run (${(ref.reason ?? '').replace(/\s+/g, ' ')}).`,
  ]
}

/**
 * profiles/summary.md: where each profiled provider spent its CPU, start-up excluded (the first
 * 1.5 s of the process: start-up, then the warm-up Mounts of the latency scenario).
 */
async function writeProfileSummaries(dir: string, log: (msg: string) => void): Promise<void> {
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.cpuprofile')).sort()
  const parts = ['# CPU profiles of our provider', '']
  for (const f of files) parts.push(renderSummary(f, await summariseFile(join(dir, f), PROFILE_SKIP_MS)))
  await writeFile(join(dir, 'summary.md'), parts.join('\n'))
  log(`wrote ${join(dir, 'summary.md')}`)
}
const PROFILE_SKIP_MS = 1500

export async function runBench(
  o: BenchOptions,
  log: (msg: string) => void = (m) => process.stderr.write(`[bench] ${m}\n`),
): Promise<BenchResults> {
  const startedAt = new Date().toISOString()
  const reference = referenceInfo(o.reference)
  if (!reference.available && o.reference) log(`reference provider not available: ${reference.reason ?? ''}`)
  const results: BenchResults = {
    startedAt,
    finishedAt: '',
    options: o,
    environment: {
      // The Node our provider runs on (BENCH_NODE_BIN), not necessarily the bench's own.
      node: nodeVersion(OUR_NODE_BIN),
      openbao: (() => {
        try {
          return execFileSync(BAO_BIN, ['version'], { encoding: 'utf8' }).split('\n')[0]!.trim()
        } catch {
          return 'OpenBao (version unknown)'
        }
      })(),
      cpus: cpus().length,
      host: hostname(),
      loadAvg: [],
      commit: (() => {
        try {
          return execFileSync('git', ['-C', PACKAGE_ROOT, 'describe', '--always', '--dirty'], {
            encoding: 'utf8',
          }).trim()
        } catch {
          return 'unknown'
        }
      })(),
    },
    reference,
    storm: [],
    churn: [],
    latency: [],
    footprint: [],
    fleet: [],
    upgrade: [],
    failures: [],
    startups: {},
    firstAnswers: {},
    notes: notes(o, reference),
  }
  const ours: Variant[] = o.scopes.map((scope) => ({
    label: `ours (${scope})`,
    kind: 'ours',
    args: scope === 'pod' ? [] : [`-identity-scope=${scope}`],
  }))
  // A fleet that shares tokens usually also accepts a short delay before a rotated KV value
  // shows (docs/vault-economy.md): measure that setting too.
  if (o.scopes.includes('serviceaccount')) {
    ours.push({
      label: 'ours (serviceaccount, 30s freshness)',
      kind: 'ours',
      args: ['-identity-scope=serviceaccount', '-static-freshness=30s'],
    })
  }
  const ref: Variant[] = reference.available ? [{ label: 'reference', kind: 'reference', args: [] }] : []
  const oursDefault = ours.filter((v) => v.args.length === 0)
  // One row per identity scope (not the freshness setting, which changes nothing on a warm Mount).
  const oursScopes = ours.filter((v) => !v.label.includes('freshness'))
  const baselines = o.baselines.map(baselineVariant)
  // The image's Node (--image-node): ours (pod) on the runtime the image ships, beside the bench's own.
  const image = o.imageNode === undefined ? undefined : { bin: o.imageNode, version: nodeVersion(o.imageNode) }
  const imageNode: Variant[] =
    image === undefined
      ? []
      : [{ label: `ours (pod, image's Node ${image.version})`, kind: 'ours', args: [], nodeBin: image.bin }]
  // The floor beside ours in the footprint: on the bench's Node, and on the image's when it runs.
  const floors = [floorVariant(), ...(image === undefined ? [] : [floorVariant(image)])]

  let world: World | undefined
  const onSignal = (sig: NodeJS.Signals): void => {
    log(`${sig}: stopping`)
    void (world?.stop() ?? Promise.resolve()).finally(() => process.exit(130))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    world = await startWorld({
      database: o.scenarios.includes('churn') || o.scenarios.includes('fleet') || o.scenarios.includes('upgrade'),
      vaultTls: o.vaultTls,
      log,
    })
    const profileDir = o.profile ? join(o.outDir, 'profiles') : undefined
    if (profileDir !== undefined) await mkdir(profileDir, { recursive: true })
    const ctx: Context = {
      world,
      dir: world.dir,
      log,
      startups: results.startups,
      firstAnswers: results.firstAnswers,
      profileDir,
    }
    const attempt = async <T>(v: Variant, what: string, fn: () => Promise<T>, into: T[]): Promise<void> => {
      try {
        into.push(await fn())
      } catch (err) {
        const msg = err instanceof Error ? err.message : String(err)
        log(`${what}: ${v.label} failed: ${msg.split('\n')[0] ?? ''}`)
        results.failures.push({ variant: `${what}: ${v.label}`, error: msg })
      }
    }
    if (o.scenarios.includes('storm')) {
      // Cold runs, variants in alternating order per repetition; the median run is reported.
      const variants = [...ours, ...imageNode, ...ref]
      const runs = new Map<string, StormResult[]>(variants.map((v) => [v.label, []]))
      for (let rep = 0; rep < o.repeat; rep++) {
        for (const v of rep % 2 === 0 ? variants : [...variants].reverse()) {
          await attempt(v, 'storm', () => runStorm(ctx, v, o.pods), runs.get(v.label)!)
        }
      }
      for (const v of variants) {
        const r = runs.get(v.label)!
        if (r.length > 0) results.storm.push(medianStorm(r))
      }
    }
    if (o.scenarios.includes('churn')) {
      for (const v of [...ours, ...ref]) {
        await attempt(v, 'churn', () => runChurn(ctx, v, o.pods, o.rounds, o.minuteSec), results.churn)
      }
    }
    if (o.scenarios.includes('latency')) {
      try {
        const lat = await runLatency(
          ctx,
          [...oursScopes, ...imageNode, floorVariant(), ...baselines, ...ref],
          o.latencyMounts,
          o.latencyWarmup,
          o.latencyIdleSec,
        )
        results.latency.push(...lat.results)
        results.failures.push(...lat.failures)
        for (const f of lat.failures) log(`${f.variant} failed: ${f.error.split('\n')[0] ?? ''}`)
      } catch (err) {
        const msg = err instanceof Error ? err.message : String(err)
        log(`latency failed: ${msg.split('\n')[0] ?? ''}`)
        results.failures.push({ variant: 'latency', error: msg })
      }
    }
    if (o.scenarios.includes('footprint')) {
      for (const v of [...oursDefault, ...imageNode, ...floors, ...baselines, ...ref]) {
        await attempt(v, 'footprint', () => runFootprint(ctx, v, o.pods, o.settleSec * 1000), results.footprint)
      }
    }
    if (o.scenarios.includes('fleet')) {
      for (const v of [...oursScopes, ...ref]) {
        await attempt(v, 'fleet', () => runFleet(ctx, v, o.nodes, o.pods, o.fleetSpreadSec), results.fleet)
      }
    }
    if (o.scenarios.includes('upgrade')) {
      for (const v of upgradeVariants(oursScopes, ref)) {
        await attempt(v, 'upgrade', () => runUpgrade(ctx, v, o.pods), results.upgrade!)
      }
    }
  } finally {
    process.removeListener('SIGINT', onSignal)
    process.removeListener('SIGTERM', onSignal)
    await world?.stop()
  }
  results.finishedAt = new Date().toISOString()
  results.environment.loadAvg = loadavg().map((x) => Math.round(x * 100) / 100)
  await mkdir(o.outDir, { recursive: true })
  await writeFile(join(o.outDir, 'results.json'), JSON.stringify(results, null, 2) + '\n')
  await writeFile(join(o.outDir, 'results.md'), renderMarkdown(results))
  await writeFile(join(o.outDir, 'chart.svg'), renderSvg(results))
  if (o.profile) await writeProfileSummaries(join(o.outDir, 'profiles'), log)
  log(`wrote ${join(o.outDir, 'results.md')}, results.json and chart.svg`)
  return results
}

async function cli(): Promise<void> {
  let o
  try {
    o = parseOptions(process.argv.slice(2), DEFAULT_OUT_DIR)
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`bench: ${err.message}\n\n${USAGE}`)
      process.exit(2)
    }
    throw err
  }
  if (o === 'help') {
    process.stdout.write(USAGE)
    return
  }
  const r = await runBench(o)
  process.stdout.write(renderMarkdown(r))
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  cli().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
      process.exit(1)
    },
  )
}
