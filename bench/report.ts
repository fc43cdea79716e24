// results.md (raw figures, ratios against the reference, the issue's targets)
// and chart.svg (a hand-written SVG of small bar charts, one per figure).
import {
  FLOOR,
  isFloor,
  type ChurnResult,
  type Failed,
  type FootprintResult,
  type LatencyLevel,
  type LatencyResult,
  type StormResult,
} from './scenarios.js'
import { AFTER_IDLE_MOUNTS, PACED_INTERVAL_MS, PACED_MOUNTS, type BenchOptions } from './options.js'
import { perNode, projections, PROJECTION } from './economy.js'
import { median } from './stats.js'
import type { FleetResult } from './fleet.js'
import { renderUpgrade, type UpgradeResult } from './upgrade.js'

export interface ReferenceInfo {
  available: boolean
  module: string
  /** e.g. openbao-csi-provider */
  name?: string
  version?: string
  /** How it was built or installed. */
  how?: string
  /** Why it is missing, when it is. */
  reason?: string
}

export interface BenchResults {
  startedAt: string
  finishedAt: string
  options: BenchOptions
  environment: { node: string; openbao: string; cpus: number; host: string; commit: string; loadAvg: number[] }
  reference: ReferenceInfo
  storm: StormResult[]
  churn: ChurnResult[]
  latency: LatencyResult[]
  footprint: FootprintResult[]
  fleet: FleetResult[]
  /** The upgrade scenario (issue 40); absent in results of runs before it. */
  upgrade?: UpgradeResult[]
  failures: Failed[]
  /** Every start-up seen, per variant: spawn → the socket accepts (ms). */
  startups: Record<string, number[]>
  /** The same start-ups: spawn → the answer of a Version call made as soon as the socket accepted (ms). */
  firstAnswers: Record<string, number[]>
  /** What the harness faked, in words. */
  notes: string[]
}

const REF = 'reference'

/** Variants measured as ours, held to targets: not the reference, not a floor (FLOOR). */
function targeted(variant: string): boolean {
  return variant !== REF && !isFloor(variant)
}

/** The floor's footprint on the same Node as `variant` (the bench's, or the image's), if it ran. */
function floorFootprint(r: BenchResults, variant: string): FootprintResult | undefined {
  const onImage = (v: string): boolean => v.includes("image's Node")
  return r.footprint.find((f) => isFloor(f.variant) && onImage(f.variant) === onImage(variant))
}

function n(v: number | undefined, digits = 0): string {
  if (v === undefined || !Number.isFinite(v)) return 'n/a'
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

/** A share, e.g. 0.934 → "93 %"; "n/a" when not measured. */
function percent(share: number | undefined): string {
  return share === undefined || !Number.isFinite(share) ? 'n/a' : `${n(share * 100)} %`
}

function mib(kib: number): string {
  return n(kib / 1024, 1)
}

/**
 * A row of a block measured after a variant's levels (paced, after idle): variant, Mounts, failed,
 * the block's own `cells`, then its CPU per Mount against the variant's busy level at concurrency 1
 * and against the reference's block of the same kind.
 */
function blockRow(l: LatencyResult, a: LatencyLevel, ref: LatencyLevel | undefined, cells: string[]): string[] {
  return [
    l.variant,
    n(a.mounts),
    n(a.failed),
    ...cells,
    ratio(a.cpuMsPerMount, l.levels.find((x) => x.concurrency === 1)?.cpuMsPerMount),
    l.variant === REF ? '' : ratio(a.cpuMsPerMount, ref?.cpuMsPerMount),
  ]
}

/** ours / reference, e.g. "0.01×"; "n/a" without a reference figure. */
function ratio(ours: number, ref: number | undefined): string {
  if (ref === undefined || !Number.isFinite(ref) || !Number.isFinite(ours)) return 'n/a'
  if (ref === 0) return ours === 0 ? '1×' : '∞'
  const r = ours / ref
  return `${r < 0.1 ? r.toFixed(3) : r.toFixed(2)}×`
}

function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n')
}

function verdict(ok: boolean | undefined): string {
  return ok === undefined ? 'n/a' : ok ? 'met' : '**missed**'
}

/**
 * A verdict that also says when the floor, measured in the same run on the same Node, misses the
 * target itself: then no provider on these parts meets it on this machine.
 */
function verdictBeside(ok: boolean | undefined, floorOk: boolean | undefined): string {
  return ok === false && floorOk === false ? '**missed** (so does the floor)' : verdict(ok)
}

