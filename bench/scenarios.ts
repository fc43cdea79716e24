// The four scenarios of the benchmark (issue 3), each run against every
// provider variant on the same OpenBao. Every scenario starts a fresh provider
// process, so each one is cold at its start.
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../src/package-info.js'
import { auditSize, countAuditSince, emptyCounts, addCounts, type VaultCounts } from './audit.js'
import {
  attributesFor,
  failures,
  makePods,
  mountMany,
  percentile,
  type ManyCall,
  type ManyOutput,
  type SpcObject,
} from './load.js'
import { AFTER_IDLE_MOUNTS, PACED_INTERVAL_MS, PACED_MOUNTS } from './options.js'
import {
  productionNodeFlags,
  machineCpu,
  processCpuMs,
  startProviderUnderTest,
  type ProviderUnderTest,
} from './providers.js'
import { busyMs, startTimingProxy, type TimingProxy } from './proxy.js'
import type { World } from './world.js'

export interface Variant {
  /** e.g. "ours (pod)", "ours (serviceaccount)", "reference" */
  label: string
  kind: 'ours' | 'reference'
  args: string[]
  /** Ours: another script (a baseline "ours@<rev>", the floor); default the current build's. */
  main?: string
  /** Ours: Node's flags for that script (a baseline's own ENTRYPOINT's); default the image's (productionNodeFlags). */
  nodeFlags?: string[]
  /** Ours: the Node binary it runs on (the image's Node, --image-node); default the bench's (BENCH_NODE_BIN). */
  nodeBin?: string
}

/**
 * The latency and footprint scenarios' floor: bench/floor-provider.ts, the least a Node provider
 * can do for the benchmark's Mounts with the libraries ours loads. Measured beside ours, never
 * held to targets (the issue-36 budget's memory rows are ratios to it). On another Node (the
 * image's) its label gets that Node's name after it.
 */
export const FLOOR = 'floor (Node, grpc-js, undici; no provider logic)'

export function isFloor(variant: string): boolean {
  return variant.startsWith(FLOOR)
}

/**
 * The floor's script: the bundle bench/build-floor.mjs writes (its FLOOR_BUNDLE), also when this
 * module runs from source (the tests). tsc's output cannot import that .mjs from dist/bench/.
 */
export const FLOOR_MAIN = join(PACKAGE_ROOT, 'dist', 'bench', 'floor-provider.bundle.js')

/** The floor on the bench's Node, or on the image's (its binary and version, --image-node). */
export function floorVariant(imageNode?: { bin: string; version: string }): Variant {
  return {
    label: imageNode === undefined ? FLOOR : `${FLOOR} on the image's Node ${imageNode.version}`,
    kind: 'ours',
    args: [],
    main: FLOOR_MAIN,
    ...(imageNode === undefined ? {} : { nodeBin: imageNode.bin }),
  }
}

export interface Context {
  world: World
  dir: string
  log: (msg: string) => void
  /** Every start-up time seen, per variant label (ms): to an accepting socket, and to the first answer. */
  startups: Record<string, number[]>
  firstAnswers: Record<string, number[]>
  /** Where CPU profiles of our provider go (--profile), else undefined. */
  profileDir: string | undefined
}

export interface Failed {
  variant: string
  error: string
}

export const SMALL_KV: SpcObject[] = [1, 2, 3, 4, 5].map((i) => ({
  objectName: `kv-${i}`,
  secretPath: `secret/data/bench/small-${i}`,
  secretKey: 'value',
}))

const BIG_KV: SpcObject[] = Array.from({ length: 10 }, (_, i) => ({
  objectName: `big-${i + 1}`,
  secretPath: `secret/data/bench/big-${i + 1}`,
  secretKey: 'value',
}))

