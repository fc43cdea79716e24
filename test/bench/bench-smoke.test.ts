// Keeps the benchmark harness (bench/) from rotting: a --quick run against our provider only,
// every scenario (the fleet with 2 nodes × 3 pods), a few pods. Asserts what the harness produced
// and counted, never timings.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { buildFloor } from '../../bench/build-floor.mjs'
import { runBench } from '../../bench/main.js'
import { PACED_INTERVAL_MS, parseOptions } from '../../bench/options.js'
import { BUDGET, renderMarkdown, type BenchResults } from '../../bench/report.js'
import { FLOOR, isFloor } from '../../bench/scenarios.js'
import { tempDirFor } from '../support/tmp.js'

// Two whole --quick benchmark runs: 2 minutes on a quiet machine, 5 under a loaded one (tap's 300 s per
// file stopped it there once): the file's time limit is a guard against a hang, not a bound.
t.setTimeout(15 * 60_000)

// The floor as bench/run.sh builds it, from the current bench/floor-provider.ts.
t.before(async () => {
  const { warnings } = await buildFloor()
  if (warnings.length > 0) throw new Error(`bench/build-floor.mjs: ${warnings.map((w) => w.text).join('; ')}`)
})

t.test('bench --quick --no-reference writes results with Vault counts', async (t) => {
  const out = await tempDirFor(t, 'vcp-bench-smoke-')
  const opts = parseOptions(
    [
      ...['--quick', '--no-reference', '--pods', '3', '--rounds', '2'],
      ...['--latency-mounts', '10', '--latency-warmup', '16', '--out', out],
      // A window between the idle readings at 2 s and at settling, for the CPU while idle.
      ...['--settle', '4'],
      // The image's-Node variant, on the Node running this test (bench/run.sh fetches the image's).
      ...['--image-node', process.execPath],
    ],
    out,
  )
  if (opts === 'help') throw new Error('unexpected help')
  const lines: string[] = []
  await runBench(opts, (m) => lines.push(m))

  for (const f of ['results.md', 'results.json', 'chart.svg']) t.ok(existsSync(`${out}/${f}`), `${f} written`)
  const r = JSON.parse(readFileSync(`${out}/results.json`, 'utf8')) as BenchResults
  t.equal(r.reference.available, false)
  t.equal(r.reference.reason, '--no-reference')

  const storm = r.storm.find((s) => s.variant === 'ours (pod)')
  t.ok(storm, `storm ran for ours (pod); failures: ${JSON.stringify(r.failures)}`)
  t.equal(storm?.ok, 3, 'every storm Mount succeeded')
  t.ok((storm?.counts.logins ?? 0) >= 1, 'logins counted from the audit log')
  t.ok((storm?.counts.kvReads ?? 0) >= 5, 'KV reads counted from the audit log')

  const churn = r.churn.find((c) => c.variant === 'ours (pod)')
  t.ok(churn, 'churn ran for ours (pod)')
  t.equal(churn?.rounds.length, 2)
  t.equal(churn?.failed, 0, churn?.sampleError ?? 'no failed Mount')
  t.ok((churn?.total.dbCreds ?? 0) >= 1, 'database credentials counted')
  t.ok((churn?.total.certs ?? 0) >= 1, 'certificates counted')

  const lat = r.latency.find((l) => l.variant === 'ours (pod)')
  t.same(
    lat?.levels.map((l) => [l.concurrency, l.mounts, l.failed]),
    [
      [1, 10, 0],
      [8, 10, 0],
    ],
  )
  t.ok((lat?.levels[0]?.vaultCallsPerMount ?? 0) > 0, 'Vault requests seen by the timing proxy')
  t.same([lat?.warmup.mounts, lat?.warmup.failed], [16, 0], 'the warm-up ran before the levels, none failed')
  t.ok(
    lines.some((l) => l.includes('latency: priming OpenBao with 16 unmeasured Mounts of a throwaway ours (pod)')),
    'a throwaway process primed OpenBao before the first variant',
  )
  t.ok(Number.isFinite(lat?.warmup.cpuMsPerMount), 'its CPU per Mount is reported')
  t.same(
    [lat?.afterIdle?.idleSec, lat?.afterIdle?.concurrency, lat?.afterIdle?.mounts, lat?.afterIdle?.failed],
    [1, 1, 10, 0],
    'after the levels and 1 s idle (--quick), one more block at concurrency 1, as many Mounts as a level',
  )
  t.ok(Number.isFinite(lat?.afterIdle?.cpuMsPerMount), 'its CPU per Mount is reported')
  t.ok((lat?.afterIdle?.vaultIdleCpuMsPerSec ?? -1) >= 0, "and OpenBao's CPU per second while idle")
  t.same(
    [lat?.paced?.intervalMs, lat?.paced?.concurrency, lat?.paced?.mounts, lat?.paced?.failed],
    [PACED_INTERVAL_MS, 1, 10, 0],
    'right after the levels, one block at concurrency 1 paced at one Mount per interval, as many Mounts as a level',
  )
  t.ok(Number.isFinite(lat?.paced?.cpuMsPerMount), 'its CPU per Mount is reported')
  // Mount i starts no sooner than i intervals after the first: however fast the machine, 10 Mounts
  // take at least 9 intervals.
  t.ok(
    (lat?.paced?.mountsPerSec ?? Infinity) <= (10 * 1000) / (9 * PACED_INTERVAL_MS),
    `the paced block kept its pace (${lat?.paced?.mountsPerSec} Mounts/s)`,
  )

  // CPU per Mount comes from /proc/<pid>/stat for every variant of ours in the latency scenario.
  const imageNode = `ours (pod, image's Node ${process.versions.node})`
  t.same(
    r.latency.map((l) => l.variant),
    ['ours (pod)', 'ours (serviceaccount)', imageNode, FLOOR],
  )
  t.same(
    r.latency.find((l) => l.variant === FLOOR)?.levels.map((lv) => [lv.concurrency, lv.mounts, lv.failed]),
    [
      [1, 10, 0],
      [8, 10, 0],
    ],
    'the floor served every Mount of both levels',
  )
  const floorRows = readFileSync(join(out, 'results.md'), 'utf8')
    .split('\n')
    .filter((l) => l.includes(FLOOR))
  t.ok(floorRows.length >= 2, 'the floor has its rows in the latency table')
  t.notOk(
    floorRows.some((l) => /\|\s*(met|\*\*missed\*\*)\s*\|\s*$/.test(l)),
    'the floor is never held to a target',
  )
  for (const l of r.latency) {
    for (const lv of l.levels) {
      t.ok(
        Number.isFinite(lv.cpuMsPerMount) && lv.cpuMsPerMount >= 0,
        `${l.variant} c=${lv.concurrency}: CPU per Mount`,
      )
      t.ok(Number.isFinite(lv.cpuMsPerVaultRequest), `${l.variant} c=${lv.concurrency}: CPU per Vault request`)
      t.ok(
        Number.isFinite(lv.vaultCpuMsPerMount) && lv.vaultCpuMsPerMount >= 0,
        `${l.variant} c=${lv.concurrency}: OpenBao's CPU per Mount`,
      )
      // The driver client alone is a process started per level: the machine is never idle throughout.
      t.ok(lv.machineBusy > 0 && lv.machineBusy <= 1, `${l.variant} c=${lv.concurrency}: share of the machine busy`)
    }
  }

  // The fleet: 2 provider processes × 3 pods, ours in both identity scopes.
  t.same(
    r.fleet.map((f) => [f.variant, f.nodes, f.podsPerNode, f.ok, f.failed]),
    [
      ['ours (pod)', 2, 3, 6, 0],
      ['ours (serviceaccount)', 2, 3, 6, 0],
    ],
    `fleet ran; failures: ${JSON.stringify(r.failures)}`,
  )
  const fleetPod = r.fleet.find((f) => f.variant === 'ours (pod)')
  const fleetSa = r.fleet.find((f) => f.variant === 'ours (serviceaccount)')
  t.equal(fleetPod?.counts.logins, 6, 'pod scope: one login per pod')
  t.equal(fleetSa?.counts.logins, 2, 'serviceaccount scope: one login per node')
  t.equal(fleetPod?.counts.kvReads, 30, 'pod scope: 5 KV reads per pod')
  t.equal(fleetPod?.leasesHeld, 6, 'one database lease per pod, none revoked during the rollout')
  t.equal(fleetPod?.tokensHeld, 6)
  t.ok((fleetPod?.peakPerSec ?? 0) >= 1 && (fleetPod?.peakPerSec ?? 0) <= (fleetPod?.requests ?? 0), 'busiest second')
  t.equal(
    fleetPod?.requests,
    Object.values(fleetPod?.counts.byPath ?? {}).reduce((a, b) => a + b, 0),
    'requests = every provider request in the audit log',
  )

  const foot = r.footprint.find((f) => f.variant === 'ours (pod)')
  t.ok((foot?.idleRssKiB ?? 0) > 0 && (foot?.peakRssKiB ?? 0) >= (foot?.idleRssKiB ?? 0), 'RSS read from /proc')
  t.ok(
    (foot?.settledAnonKiB ?? 0) > 0 && (foot?.settledFileKiB ?? 0) > 0,
    'settled RSS split into anon and file-backed',
  )
  t.ok(
    (foot?.settledAnonKiB ?? Infinity) + (foot?.settledFileKiB ?? Infinity) <= (foot?.settledRssKiB ?? 0),
    'anon + file-backed ≤ RSS',
  )
  t.ok((foot?.idleCpuMsPerSec ?? -1) >= 0, `CPU while idle read from /proc (${foot?.idleCpuMsPerSec} ms/s)`)
  t.ok(
    (foot?.startupMs ?? 0) > 0 && (foot?.firstAnswerMs ?? 0) >= (foot?.startupMs ?? Infinity),
    'start-up measured to an accepting socket and, no sooner, to the first Version answered',
  )
  t.same(
    Object.keys(r.firstAnswers).sort(),
    Object.keys(r.startups).sort(),
    'a first answer for every start-up variant',
  )
  const imageFloor = `${FLOOR} on the image's Node ${process.versions.node}`
  t.same(
    r.footprint.map((f) => [f.variant, f.storm.ok, f.storm.failed]),
    [
      ['ours (pod)', 3, 0],
      [imageNode, 3, 0],
      [FLOOR, 3, 0],
      [imageFloor, 3, 0],
    ],
    'footprint for ours (pod) and the floor, each on both Nodes, every storm Mount served',
  )
  for (const f of r.footprint.filter((x) => isFloor(x.variant))) {
    t.ok(f.settledRssKiB > 0 && f.peakRssKiB >= f.settledRssKiB, `${f.variant}: RSS read from /proc`)
    t.ok(f.firstAnswerMs >= f.startupMs && f.startupMs > 0, `${f.variant}: start-up measured`)
  }
  t.equal(
    r.storm.find((s) => s.variant === imageNode)?.ok,
    3,
    'the storm ran on the image’s Node too, every Mount succeeded',
  )

  const md = readFileSync(`${out}/results.md`, 'utf8')
  t.match(md, /## 1\. Rollout storm/)
  t.match(
    md,
    new RegExp(
      `\\| ours \\(pod\\) \\| 3 \\| 0 \\| ${storm?.counts.logins ?? -1} \\| ${storm?.counts.kvReads ?? -1} \\|`,
    ),
  )
  t.match(md, /## 5\. Fleet/)
  t.match(md, /\| ours \(pod\) \| 1,000 \| /, 'projection for 1,000 nodes')
  t.match(md, /## Budget of issue 36/)
  t.match(
    md,
    /\| CPU per warm Mount \(5 KV\) at concurrency 1 ≤ 0\.8× the reference \| ours \(pod\) \| [^|]+ \| n\/a \|/,
  )
  t.match(md, /\| ours \(serviceaccount\) \| 10 \| 0 \|( [^|]+ \|){4} n\/a \|/, 'after-idle table row')
  t.match(
    md,
    `Paced: right after its levels, each variant ran 10 Mounts at concurrency 1, one every ${PACED_INTERVAL_MS} ms`,
  )
  t.match(md, /\| ours \(serviceaccount\) \| 10 \| 0 \|( [^|]+ \|){7} n\/a \|/, 'paced table row')
  t.match(
    md,
    /\| spawn → first Version answer ≤ 300 ms \(median of the run’s start-ups\) \| ours \(pod, image's Node [\d.]+\) \| [\d,]+ ms over \d+ start-up\(s\), max [\d,]+ ms; floor [\d,]+ ms \| (met|\*\*missed\*\*) \|/,
  )
  // Each memory row is a ratio to the floor on the same Node.
  t.match(
    md,
    /\| idle RSS \(settled, 4 s after start\) ≤ 1\.15× the floor on the same Node \| ours \(pod\) \| [\d.]+ vs [\d.]+ MiB \([\d.]+×\)/,
  )
  t.match(
    md,
    /\| storm peak RSS \(3 pods × 10 files of 10 KiB\) ≤ 1\.25× the floor on the same Node \| ours \(pod, image's Node [\d.]+\) \| [\d.]+ vs [\d.]+ MiB \([\d.]+×\) \|/,
  )
  // The verdict follows the ratio to the floor measured in the run.
  const idleVerdict = (overFloor: number): string | undefined => {
    const floorKiB = r.footprint.find((f) => f.variant === FLOOR)!.settledRssKiB
    const footprint = r.footprint.map((f) =>
      f.variant === 'ours (pod)' ? { ...f, settledRssKiB: floorKiB * overFloor } : f,
    )
    const row = renderMarkdown({ ...r, footprint })
      .split('\n')
      .find((l) => l.startsWith('| idle RSS (settled') && l.includes('| ours (pod) |'))
    return row?.split('|').at(-2)?.trim()
  }
  t.equal(idleVerdict(BUDGET.idleVsFloor - 0.01), 'met')
  t.equal(idleVerdict(BUDGET.idleVsFloor + 0.01), '**missed**')
  // The Vault economy as before issue 36: one login and 5 reads per pod in the pod scope.
  t.match(
    md,
    '| storm (3 pods, the median run): the Vault economy unchanged | ours (pod) | failed Mounts 0, logins 3, KV reads 15 | met |',
  )
  t.match(
    md,
    /\| fleet \(2 nodes × 3 pods\): the Vault economy unchanged \| ours \(pod\) \| failed Mounts 0, Vault requests 42, logins 6, KV reads 30, [^|]+ \| met \|/,
  )
  t.match(md, /\| churn \(3 pods, 2 rounds\): the Vault economy unchanged \| ours \(serviceaccount\) \| /)
  t.match(md, /## Earlier targets \(issues 3 and 12\)/)
  t.match(
    md,
    /\| issue 12: CPU per Mount after 1 s idle \(10 Mounts at concurrency 1\) ≤ 1\.0× the reference \| ours \(pod\) \| [^|]+ \| n\/a \|/,
  )
  t.match(md, /Image's Node: the row "ours \(pod, image's Node …\)" is the same build/)
  // The overhead rows give the floor’s figure beside ours.
  t.match(
    md,
    /\| issue 12: provider overhead p50 ≤ 1 ms at concurrency 1 \| ours \(pod\) \| [\d.]+ ms; floor [\d.]+ ms \|/,
  )
  const svg = readFileSync(`${out}/chart.svg`, 'utf8')
  t.match(svg, /^<svg /)
  t.match(svg, /Storm: logins/)
})

t.test('bench --vault-tls: the latency scenario reaches Vault over HTTPS', async (t) => {
  const out = await tempDirFor(t, 'vcp-bench-tls-')
  const opts = parseOptions(
    [
      ...['--scenario', 'latency', '--quick', '--no-reference', '--image-node', 'none', '--vault-tls'],
      ...['--latency-mounts', '4', '--latency-warmup', '8', '--latency-idle', '0', '--out', out],
    ],
    out,
  )
  if (opts === 'help') throw new Error('unexpected help')
  await runBench(opts, () => undefined)
  const r = JSON.parse(readFileSync(`${out}/results.json`, 'utf8')) as BenchResults
  t.same(r.failures, [], 'no variant failed')
  // A provider that did not trust the proxies' CA named by vaultCACertPath, or spoke plain HTTP to
  // them, would fail every Mount.
  t.same(
    r.latency.map((l) => [l.variant, l.vaultScheme, l.levels.map((lv) => [lv.concurrency, lv.mounts, lv.failed])]),
    ['ours (pod)', 'ours (serviceaccount)', FLOOR].map((v) => [
      v,
      'https',
      [
        [1, 4, 0],
        [8, 4, 0],
      ],
    ]),
    'every variant, the floor too, served every Mount over HTTPS',
  )
  for (const l of r.latency) {
    const lv = l.levels[0]!
    t.ok(lv.vaultRequests >= lv.mounts, `${l.variant}: Vault requests seen by the HTTPS timing proxies`)
  }
  const md = readFileSync(`${out}/results.md`, 'utf8')
  t.match(md, /the latency scenario reaches Vault over HTTPS \(--vault-tls\)/)
  t.match(md, /With --vault-tls \(this run\) the providers reach those proxies over HTTPS/)
})