export function renderMarkdown(r: BenchResults): string {
  const out: string[] = []
  const o = r.options
  out.push(`# Benchmark: Vault economy, this provider vs the reference`)
  out.push('')
  out.push(
    `Run ${r.startedAt} → ${r.finishedAt} on ${r.environment.host} (${r.environment.cpus} CPUs), Node ${r.environment.node}, ${r.environment.openbao}, this repository at ${r.environment.commit}; load average at the end ${(r.environment.loadAvg ?? []).join(' / ')} (1 / 5 / 15 min: other work on the machine shows up in the times, not in the counts).`,
  )
  out.push(
    `Options: ${o.pods} pods, ${o.rounds} churn rounds, 1 simulated minute = ${o.minuteSec} s, ${o.latencyMounts} Mounts per latency level after ${o.latencyWarmup} warm-up Mounts per variant and ${Math.min(PACED_MOUNTS, o.latencyMounts)} paced at ${1000 / PACED_INTERVAL_MS}/s after them${o.latencyIdleSec > 0 ? `, then per variant ${o.latencyIdleSec} s idle and ${Math.min(AFTER_IDLE_MOUNTS, o.latencyMounts)} more` : ''}${o.vaultTls ? '; the latency scenario reaches Vault over HTTPS (--vault-tls)' : ''}${o.quick ? ' (--quick)' : ''}.`,
  )
  out.push(
    r.reference.available
      ? `Reference: **${r.reference.name ?? r.reference.module} ${r.reference.version ?? ''}**, built by \`${r.reference.how ?? 'unknown'}\`.`
      : `Reference: **not run** — ${(r.reference.reason ?? 'disabled').replace(/\s+/g, ' ').replace(/\.+$/, '')}. Ratios are "n/a".`,
  )
  out.push('')
  out.push('Counts are what OpenBao did, from its audit log. Times are milliseconds unless marked.')
  out.push('')

  if (r.failures.length > 0) {
    out.push('## Runs that failed')
    out.push('')
    out.push(
      table(
        ['variant', 'error'],
        r.failures.map((f) => [f.variant, f.error.replace(/\|/g, '\\|').replace(/\n/g, ' ').slice(0, 400)]),
      ),
    )
    out.push('')
  }

  const refStorm = r.storm.find((s) => s.variant === REF)
  if (r.storm.length > 0) {
    out.push('## 1. Rollout storm')
    out.push('')
    out.push(
      `${o.pods} pods of one service account mount the same SecretProviderClass of 5 KV objects at once, provider cold; ${o.repeat} cold run(s) per variant, variants in alternating order, the median by completion time shown (every run in the last column).`,
    )
    out.push('')
    out.push(
      table(
        [
          'variant',
          'Mounts ok',
          'failed',
          'logins',
          'KV reads',
          'other Vault req.',
          'HMAC Secret GETs',
          'all done (ms)',
          'Mount p50',
          'Mount max',
          'logins vs ref',
          'reads vs ref',
          'time vs ref',
          'all runs: ms (logins/reads)',
        ],
        r.storm.map((s) => [
          s.variant,
          n(s.ok),
          n(s.failed),
          n(s.counts.logins),
          n(s.counts.kvReads),
          n(s.counts.other + s.counts.errors + s.counts.loginFailures),
          n(s.hmacGets),
          n(s.wallMs),
          n(s.mountP50Ms, 1),
          n(s.mountMaxMs, 1),
          s.variant === REF ? '' : ratio(s.counts.logins, refStorm?.counts.logins),
          s.variant === REF ? '' : ratio(s.counts.kvReads, refStorm?.counts.kvReads),
          s.variant === REF ? '' : ratio(s.wallMs, refStorm?.wallMs),
          (s.runs ?? [])
            .map((x) => `${n(x.wallMs)} (${x.logins}/${x.kvReads}${x.failed > 0 ? `, ${x.failed} failed` : ''})`)
            .join(', '),
        ]),
      ),
    )
    const sample = r.storm.filter((s) => s.sampleError)
    for (const s of sample) out.push(`\n${s.variant}: first failure: \`${s.sampleError}\``)
    out.push('')
  }

  const refChurn = r.churn.find((c) => c.variant === REF)
  if (r.churn.length > 0) {
    out.push('## 2. Republish churn')
    out.push('')
    out.push(
      `${o.pods} pods, SecretProviderClass of 1 database credential (username + password from one lease, PostgreSQL), 1 PKI certificate (certificate + key, EC P-256) and 3 KV values; re-mounted ${o.rounds} times, one simulated minute (${o.minuteSec} s) apart.`,
    )
    out.push('')
    out.push(
      table(
        [
          'variant',
          'failed Mounts',
          'logins',
          'logins after round 1',
          'DB credentials',
          'certificates',
          'KV reads',
          'token renewals',
          'token revocations',
          'lease renewals',
          'lease revocations',
          'HMAC Secret GETs',
          'DB creds vs ref',
          'certs vs ref',
        ],
        r.churn.map((c) => [
          c.variant,
          n(c.failed),
          n(c.total.logins),
          n(c.loginsAfterFirstRound),
          n(c.total.dbCreds),
          n(c.total.certs),
          n(c.total.kvReads),
          n(c.total.tokenRenewals),
          n(c.total.tokenRevocations),
          n(c.total.leaseRenewals),
          n(c.total.leaseRevocations),
          n(c.hmacGets),
          c.variant === REF ? '' : ratio(c.total.dbCreds, refChurn?.total.dbCreds),
          c.variant === REF ? '' : ratio(c.total.certs, refChurn?.total.certs),
        ]),
      ),
    )
    out.push('')
    out.push('Per round (logins / DB credentials / certificates / KV reads, round time in ms, late start in ms):')
    out.push('')
    out.push(
      table(
        ['variant', ...Array.from({ length: o.rounds }, (_, i) => `r${i + 1}`)],
        r.churn.map((c) => [
          c.variant,
          ...c.rounds.map(
            (x) =>
              `${x.counts.logins}/${x.counts.dbCreds}/${x.counts.certs}/${x.counts.kvReads} (${n(x.wallMs)} ms${x.lateMs > 50 ? `, +${n(x.lateMs)}` : ''})`,
          ),
        ]),
      ),
    )
    for (const c of r.churn.filter((x) => x.sampleError))
      out.push(`\n${c.variant}: first failure: \`${c.sampleError}\``)
    out.push('')
  }

  const refLat = r.latency.find((l) => l.variant === REF)
  if (r.latency.length > 0) {
    out.push('## 3. Latency (warm)')
    out.push('')
    out.push(
      `One Mount of 5 KV objects, after ${o.latencyWarmup > 0 ? `${o.latencyWarmup} unmeasured warm-up Mounts per variant at concurrency 8 (their CPU in the second table: ours compiles its hot code in them)` : 'one warm-up Mount per pod'}; concurrency 1 (one pod) and 8 (eight pods, one Mount each at a time). Each variant runs its warm-up and both levels back to back, one variant after the other: these are the figures of a busy process (what idling costs is in the "After idle" table). Mount = the Mount RPC at the driver client; Vault = union of that Mount's Vault requests measured by a timing HTTP proxy in front of OpenBao (one proxy per pod, named by the pod's \`vaultAddress\`); overhead = Mount − Vault. "K8s API" is time inside the HMAC Secret GET during the Mount (part of the overhead). CPU = utime + stime of the provider process over the level's Mounts (/proc/<pid>/stat), per Mount and per Vault request. ${r.latency.some((l) => l.variant === FLOOR) ? `"${FLOOR}" is bench/floor-provider.ts: the same gRPC server library and .proto files, undici and yaml (and every other library the daemon loads at start), and none of a provider's own work (no validation, limits, caches but the pod's token and the parsed \`objects\`, retries, metrics or logs); its figures are what Node and these libraries cost here, and ours minus the floor is what the provider's own work costs. ` : ''}OpenBao CPU = the same for the OpenBao process, per Mount: what the provider's way of working costs Vault. Machine busy = share of all CPUs' time not idle during the level (/proc/stat), whoever used it: provider, OpenBao, the timing proxies and driver clients of the benchmark. Near 100 %, Mounts/s and the tail of the overhead are bound by the machine, not by the provider alone.`,
    )
    out.push('')
    const rows: string[][] = []
    for (const l of r.latency) {
      for (const lv of l.levels) {
        const ref = refLat?.levels.find((x) => x.concurrency === lv.concurrency)
        rows.push([
          l.variant,
          String(lv.concurrency),
          n(lv.mounts),
          n(lv.failed),
          n(lv.mountP50Ms, 2),
          n(lv.mountP99Ms, 2),
          n(lv.vaultP50Ms, 2),
          n(lv.overheadP50Ms, 2),
          n(lv.overheadP99Ms, 2),
          n(lv.kubeMeanMs, 2),
          n(lv.vaultCallsPerMount, 2),
          n(lv.mountsPerSec, 0),
          n(lv.cpuMsPerMount, 2),
          n(lv.cpuMsPerVaultRequest, 2),
          n(lv.vaultCpuMsPerMount, 2),
          percent(lv.machineBusy),
          l.variant === REF ? '' : ratio(lv.mountP50Ms, ref?.mountP50Ms),
          l.variant === REF ? '' : ratio(lv.cpuMsPerMount, ref?.cpuMsPerMount),
        ])
      }
    }
    out.push(
      table(
        [
          'variant',
          'concurrency',
          'Mounts',
          'failed',
          'Mount p50',
          'Mount p99',
          'Vault p50',
          'overhead p50',
          'overhead p99',
          'K8s API mean',
          'Vault req./Mount',
          'Mounts/s',
          'CPU ms/Mount',
          'CPU ms/Vault req.',
          'OpenBao CPU ms/Mount',
          'machine busy',
          'p50 vs ref',
          'CPU vs ref',
        ],
        rows,
      ),
    )
    out.push('')
    if (r.latency.some((l) => l.warmup.mounts > 0)) {
      out.push(
        'Warm-up: the unmeasured Mounts before the levels, from a provider that had served one Mount per pod. CPU as above.',
      )
      out.push('')
      out.push(
        table(
          ['variant', 'warm-up Mounts', 'failed', 'CPU ms/Mount', 'CPU vs ref'],
          r.latency.map((l) => [
            l.variant,
            n(l.warmup.mounts),
            n(l.warmup.failed),
            n(l.warmup.cpuMsPerMount, 2),
            l.variant === REF ? '' : ratio(l.warmup.cpuMsPerMount, refLat?.warmup.cpuMsPerMount),
          ]),
        ),
      )
      out.push('')
    }
    const paced = r.latency.filter((l) => l.paced)
    if (paced.length > 0) {
      const p0 = paced[0]!.paced!
      out.push(
        `Paced: right after its levels, each variant ran ${n(p0.mounts)} Mounts at concurrency 1, one every ${n(p0.intervalMs)} ms (${n(1000 / p0.intervalMs, 0)} Mounts/s, the reference's own pace), so CPU per Mount is compared at the same rate and on a machine that is mostly idle. At full speed ours runs many times as many Mounts per second as the reference, on a machine 80–98 % busy, where the same work costs more CPU time. "vs busy" compares with the busy level at concurrency 1 above.`,
      )
      out.push('')
      const refPaced = refLat?.paced
      out.push(
        table(
          [
            'variant',
            'Mounts',
            'failed',
            'Mounts/s',
            'Mount p50',
            'overhead p50',
            'CPU ms/Mount',
            'OpenBao CPU ms/Mount',
            'machine busy',
            'CPU vs busy',
            'CPU vs ref',
          ],
          paced.map((l) => {
            const a = l.paced!
            return blockRow(l, a, refPaced, [
              n(a.mountsPerSec, 1),
              n(a.mountP50Ms, 2),
              n(a.overheadP50Ms, 2),
              n(a.cpuMsPerMount, 2),
              n(a.vaultCpuMsPerMount, 2),
              percent(a.machineBusy),
            ])
          }),
        ),
      )
      out.push('')
    }
    const idled = r.latency.filter((l) => l.afterIdle)
    if (idled.length > 0) {
      const background = median(idled.map((l) => l.afterIdle!.vaultIdleCpuMsPerSec))
      out.push(
        `OpenBao's own background work: ${n(background, 1)} ms of CPU per second while nothing ran (median over the idle spells below). Every level's OpenBao CPU per Mount above includes it, the more the fewer Mounts per second: at 5 Mounts/s, ${n(background / 5, 1)} ms per Mount.`,
      )
      out.push('')
      out.push(
        `After idle: right after each variant's own levels, nothing ran for ${idled[0]!.afterIdle!.idleSec} s and then the variant ran ${n(idled[0]!.afterIdle!.mounts)} Mounts at concurrency 1 (so every variant's process had idled exactly that long). A node's provider waits minutes between pods, so its Mounts are mostly of this kind. "vs busy" compares with the busy level at concurrency 1 above.`,
      )
      out.push('')
      const refIdle = refLat?.afterIdle
      out.push(
        table(
          ['variant', 'Mounts', 'failed', 'Mount p50', 'overhead p50', 'CPU ms/Mount', 'CPU vs busy', 'CPU vs ref'],
          idled.map((l) => {
            const a = l.afterIdle!
            return blockRow(l, a, refIdle, [n(a.mountP50Ms, 2), n(a.overheadP50Ms, 2), n(a.cpuMsPerMount, 2)])
          }),
        ),
      )
      out.push('')
    }
  }

  const refFoot = r.footprint.find((f) => f.variant === REF)
  if (r.footprint.length > 0) {
    out.push('## 4. Footprint')
    out.push('')
    out.push(
      `Idle RSS (VmRSS 2 s after the socket serves, and settled: ${r.options.settleSec} s after, once V8's memory reducer has collected the garbage of start-up), peak RSS (VmHWM) after ${o.pods} pods mounted 10 files of 10 KiB each at once, start-up = process spawn to the socket accepting connections, and to the answer of a Version call made as soon as it accepts (what the driver's first call after a restart waits for; all start-ups of the run: median / max). The settled RSS split in two (RssAnon / RssFile): anonymous pages (heap, stacks, compiled code) are the process's own; file-backed ones are mostly its executable's code, shared by every process that maps the same file and dropped by the kernel under memory pressure (they are clean). A Node binary is large, so much of the difference to a Go binary is there. CPU while idle: CPU time of the process per second between the two idle readings, before any Mount (timers, samplers, garbage collection): what the provider costs a node when nothing happens.${r.footprint.some((f) => isFloor(f.variant)) ? ` "${FLOOR}" is the latency scenario's floor (bench/floor-provider.ts) through the same start-ups and storm, built as ours is (one esbuild bundle with its source map, loading at start every library the daemon's bundle loads) and run with the same Node flags: the least a provider on Node with these libraries holds, and the soonest it serves; the budget's memory rows are ratios to it on the same Node.` : ''}`,
    )
    out.push('')
    out.push(
      table(
        [
          'variant',
          'idle RSS at 2 s (MiB)',
          `idle RSS settled, ${r.options.settleSec} s (MiB)`,
          'of which anon / file-backed (MiB)',
          'peak RSS (MiB)',
          'RSS after storm (MiB)',
          'start-up (ms)',
          'start-ups median / max (ms)',
          'first Version answered, median / max (ms)',
          'storm Mounts ok',
          'storm all done (ms)',
          'settled idle vs ref',
          'peak vs ref',
          'start-up vs ref',
          'CPU while idle (ms/s)',
          'idle CPU vs ref',
        ],
        r.footprint.map((f) => {
          const all = r.startups[f.variant] ?? []
          const med = median(all)
          const answers = r.firstAnswers[f.variant] ?? []
          return [
            f.variant,
            mib(f.idleRssKiB),
            mib(f.settledRssKiB),
            `${mib(f.settledAnonKiB)} / ${mib(f.settledFileKiB)}`,
            mib(f.peakRssKiB),
            mib(f.afterStormRssKiB),
            n(f.startupMs, 0),
            `${n(med, 0)} / ${n(all.length > 0 ? Math.max(...all) : NaN, 0)}`,
            `${n(median(answers), 0)} / ${n(answers.length > 0 ? Math.max(...answers) : NaN, 0)}`,
            n(f.storm.ok),
            n(f.storm.wallMs),
            f.variant === REF ? '' : ratio(f.settledRssKiB, refFoot?.settledRssKiB),
            f.variant === REF ? '' : ratio(f.peakRssKiB, refFoot?.peakRssKiB),
            f.variant === REF ? '' : ratio(f.startupMs, refFoot?.startupMs),
            n(f.idleCpuMsPerSec, 2),
            // /proc counts CPU in clock ticks (10 ms): a reference idle for a whole window may show none.
            f.variant === REF
              ? ''
              : refFoot?.idleCpuMsPerSec === 0
                ? 'n/a (reference under one clock tick)'
                : ratio(f.idleCpuMsPerSec, refFoot?.idleCpuMsPerSec),
          ]
        }),
      ),
    )
    out.push('')
  }

  if (r.fleet.length > 0) out.push(...renderFleet(r))
  out.push(...renderUpgrade(r.upgrade ?? []))

  out.push('## Budget of issue 36')
  out.push('')
  out.push(
    `Each figure against the reference or the floor measured in this run, on the same Node (the bench's, ${r.environment.node}, and the image's where its rows ran). The machine is shared: times are noisy, ratios within one run are what counts. The Vault economy is held to the counts of bench/results/sample-2026-12-03.md, the run before issue 36.`,
  )
  out.push('')
  out.push(table(['target', 'variant', 'measured', 'verdict'], budgetRows(r)))
  out.push('')
  out.push('## Earlier targets (issues 3 and 12)')
  out.push('')
  out.push("Those issue 36's budget leaves standing: its rows above replace their CPU, memory and start-up bounds.")
  out.push('')
  out.push(table(['target', 'variant', 'measured', 'verdict'], earlierTargets(r)))
  out.push('')
  out.push('## How it was measured')
  out.push('')
  for (const note of r.notes) out.push(`- ${note}`)
  out.push('')
  return out.join('\n')
}