const CHURN_OBJECTS: SpcObject[] = [
  { objectName: 'db-username', secretPath: 'database/creds/app', secretKey: 'username' },
  { objectName: 'db-password', secretPath: 'database/creds/app', secretKey: 'password' },
  {
    objectName: 'tls.crt',
    secretPath: 'pki/issue/app',
    method: 'PUT',
    secretKey: 'certificate',
    secretArgs: { common_name: 'app.bench.test', ttl: '24h' },
  },
  {
    objectName: 'tls.key',
    secretPath: 'pki/issue/app',
    method: 'PUT',
    secretKey: 'private_key',
    secretArgs: { common_name: 'app.bench.test', ttl: '24h' },
  },
  ...SMALL_KV.slice(0, 3),
]

function hmacGets(world: World): number {
  return world.kubeTls.calls.filter((c) => c.method === 'GET' && c.path.includes('/secrets/')).length
}

const PRODUCTION_NODE_FLAGS = productionNodeFlags()

export async function startProvider(ctx: Context, v: Variant, tag: string): Promise<ProviderUnderTest> {
  const { world } = ctx
  const p = await startProviderUnderTest({
    label: `${v.label} ${tag}`,
    kind: v.kind,
    dir: ctx.dir,
    vaultAddr: world.bao.addr,
    kubeHost: '127.0.0.1',
    kubePort: world.kubeTls.port,
    saDir: world.saDir,
    args: v.args,
    main: v.main,
    nodeBin: v.nodeBin,
    nodeArgs:
      v.kind !== 'ours'
        ? []
        : [
            ...(v.nodeFlags ?? PRODUCTION_NODE_FLAGS),
            ...(ctx.profileDir !== undefined
              ? [
                  '--cpu-prof',
                  `--cpu-prof-dir=${ctx.profileDir}`,
                  `--cpu-prof-name=${`${v.label}-${tag}`.replace(/[^a-z0-9]+/gi, '-')}.cpuprofile`,
                ]
              : []),
          ],
  })
  ;(ctx.startups[v.label] ??= []).push(p.startupMs)
  ;(ctx.firstAnswers[v.label] ??= []).push(p.firstAnswerMs)
  return p
}

async function withProvider<T>(
  ctx: Context,
  v: Variant,
  tag: string,
  fn: (p: ProviderUnderTest) => Promise<T>,
): Promise<T> {
  const p = await startProvider(ctx, v, tag)
  try {
    return await fn(p)
  } finally {
    await p.stop()
  }
}

export async function settleAudit(): Promise<void> {
  // OpenBao writes the audit entry before answering; a short pause covers requests a
  // provider sends right after a Mount returns (e.g. a background revocation).
  await new Promise((r) => setTimeout(r, 300))
}

// ------------------------------------------------------------------ 1. rollout storm
export interface StormResult {
  variant: string
  pods: number
  ok: number
  failed: number
  sampleError: string | undefined
  /** From the first Mount's start to the last one's end (incl. the driver's file writes). */
  wallMs: number
  mountP50Ms: number
  mountMaxMs: number
  counts: VaultCounts
  hmacGets: number
  /** Every run (the reported one is the median by completion time). */
  runs?: Array<{ wallMs: number; logins: number; kvReads: number; failed: number }>
}

/** One storm's figures: the driver client's output and what the audit log counted meanwhile. */
function stormResult(
  variant: string,
  pods: number,
  out: ManyOutput,
  counts: VaultCounts,
  hmacGets: number,
): StormResult {
  const f = failures(out)
  const rpc = out.results.map((r) => r.rpcMs)
  return {
    variant,
    pods,
    ok: out.results.length - f.count,
    failed: f.count,
    sampleError: f.sample,
    wallMs: out.wallMs,
    mountP50Ms: percentile(rpc, 50),
    mountMaxMs: Math.max(...rpc),
    counts,
    hmacGets,
  }
}