function renderFleet(r: BenchResults): string[] {
  const out: string[] = []
  const f0 = r.fleet[0]!
  out.push('## 5. Fleet')
  out.push('')
  out.push(
    `${f0.nodes} provider processes as ${f0.nodes} nodes, ${f0.podsPerNode} pods each (${f0.nodes * f0.podsPerNode} pods) mounting ${f0.objectsPerPod} objects (5 KV values, a database credential's username and password) against one OpenBao; the nodes' pods start node by node over ${f0.spreadSec} s (node i at ${f0.spreadSec} s × i / ${f0.nodes}), all pods of a node at once. Counts from its audit log; the busiest second from the audit entries' timestamps.`,
  )
  out.push('')
  out.push(
    table(
      [
        'variant',
        'Mounts ok',
        'failed',
        'Vault requests',
        'per pod',
        'busiest second (req/s)',
        'seconds with requests',
        'logins',
        'KV reads',
        'DB credentials',
        'tokens held',
        'leases held',
        'HMAC Secret GETs',
        'all pods done (ms)',
        'node done p50 / max (ms)',
        'requests vs ref',
      ],
      r.fleet.map((f) => {
        const ref = r.fleet.find((x) => x.variant === REF)
        return [
          f.variant,
          n(f.ok),
          n(f.failed),
          n(f.requests),
          n(f.requests / (f.nodes * f.podsPerNode), 2),
          n(f.peakPerSec),
          n(f.activeSeconds),
          n(f.counts.logins),
          n(f.counts.kvReads),
          n(f.counts.dbCreds),
          n(f.tokensHeld),
          n(f.leasesHeld),
          n(f.hmacGets),
          n(f.allDoneMs),
          `${n(f.nodeDoneP50Ms)} / ${n(f.nodeDoneMaxMs)}`,
          f.variant === REF ? '' : ratio(f.requests, ref?.requests),
        ]
      }),
    ),
  )
  for (const f of r.fleet.filter((x) => x.sampleError)) out.push(`\n${f.variant}: first failure: \`${f.sampleError}\``)
  out.push('')
  const rows = projections(r.fleet)
  if (rows.length > 0) {
    out.push('### What a cluster costs Vault (projection from the per-node figures above)')
    out.push('')
    out.push(
      `Assumptions: every node like the measured ones (${f0.podsPerNode} pods per node, the same SecretProviderClass, each provider with its own cache and tokens, so a cluster of n nodes costs n × one node); a full-cluster rollout (every pod re-created) spread evenly over ${PROJECTION.spreadsSec.map((s) => `${s / 60} min`).join(' or ')}; tokens live for the auth role's TTL (1 h here) and database leases for the engine's TTL (1 h here), so "held" is what Vault tracks right after the rollout; Vault's lease count is tokens + leases. Per node: ${r.fleet
        .filter((f) => f.failed === 0)
        .map((f) => {
          const p = perNode(f)
          return `${f.variant} ${n(p.requests, 1)} requests, ${n(p.logins, 1)} logins, ${n(p.tokensHeld, 1)} tokens, ${n(p.leasesHeld, 1)} leases`
        })
        .join('; ')}. Recompute: bench/economy.ts (\`project\`).`,
    )
    out.push('')
    out.push(
      table(
        [
          'variant',
          'nodes',
          'Vault requests',
          ...PROJECTION.spreadsSec.map((s) => `req/s over ${s / 60} min`),
          'logins',
          'tokens held',
          'leases held',
        ],
        rows.map((x) => [
          x.variant,
          n(x.nodes),
          n(x.requests),
          ...x.requestsPerSec.map((v) => n(v, 0)),
          n(x.logins),
          n(x.tokensHeld),
          n(x.leasesHeld),
        ]),
      ),
    )
    out.push('')
  }
  return out
}