/** The run with the median completion time, with every run's time attached. */
export function medianStorm(runs: StormResult[]): StormResult {
  const sorted = [...runs].sort((a, b) => a.wallMs - b.wallMs)
  const m = sorted[Math.floor((sorted.length - 1) / 2)]!
  return {
    ...m,
    runs: runs.map((r) => ({ wallMs: r.wallMs, logins: r.counts.logins, kvReads: r.counts.kvReads, failed: r.failed })),
  }
}

export async function runStorm(
  ctx: Context,
  v: Variant,
  pods: number,
  objects = SMALL_KV,
  tag = 'storm',
): Promise<StormResult> {
  return withProvider(ctx, v, tag, async (p) => {
    const podList = await makePods(ctx.dir, `${tag}-${v.kind}-${Date.now()}`, pods, ctx.world.podJwt)
    const calls = podList.map((pod) => ({ target: pod.target, attributes: attributesFor(pod, objects) }))
    const before = await auditSize(ctx.world.auditFile)
    const kubeBefore = hmacGets(ctx.world)
    ctx.log(`${tag}: ${v.label}: ${pods} pods mount ${objects.length} objects at once`)
    const out = await mountMany(p.socketDir, calls, pods, ctx.dir)
    await settleAudit()
    const { counts } = await countAuditSince(ctx.world.auditFile, before)
    return stormResult(v.label, pods, out, counts, hmacGets(ctx.world) - kubeBefore)
  })
}

// ------------------------------------------------------------------ 2. republish churn
export interface ChurnRound {
  round: number
  ok: number
  failed: number
  wallMs: number
  /** How late the round started against its simulated-minute slot (0 when on time). */
  lateMs: number
  counts: VaultCounts
}

export interface ChurnResult {
  variant: string
  pods: number
  rounds: ChurnRound[]
  total: VaultCounts
  loginsAfterFirstRound: number
  failed: number
  sampleError: string | undefined
  hmacGets: number
  minuteSec: number
}

export async function runChurn(
  ctx: Context,
  v: Variant,
  pods: number,
  rounds: number,
  minuteSec: number,
): Promise<ChurnResult> {
  return withProvider(ctx, v, 'churn', async (p) => {
    const podList = await makePods(ctx.dir, `churn-${v.kind}-${Date.now()}`, pods, ctx.world.podJwt)
    // Each pod keeps its token across rounds: kubelet reuses a service-account token until
    // 80% of its lifetime (1 h here), far beyond ten minutes.
    const calls = podList.map((pod) => ({ target: pod.target, attributes: attributesFor(pod, CHURN_OBJECTS) }))
    const kubeBefore = hmacGets(ctx.world)
    const start = Date.now()
    const out: ChurnRound[] = []
    let failed = 0
    let sampleError: string | undefined
    let offset = await auditSize(ctx.world.auditFile)
    for (let r = 0; r < rounds; r++) {
      const slot = start + r * minuteSec * 1000
      const wait = slot - Date.now()
      if (wait > 0) await new Promise((res) => setTimeout(res, wait))
      const lateMs = Math.max(0, Date.now() - slot)
      const res = await mountMany(p.socketDir, calls, pods, ctx.dir)
      await settleAudit()
      const counted = await countAuditSince(ctx.world.auditFile, offset)
      offset = counted.offset
      const f = failures(res)
      failed += f.count
      sampleError ??= f.sample
      out.push({
        round: r + 1,
        ok: res.results.length - f.count,
        failed: f.count,
        wallMs: res.wallMs,
        lateMs,
        counts: counted.counts,
      })
      ctx.log(
        `churn: ${v.label}: round ${r + 1}/${rounds}: ${res.wallMs.toFixed(0)} ms, logins ${counted.counts.logins}, ` +
          `db creds ${counted.counts.dbCreds}, certs ${counted.counts.certs}, kv reads ${counted.counts.kvReads}` +
          (f.count > 0 ? `, ${f.count} failed (${f.sample ?? ''})` : ''),
      )
    }
    const total = out.reduce((acc, r) => addCounts(acc, r.counts), emptyCounts())
    return {
      variant: v.label,
      pods,
      rounds: out,
      total,
      loginsAfterFirstRound: out.slice(1).reduce((n, r) => n + r.counts.logins, 0),
      failed,
      sampleError,
      hmacGets: hmacGets(ctx.world) - kubeBefore,
      minuteSec,
    }
  })
}