/** The budget of issue 36: ratios to the reference and to the floor measured in the same run. */
export const BUDGET = {
  /** CPU per warm Mount of 5 KV objects, at concurrency 1 and 8, against the reference's. */
  cpuVsReference: 0.8,
  /** Settled idle RSS against the floor's on the same Node. */
  idleVsFloor: 1.15,
  /** The storm's peak RSS (VmHWM) against the floor's on the same Node. */
  peakVsFloor: 1.25,
  /** Spawn → the first Version call answered, median of the run's start-ups. */
  firstAnswerMs: 300,
} as const

const isBaseline = (v: string): boolean => v.startsWith('ours@')

function level(l: LatencyResult | undefined, c: number): LatencyLevel | undefined {
  return l?.levels.find((x) => x.concurrency === c)
}

/** A figure beside another of the run, with their ratio: "1.48 vs 1.20 ms (1.23×)". */
function against(ours: number, other: number | undefined, digits: number, unit: string): string {
  return other === undefined || !Number.isFinite(other)
    ? `${n(ours, digits)} ${unit}`
    : `${n(ours, digits)} vs ${n(other, digits)} ${unit} (${ratio(ours, other)})`
}

/**
 * The Vault economy as issue 36 found it (bench/results/sample-2026-12-03.md), as functions of the
 * run's pods, rounds and nodes: counts that a change of the runtime must leave as they were. Reads
 * that concurrent Mounts share in the serviceaccount scope depend on timing, so they are shown, not judged.
 */