// ------------------------------------------------------------------ 3. latency
export interface LatencyLevel {
  concurrency: number
  mounts: number
  failed: number
  sampleError: string | undefined
  mountP50Ms: number
  mountP99Ms: number
  vaultP50Ms: number
  vaultP99Ms: number
  overheadP50Ms: number
  overheadP99Ms: number
  /** Mean time per Mount inside Kubernetes API calls (the HMAC Secret GET), overlapping its window. */
  kubeMeanMs: number
  /** Vault requests per Mount: those inside each Mount's window (the driver client's clock against the proxy's). */
  vaultCallsPerMount: number
  /** Every request the level's timing proxies passed to Vault, whichever Mount made it. */
  vaultRequests: number
  mountsPerSec: number
  /** CPU time of the provider process (utime + stime) per Mount, over the level's Mounts. */
  cpuMsPerMount: number
  /** The same per Vault request the provider made (every request its proxies saw in the level). */
  cpuMsPerVaultRequest: number
  /** CPU time of the OpenBao process per Mount over the level: what the provider's way of working costs Vault. */
  vaultCpuMsPerMount: number
  /**
   * Share of the machine's CPU time (all CPUs) that was busy during the level, whoever used it
   * (provider, OpenBao, the benchmark's proxies and driver clients): near 1, Mounts/s is bound by
   * the machine, not by the provider alone.
   */
  machineBusy: number
}

/** The unmeasured Mounts before the levels (--latency-warmup): what a fresh provider's first Mounts cost. */
export interface LatencyWarmup {
  mounts: number
  failed: number
  /** CPU of the provider process per warm-up Mount: ours compiles its hot code (V8's JIT) in these. */
  cpuMsPerMount: number
}

export interface LatencyResult {
  variant: string
  /** How the variant reached Vault (its pods' timing proxies): 'https' with --vault-tls. */
  vaultScheme: 'http' | 'https'
  warmup: LatencyWarmup
  levels: LatencyLevel[]
  /** The paced block right after the levels: concurrency 1, one Mount every `intervalMs` (PACED_MOUNTS). */
  paced: (LatencyLevel & { intervalMs: number }) | undefined
  /**
   * The block at concurrency 1 after `idleSec` with nothing running (--latency-idle); absent with 0.
   * vaultIdleCpuMsPerSec: OpenBao's CPU per second during that spell, its own background work,
   * which any level's OpenBao CPU per Mount carries too (more of it, the fewer Mounts per second).
   */
  afterIdle: (LatencyLevel & { idleSec: number; vaultIdleCpuMsPerSec: number }) | undefined
}

interface LatencySetup {
  v: Variant
  p: ProviderUnderTest
  proxies: TimingProxy[]
  attrs: string[]
  targets: string[]
  warmup: LatencyWarmup
}

const LATENCY_PODS = 8