function economyRows(r: BenchResults): string[][] {
  const { pods, rounds, nodes } = r.options
  const rows: string[][] = []
  const row = (what: string, variant: string, measured: Record<string, number>, before: Record<string, number>) => {
    const changed = Object.keys(before).filter((k) => measured[k] !== before[k])
    const text = Object.entries(measured)
      .map(([k, v]) => (k in before && v !== before[k] ? `${k} ${n(v)} (before ${n(before[k])})` : `${k} ${n(v)}`))
      .join(', ')
    rows.push([`${what}: the Vault economy unchanged`, variant, text, changed.length === 0 ? 'met' : '**missed**'])
  }
  for (const s of r.storm.filter((x) => targeted(x.variant))) {
    const pod = s.variant.includes('(pod')
    row(
      `storm (${pods} pods, the median run)`,
      s.variant,
      { 'failed Mounts': s.failed, logins: s.counts.logins, 'KV reads': s.counts.kvReads },
      { 'failed Mounts': 0, logins: pod ? pods : 1, ...(pod ? { 'KV reads': 5 * pods } : {}) },
    )
  }
  for (const c of r.churn.filter((x) => targeted(x.variant))) {
    const pod = c.variant.includes('(pod')
    row(
      `churn (${pods} pods, ${rounds} rounds)`,
      c.variant,
      {
        'failed Mounts': c.failed,
        logins: c.total.logins,
        'logins after round 1': c.loginsAfterFirstRound,
        'DB credentials': c.total.dbCreds,
        certificates: c.total.certs,
        'KV reads': c.total.kvReads,
      },
      {
        'failed Mounts': 0,
        logins: pod ? pods : 1,
        'logins after round 1': 0,
        'DB credentials': pods,
        certificates: pods,
        ...(pod ? { 'KV reads': 3 * pods * rounds } : {}),
      },
    )
  }
  for (const f of r.fleet.filter((x) => targeted(x.variant))) {
    const all = f.nodes * f.podsPerNode
    const pod = f.variant.includes('(pod')
    row(
      `fleet (${nodes} nodes × ${pods} pods)`,
      f.variant,
      {
        'failed Mounts': f.failed,
        'Vault requests': f.requests,
        logins: f.counts.logins,
        'KV reads': f.counts.kvReads,
        'DB credentials': f.counts.dbCreds,
        'tokens held': f.tokensHeld,
        'leases held': f.leasesHeld,
      },
      {
        'failed Mounts': 0,
        logins: pod ? all : f.nodes,
        'DB credentials': all,
        'tokens held': pod ? all : f.nodes,
        'leases held': all,
        ...(pod ? { 'Vault requests': 7 * all, 'KV reads': 5 * all } : {}),
      },
    )
  }
  return rows
}