async function setUpLatency(ctx: Context, v: Variant, tag = 'latency'): Promise<LatencySetup> {
  const proxies: TimingProxy[] = []
  let p: ProviderUnderTest | undefined
  try {
    // --vault-tls: HTTPS to the proxies, their CA named as a SecretProviderClass names Vault's.
    const front = ctx.world.vaultFrontTls
    for (let i = 0; i < LATENCY_PODS; i++) {
      proxies.push(await startTimingProxy(ctx.world.bao.addr, front === undefined ? {} : { tls: front }))
    }
    p = await startProvider(ctx, v, tag)
    const pods = await makePods(ctx.dir, `${tag}-${v.kind}-${Date.now()}`, LATENCY_PODS, ctx.world.podJwt)
    const ca: Record<string, string> = front === undefined ? {} : { vaultCACertPath: front.certPath }
    const attrs = pods.map((pod, i) => attributesFor(pod, SMALL_KV, { vaultAddress: proxies[i]!.url, ...ca }))
    const targets = pods.map((pod) => pod.target)
    // Warm-up: every pod logs in once and every object is read once.
    const warm = await mountMany(
      p.socketDir,
      pods.map((pod, i) => ({ target: pod.target, attributes: attrs[i]! })),
      LATENCY_PODS,
      ctx.dir,
    )
    const wf = failures(warm)
    if (wf.count > 0) throw new Error(`warm-up: ${wf.count} Mounts failed: ${wf.sample ?? ''}`)
    return { v, p, proxies, attrs, targets, warmup: { mounts: 0, failed: 0, cpuMsPerMount: NaN } }
  } catch (err) {
    await p?.stop()
    for (const px of proxies) await px.close()
    throw err
  }
}

/**
 * Vault time is measured from the outside: each of the 8 pods names its own timing proxy
 * in front of OpenBao as `vaultAddress`, so every Vault request is attributed to exactly one
 * pod, and (one Mount per pod at a time) to exactly one Mount. Provider overhead = Mount RPC
 * time − the union of that pod's Vault request intervals inside the Mount.
 *
 * Every variant runs its warm-up and its levels back to back, one variant after the other, so
 * the steady figures are those of a busy process. Variants no longer take turns block by block:
 * the turns left each of ours idle for the ~20 s of a reference block, and a Node process pays
 * more per Mount after idling (measured on Node 20: ~4.5 against ~3 ms per Mount at concurrency 1
 * over 100 Mounts after 20 s idle, lasting beyond 150 Mounts; the Go reference 0.88–1.37× its busy
 * figure in three runs). It is real on a node, where the provider waits minutes between pods, so
 * it is measured on its own: right after each variant's own levels, the machine idles `idleSec`
 * and the variant runs one more block at concurrency 1.
 */
export async function runLatency(
  ctx: Context,
  variants: Variant[],
  mountsPerLevel: number,
  warmupMounts: number,
  idleSec: number,
): Promise<{ results: LatencyResult[]; failures: Failed[] }> {
  const setups: LatencySetup[] = []
  const failed: Failed[] = []
  try {
    for (const v of variants) {
      try {
        setups.push(await setUpLatency(ctx, v))
      } catch (err) {
        failed.push({ variant: `latency: ${v.label}`, error: err instanceof Error ? err.message : String(err) })
      }
    }
    await prime(ctx, setups[0]?.v, warmupMounts)
    const levels = new Map<string, LatencyLevel[]>()
    const paced = new Map<string, LatencyLevel>()
    const afterIdle = new Map<string, LatencyLevel>()
    const idleVault = new Map<string, number>()
    const pacedCount = Math.min(PACED_MOUNTS, mountsPerLevel)
    const idleCount = Math.min(AFTER_IDLE_MOUNTS, mountsPerLevel)
    for (const s of setups) {
      await warmUp(ctx, s, warmupMounts)
      ctx.log(`latency: ${s.v.label}: ${mountsPerLevel} Mounts at concurrency 1, then at concurrency 8`)
      const own: LatencyLevel[] = []
      for (const c of [1, 8]) own.push(await latencyLevel(ctx, s, c, mountsPerLevel))
      levels.set(s.v.label, own)
      if (pacedCount > 0) {
        ctx.log(`latency: ${s.v.label}: ${pacedCount} Mounts at concurrency 1, one every ${PACED_INTERVAL_MS} ms`)
        paced.set(s.v.label, await latencyLevel(ctx, s, 1, pacedCount, PACED_INTERVAL_MS))
      }
      // Its own quiet spell, with nothing else running, right after its own Mounts: every variant's
      // process has idled exactly idleSec before its block. (In one shared spell the first block ran
      // after a quiet machine and the later ones did not; with every spell after all the levels, the
      // first variant's process idled through every other variant's levels too, minutes longer.)
      if (idleSec > 0) {
        ctx.log(`latency: ${s.v.label}: ${idleSec} s idle, then ${idleCount} Mounts at concurrency 1`)
        const baoBefore = await processCpuMs(ctx.world.bao.pid)
        await new Promise((r) => setTimeout(r, idleSec * 1000))
        idleVault.set(s.v.label, ((await processCpuMs(ctx.world.bao.pid)) - baoBefore) / idleSec)
        afterIdle.set(s.v.label, await latencyLevel(ctx, s, 1, idleCount))
      }
    }
    return {
      results: setups.map((s) => ({
        variant: s.v.label,
        vaultScheme: s.proxies[0]?.url.startsWith('https:') ? ('https' as const) : ('http' as const),
        warmup: s.warmup,
        levels: levels.get(s.v.label)!,
        paced: paced.has(s.v.label) ? { intervalMs: PACED_INTERVAL_MS, ...paced.get(s.v.label)! } : undefined,
        afterIdle: afterIdle.has(s.v.label)
          ? { idleSec, vaultIdleCpuMsPerSec: idleVault.get(s.v.label)!, ...afterIdle.get(s.v.label)! }
          : undefined,
      })),
      failures: failed,
    }
  } finally {
    for (const s of setups) await tearDown(s)
  }
}

/** Stops a latency setup's provider and closes its timing proxies. */
async function tearDown(s: LatencySetup): Promise<void> {
  await s.p.stop()
  for (const px of s.proxies) await px.close()
}

/**
 * Before any variant is measured, a throwaway process of the first variant runs as many Mounts
 * as a warm-up, through its own timing proxies, and stops. Without it the first variant met a
 * slower OpenBao than the others (Vault p50 5.8–7.3 ms against 5.0–5.8 ms in three runs of
 * 2026-12-01) and paid for it in CPU per Mount, whatever build ran first (the same build measured
 * first and third: 5.43 against 4.03 ms per Mount at concurrency 1).
 */
async function prime(ctx: Context, v: Variant | undefined, count: number): Promise<void> {
  if (v === undefined || count === 0) return
  ctx.log(`latency: priming OpenBao with ${count} unmeasured Mounts of a throwaway ${v.label}`)
  const s = await setUpLatency(ctx, v, 'priming')
  try {
    await podMounts(ctx, s, LATENCY_PODS, count)
  } finally {
    await tearDown(s)
  }
}

/**
 * Unmeasured Mounts at concurrency 8, the same number for every variant. Without them the first
 * level (concurrency 1) would carry our JIT warm-up: on Node 20 CPU per Mount falls from ~13 ms
 * over the first 50 Mounts to ~6 ms up to Mount 300 and ~3.5 ms after, while a Go binary is at its
 * steady cost from the first Mount. Their CPU per Mount is reported, so the warm-up is not hidden.
 */
async function warmUp(ctx: Context, s: LatencySetup, count: number): Promise<void> {
  if (count === 0) return
  ctx.log(`latency: ${s.v.label}: ${count} warm-up Mounts at concurrency ${LATENCY_PODS}`)
  const { out, cpuMs } = await podMounts(ctx, s, LATENCY_PODS, count)
  const f = failures(out)
  s.warmup = { mounts: out.results.length, failed: f.count, cpuMsPerMount: cpuMs / Math.max(1, out.results.length) }
  if (f.count > 0) ctx.log(`latency: ${s.v.label}: ${f.count} warm-up Mounts failed: ${f.sample ?? ''}`)
}

/**
 * `count` Mounts over the first `c` pods at concurrency `c` (Mount i is pod i mod c's, so each pod
 * has one Mount at a time), with the CPU time the provider process spent meanwhile; with
 * `intervalMs`, Mount i starts no sooner than i × intervalMs after the first.
 */