/** Issue 36's budget, one row per figure and variant of ours; baselines are shown, not judged. */
function budgetRows(r: BenchResults): string[][] {
  const rows: string[][] = []
  const refLat = r.latency.find((l) => l.variant === REF)
  const floorLat = r.latency.find((l) => l.variant === FLOOR)
  for (const l of r.latency.filter((x) => targeted(x.variant))) {
    for (const c of [1, 8]) {
      const lv = level(l, c)
      const ref = level(refLat, c)
      if (!lv) continue
      const floor = level(floorLat, c)
      rows.push([
        `CPU per warm Mount (5 KV) at concurrency ${c} ≤ ${BUDGET.cpuVsReference}× the reference`,
        l.variant,
        against(lv.cpuMsPerMount, ref?.cpuMsPerMount, 2, 'ms') +
          (floor
            ? `; floor ${n(floor.cpuMsPerMount, 2)} ms, ours − floor ${n(lv.cpuMsPerMount - floor.cpuMsPerMount, 2)} ms`
            : '') +
          (c === 1 && l.paced && refLat?.paced
            ? `; paced at ${n(1000 / l.paced.intervalMs)}/s ${against(l.paced.cpuMsPerMount, refLat.paced.cpuMsPerMount, 2, 'ms')}`
            : ''),
        isBaseline(l.variant)
          ? 'baseline'
          : verdict(ref && lv.failed === 0 ? lv.cpuMsPerMount <= BUDGET.cpuVsReference * ref.cpuMsPerMount : undefined),
      ])
    }
  }
  for (const f of r.footprint.filter((x) => targeted(x.variant))) {
    const floor = floorFootprint(r, f.variant)
    const judge = (ok: boolean): string => (isBaseline(f.variant) ? 'baseline' : verdict(floor ? ok : undefined))
    rows.push([
      `idle RSS (settled, ${r.options.settleSec} s after start) ≤ ${BUDGET.idleVsFloor}× the floor on the same Node`,
      f.variant,
      `${against(f.settledRssKiB / 1024, floor && floor.settledRssKiB / 1024, 1, 'MiB')}; anon ${mib(f.settledAnonKiB)}` +
        (floor ? ` vs ${mib(floor.settledAnonKiB)}` : '') +
        ` MiB; at 2 s ${against(f.idleRssKiB / 1024, floor && floor.idleRssKiB / 1024, 1, 'MiB')}`,
      judge(floor !== undefined && f.settledRssKiB <= BUDGET.idleVsFloor * floor.settledRssKiB),
    ])
    rows.push([
      `storm peak RSS (${r.options.pods} pods × 10 files of 10 KiB) ≤ ${BUDGET.peakVsFloor}× the floor on the same Node`,
      f.variant,
      against(f.peakRssKiB / 1024, floor && floor.peakRssKiB / 1024, 1, 'MiB'),
      judge(floor !== undefined && f.storm.failed === 0 && f.peakRssKiB <= BUDGET.peakVsFloor * floor.peakRssKiB),
    ])
    const answers = r.firstAnswers[f.variant] ?? [f.firstAnswerMs]
    const med = median(answers)
    const floorAnswer = floor ? median(r.firstAnswers[floor.variant] ?? [floor.firstAnswerMs]) : undefined
    rows.push([
      `spawn → first Version answer ≤ ${BUDGET.firstAnswerMs} ms (median of the run’s start-ups)`,
      f.variant,
      `${n(med)} ms over ${answers.length} start-up(s), max ${n(Math.max(...answers))} ms` +
        (floorAnswer === undefined ? '' : `; floor ${n(floorAnswer)} ms`) +
        (r.firstAnswers[REF] ? `; reference ${n(median(r.firstAnswers[REF]))} ms` : ''),
      isBaseline(f.variant) ? 'baseline' : verdict(med <= BUDGET.firstAnswerMs),
    ])
  }
  rows.push(...economyRows(r))
  return rows
}

/** The largest figure over a storm variant's runs (targets hold for every run). */
function worst(s: StormResult, k: 'logins' | 'kvReads' | 'failed'): number {
  const runs = s.runs ?? [{ wallMs: s.wallMs, logins: s.counts.logins, kvReads: s.counts.kvReads, failed: s.failed }]
  return Math.max(...runs.map((x) => x[k]))
}

/**
 * The targets of issues 3 and 12 that issue 36's budget does not replace (it replaced their CPU,
 * memory and start-up bounds): the storm and churn, the latency's overhead and p50, the CPU after
 * idling and Mounts/s against the baseline.
 */