async function podMounts(
  ctx: Context,
  s: LatencySetup,
  c: number,
  count: number,
  intervalMs = 0,
): Promise<{ out: ManyOutput; cpuMs: number; vaultCpuMs: number; machineBusy: number }> {
  const calls: ManyCall[] = Array.from({ length: count }, (_, i) => ({
    target: s.targets[i % c]!,
    attributes: s.attrs[i % c]!,
  }))
  const baoPid = ctx.world.bao.pid
  const [cpuBefore, baoBefore, machineBefore] = await Promise.all([s.p.cpuMs(), processCpuMs(baoPid), machineCpu()])
  const out = await mountMany(s.p.socketDir, calls, c, ctx.dir, { intervalMs })
  const [cpuAfter, baoAfter, machineAfter] = await Promise.all([s.p.cpuMs(), processCpuMs(baoPid), machineCpu()])
  return {
    out,
    cpuMs: cpuAfter - cpuBefore,
    vaultCpuMs: baoAfter - baoBefore,
    machineBusy: (machineAfter.busyMs - machineBefore.busyMs) / (machineAfter.allMs - machineBefore.allMs),
  }
}

/** `count` Mounts of one variant at concurrency `c` in one block (paced by `intervalMs`), summarised. */
async function latencyLevel(
  ctx: Context,
  s: LatencySetup,
  c: number,
  count: number,
  intervalMs = 0,
): Promise<LatencyLevel> {
  for (const px of s.proxies) px.calls.length = 0
  const kubeFrom = ctx.world.kubeTls.calls.length
  const { out, cpuMs, vaultCpuMs, machineBusy } = await podMounts(ctx, s, c, count, intervalMs)
  const allVaultCalls = s.proxies.reduce((a, px) => a + px.calls.length, 0)
  const kubeCalls = ctx.world.kubeTls.calls.slice(kubeFrom)
  const mountMs: number[] = []
  const vaultMs: number[] = []
  const overMs: number[] = []
  let vaultCalls = 0
  let kubeTotal = 0
  for (const r of out.results) {
    if (!r.ok) continue
    const from = r.rpcStartUnixMs
    const to = from + r.rpcMs
    const px = s.proxies[r.index % c]!
    const inside = px.calls.filter((y) => y.endMs > from && y.startMs < to)
    vaultCalls += inside.length
    const vms = busyMs(inside, from, to)
    mountMs.push(r.rpcMs)
    vaultMs.push(vms)
    overMs.push(r.rpcMs - vms)
    kubeTotal += busyMs(kubeCalls, from, to)
  }
  const f = failures(out)
  const mounts = out.results.length
  const okN = mountMs.length
  return {
    concurrency: c,
    mounts,
    failed: f.count,
    sampleError: f.sample,
    mountP50Ms: percentile(mountMs, 50),
    mountP99Ms: percentile(mountMs, 99),
    vaultP50Ms: percentile(vaultMs, 50),
    vaultP99Ms: percentile(vaultMs, 99),
    overheadP50Ms: percentile(overMs, 50),
    overheadP99Ms: percentile(overMs, 99),
    kubeMeanMs: okN > 0 ? kubeTotal / okN : NaN,
    vaultCallsPerMount: okN > 0 ? vaultCalls / okN : NaN,
    vaultRequests: allVaultCalls,
    mountsPerSec: mounts / (out.wallMs / 1000),
    cpuMsPerMount: mounts > 0 ? cpuMs / mounts : NaN,
    cpuMsPerVaultRequest: allVaultCalls > 0 ? cpuMs / allVaultCalls : NaN,
    vaultCpuMsPerMount: mounts > 0 ? vaultCpuMs / mounts : NaN,
    machineBusy,
  }
}