function earlierTargets(r: BenchResults): string[][] {
  const rows: string[][] = []
  const pods = r.options.pods
  const ref = r.storm.find((s) => s.variant === REF)
  for (const s of r.storm.filter((x) => targeted(x.variant))) {
    if (s.variant.includes('serviceaccount')) {
      rows.push([
        'issue 3: storm ≤ 1 login, ≤ 5 KV reads (every run)',
        s.variant,
        `${worst(s, 'logins')} logins, ${worst(s, 'kvReads')} reads at most over ${s.runs?.length ?? 1} run(s) (${worst(s, 'failed')} failed Mounts)`,
        verdict(worst(s, 'failed') === 0 && worst(s, 'logins') <= 1 && worst(s, 'kvReads') <= 5),
      ])
    } else {
      rows.push([
        `issue 3: storm ${pods} logins, no more KV reads than the reference (every run)`,
        s.variant,
        `${worst(s, 'logins')} logins, ${worst(s, 'kvReads')} reads at most${ref ? ` (reference ${ref.counts.logins} / ${ref.counts.kvReads})` : ''}`,
        verdict(
          worst(s, 'failed') === 0 &&
            worst(s, 'logins') <= pods &&
            worst(s, 'kvReads') <= (ref ? ref.counts.kvReads : 5 * pods),
        ),
      ])
    }
    const times = s.variant.includes('serviceaccount') ? 10 : 2
    rows.push([
      `issue 3: storm done ≥ ${times}× sooner than the reference`,
      s.variant,
      ref ? `${n(s.wallMs)} vs ${n(ref.wallMs)} ms (${n(ref.wallMs / s.wallMs, 1)}×)` : 'no reference',
      verdict(ref ? ref.wallMs / s.wallMs >= times : undefined),
    ])
  }
  for (const c of r.churn.filter((x) => targeted(x.variant))) {
    rows.push([
      `issue 3: churn ${pods} DB credentials, ${pods} certificates, no login after round 1`,
      c.variant,
      `${c.total.dbCreds} DB credentials, ${c.total.certs} certificates, ${c.loginsAfterFirstRound} logins after round 1 (${c.failed} failed Mounts)`,
      verdict(c.failed === 0 && c.total.dbCreds <= pods && c.total.certs <= pods && c.loginsAfterFirstRound === 0),
    ])
  }
  const refLat = r.latency.find((l) => l.variant === REF)
  const floorLat = r.latency.find((l) => l.variant === FLOOR)
  const baselines = r.latency.filter((x) => isBaseline(x.variant))
  for (const l of r.latency.filter((x) => targeted(x.variant) && !isBaseline(x.variant))) {
    const c1 = level(l, 1)
    const c8 = level(l, 8)
    const r1 = level(refLat, 1)
    if (c1) {
      rows.push([
        'issue 3: Mount p50 at concurrency 1 ≤ 1.2× the reference',
        l.variant,
        against(c1.mountP50Ms, r1?.mountP50Ms, 2, 'ms'),
        verdict(r1 ? c1.mountP50Ms <= 1.2 * r1.mountP50Ms : undefined),
      ])
      rows.push([
        'issue 12: provider overhead p50 ≤ 1 ms at concurrency 1',
        l.variant,
        `${n(c1.overheadP50Ms, 2)} ms${floorLat ? `; floor ${n(level(floorLat, 1)?.overheadP50Ms, 2)} ms` : ''}`,
        verdictBeside(
          c1.failed === 0 ? c1.overheadP50Ms <= 1 : false,
          floorLat && level(floorLat, 1) ? level(floorLat, 1)!.overheadP50Ms <= 1 : undefined,
        ),
      ])
    }
    if (c8) {
      rows.push([
        'issue 12: provider overhead p99 ≤ 10 ms at concurrency 8 (issue 3: < 5 ms)',
        l.variant,
        `${n(c8.overheadP99Ms, 2)} ms${floorLat ? `; floor ${n(level(floorLat, 8)?.overheadP99Ms, 2)} ms` : ''}`,
        verdictBeside(
          c8.failed === 0 ? c8.overheadP99Ms <= 10 : false,
          floorLat && level(floorLat, 8) ? level(floorLat, 8)!.overheadP99Ms <= 10 : undefined,
        ),
      ])
    }
    const a = l.afterIdle
    if (a) {
      const refA = refLat?.afterIdle
      rows.push([
        `issue 12: CPU per Mount after ${n(a.idleSec)} s idle (${n(a.mounts)} Mounts at concurrency 1) ≤ 1.0× the reference`,
        l.variant,
        against(a.cpuMsPerMount, refA?.cpuMsPerMount, 2, 'ms'),
        verdict(refA ? a.cpuMsPerMount <= refA.cpuMsPerMount : undefined),
      ])
    }
    if (c8) {
      for (const b of baselines) {
        const b8 = level(b, 8)
        rows.push([
          `issue 12: warm Mounts/s at concurrency 8 ≥ 2× ${b.variant}`,
          l.variant,
          `${against(c8.mountsPerSec, b8?.mountsPerSec, 0, 'Mounts/s')}; machine busy ${percent(c8.machineBusy)} vs ${percent(b8?.machineBusy)}`,
          verdict(b8 && c8.failed === 0 ? c8.mountsPerSec >= 2 * b8.mountsPerSec : undefined),
        ])
      }
    }
  }
  return rows
}

// ------------------------------------------------------------------ chart
interface Panel {
  title: string
  unit: string
  values: Array<{ variant: string; value: number }>
}

const COLORS = ['#2b6cb0', '#38a169', '#d69e2e', '#c53030', '#6b46c1']

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

function tail(s: string, max: number): string {
  return s.length <= max ? s : `…${s.slice(s.length - max + 1)}`
}