// ------------------------------------------------------------------ 4. footprint
export interface FootprintResult {
  variant: string
  startupMs: number
  /** Spawn → the first Version call answered (made as soon as the socket accepted). */
  firstAnswerMs: number
  idleRssKiB: number
  /** VmRSS after --settle seconds of idleness: once V8's memory reducer has run (it starts 8 s after the last GC). */
  settledRssKiB: number
  /** RssAnon / RssFile at the settled reading (ProcessMemory). */
  settledAnonKiB: number
  settledFileKiB: number
  /**
   * CPU time of the process per second between the idle reading (2 s) and the settled one, before
   * any Mount: what the provider costs a node when nothing happens (timers, samplers, GC). NaN
   * when the settle time leaves no window.
   */
  idleCpuMsPerSec: number
  peakRssKiB: number
  afterStormRssKiB: number
  storm: StormResult
}

/**
 * Idle RSS is read twice: 2 s after serving, and `settleMs` after (--settle). At 2 s a Node
 * process still holds the garbage of loading its modules: V8's memory reducer collects it once
 * the heap has been quiet for 8 s (--gc-memory-reducer-start-delay-ms). A DaemonSet pod is idle
 * for minutes between Mounts, so both figures are reported.
 */
export async function runFootprint(ctx: Context, v: Variant, pods: number, settleMs: number): Promise<FootprintResult> {
  const label = v.label
  let startupMs = NaN
  let firstAnswerMs = NaN
  let idleRssKiB = NaN
  let settledRssKiB = NaN
  let settledAnonKiB = NaN
  let settledFileKiB = NaN
  let idleCpuMsPerSec = NaN
  let peakRssKiB = NaN
  let afterStormRssKiB = NaN
  // The storm of this scenario runs inside its own provider start so that VmHWM covers it.
  const storm = await withProvider(ctx, v, 'footprint', async (p) => {
    startupMs = p.startupMs
    firstAnswerMs = p.firstAnswerMs
    await new Promise((r) => setTimeout(r, 2000))
    idleRssKiB = (await p.memory()).rssKiB
    const idleFrom = { cpuMs: await p.cpuMs(), at: performance.now() }
    await new Promise((r) => setTimeout(r, Math.max(0, settleMs - 2000)))
    const idleSec = (performance.now() - idleFrom.at) / 1000
    if (settleMs > 2000) idleCpuMsPerSec = ((await p.cpuMs()) - idleFrom.cpuMs) / idleSec
    const settled = await p.memory()
    settledRssKiB = settled.rssKiB
    settledAnonKiB = settled.anonKiB
    settledFileKiB = settled.fileKiB
    const podList = await makePods(ctx.dir, `footprint-${v.kind}-${Date.now()}`, pods, ctx.world.podJwt)
    const calls = podList.map((pod) => ({ target: pod.target, attributes: attributesFor(pod, BIG_KV) }))
    const before = await auditSize(ctx.world.auditFile)
    ctx.log(
      `footprint: ${label}: idle RSS ${(idleRssKiB / 1024).toFixed(1)} MiB at 2 s, ` +
        `${(settledRssKiB / 1024).toFixed(1)} MiB at ${settleMs / 1000} s; ${pods} pods x 10 files of 10 KiB at once`,
    )
    const out = await mountMany(p.socketDir, calls, pods, ctx.dir)
    const mem = await p.memory()
    peakRssKiB = mem.hwmKiB
    afterStormRssKiB = mem.rssKiB
    await settleAudit()
    const { counts } = await countAuditSince(ctx.world.auditFile, before)
    return stormResult(label, pods, out, counts, 0)
  })
  return {
    variant: label,
    startupMs,
    firstAnswerMs,
    idleRssKiB,
    settledRssKiB,
    settledAnonKiB,
    settledFileKiB,
    idleCpuMsPerSec,
    peakRssKiB,
    afterStormRssKiB,
    storm,
  }
}