function fmt(v: number): string {
  if (!Number.isFinite(v)) return 'n/a'
  if (Number.isInteger(v) || Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US')
  if (Math.abs(v) >= 10) return v.toFixed(1)
  return v.toFixed(2)
}

function panels(r: BenchResults): Panel[] {
  const p: Panel[] = []
  const add = (title: string, unit: string, values: Array<{ variant: string; value: number }>): void => {
    if (values.length > 0) p.push({ title, unit, values })
  }
  add(
    'Storm: logins',
    'logins',
    r.storm.map((s) => ({ variant: s.variant, value: s.counts.logins })),
  )
  add(
    'Storm: KV reads',
    'reads',
    r.storm.map((s) => ({ variant: s.variant, value: s.counts.kvReads })),
  )
  add(
    'Storm: all Mounts done',
    'ms',
    r.storm.map((s) => ({ variant: s.variant, value: s.wallMs })),
  )
  add(
    'Churn: DB credentials',
    'created',
    r.churn.map((c) => ({ variant: c.variant, value: c.total.dbCreds })),
  )
  add(
    'Churn: certificates',
    'issued',
    r.churn.map((c) => ({ variant: c.variant, value: c.total.certs })),
  )
  add(
    'Churn: logins after round 1',
    'logins',
    r.churn.map((c) => ({ variant: c.variant, value: c.loginsAfterFirstRound })),
  )
  const lvl = (
    c: number,
    f: (x: LatencyResult['levels'][number]) => number,
  ): Array<{ variant: string; value: number }> =>
    r.latency.flatMap((l) => {
      const x = l.levels.find((y) => y.concurrency === c)
      return x ? [{ variant: l.variant, value: f(x) }] : []
    })
  add(
    'Latency p50, concurrency 1',
    'ms',
    lvl(1, (x) => x.mountP50Ms),
  )
  add(
    'Latency p99, concurrency 8',
    'ms',
    lvl(8, (x) => x.mountP99Ms),
  )
  add(
    'Overhead p99, concurrency 8',
    'ms',
    lvl(8, (x) => x.overheadP99Ms),
  )
  add(
    'CPU per warm Mount, concurrency 1',
    'ms',
    lvl(1, (x) => x.cpuMsPerMount),
  )
  add(
    'Fleet: Vault requests',
    'requests',
    r.fleet.map((f) => ({ variant: f.variant, value: f.requests })),
  )
  add(
    'Idle RSS',
    'MiB',
    r.footprint.map((f) => ({ variant: f.variant, value: f.idleRssKiB / 1024 })),
  )
  add(
    'Peak RSS (storm, 10×10 KiB)',
    'MiB',
    r.footprint.map((f) => ({ variant: f.variant, value: f.peakRssKiB / 1024 })),
  )
  add(
    'Start-up to serving socket',
    'ms',
    r.footprint.map((f) => ({ variant: f.variant, value: f.startupMs })),
  )
  return p
}

export function renderSvg(r: BenchResults): string {
  const ps = panels(r)
  const variants = [...new Set(ps.flatMap((x) => x.values.map((v) => v.variant)))]
  const color = (v: string): string => COLORS[variants.indexOf(v) % COLORS.length]!
  const cols = 4
  const pw = 250
  const ph = 190
  const top = 70
  const rows = Math.max(1, Math.ceil(ps.length / cols))
  const width = cols * pw + 20
  const height = top + rows * ph + 20
  const s: string[] = []
  s.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
  )
  s.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`)
  s.push(
    `<text x="10" y="22" font-size="16" font-weight="bold">Vault economy benchmark (${esc(r.options.pods.toString())} pods, ${esc(r.startedAt.slice(0, 10))})</text>`,
  )
  variants.forEach((v, i) => {
    const x = 10 + i * 190
    s.push(`<rect x="${x}" y="34" width="12" height="12" fill="${color(v)}"/>`)
    s.push(`<text x="${x + 16}" y="45" font-size="12">${esc(v)}</text>`)
  })
  if (!r.reference.available) {
    s.push(
      `<text x="10" y="62" font-size="11" fill="#c53030">reference provider not run: ${esc(tail((r.reference.reason ?? '').replace(/\s+/g, ' '), 150))}</text>`,
    )
  }
  ps.forEach((panel, i) => {
    const px = 10 + (i % cols) * pw
    const py = top + Math.floor(i / cols) * ph
    const chartTop = py + 38
    const chartH = ph - 78
    const baseY = chartTop + chartH
    s.push(`<text x="${px + 4}" y="${py + 16}" font-size="12" font-weight="bold">${esc(panel.title)}</text>`)
    s.push(`<line x1="${px + 4}" y1="${baseY}" x2="${px + pw - 14}" y2="${baseY}" stroke="#888"/>`)
    const max = Math.max(...panel.values.map((v) => (Number.isFinite(v.value) ? v.value : 0)), 1e-9)
    const slot = (pw - 24) / Math.max(1, panel.values.length)
    const bw = Math.min(44, slot * 0.6)
    panel.values.forEach((v, j) => {
      const value = Number.isFinite(v.value) ? v.value : 0
      const h = Math.max(value > 0 ? 1 : 0, (value / max) * chartH)
      const bx = px + 8 + j * slot + (slot - bw) / 2
      s.push(
        `<rect x="${bx.toFixed(1)}" y="${(baseY - h).toFixed(1)}" width="${bw.toFixed(1)}" height="${h.toFixed(1)}" fill="${color(v.variant)}"><title>${esc(v.variant)}: ${esc(fmt(v.value))} ${esc(panel.unit)}</title></rect>`,
      )
      s.push(
        `<text x="${(bx + bw / 2).toFixed(1)}" y="${(baseY - h - 4).toFixed(1)}" font-size="11" text-anchor="middle">${esc(fmt(v.value))}</text>`,
      )
    })
    s.push(`<text x="${px + 4}" y="${baseY + 16}" font-size="10" fill="#555">${esc(panel.unit)}</text>`)
  })
  s.push('</svg>')
  return s.join('\n') + '\n'
}
