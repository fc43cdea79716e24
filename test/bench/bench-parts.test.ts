// The benchmark's pure parts: options, the reference's flag names, CPU time from
// /proc/<pid>/stat and /proc/stat, memory from /proc/<pid>/status and the fleet projection.
// No processes started, no timings.
import t from 'tap'
import { project, perNode, projections, PROJECTION } from '../../bench/economy.js'
import type { FleetResult } from '../../bench/fleet.js'
import { emptyCounts } from '../../bench/audit.js'
import { DEFAULT_BASELINE, parseOptions, type BenchOptions } from '../../bench/options.js'
import {
  cpuMsFromStat,
  machineCpuFromProcStat,
  memoryFromStatus,
  processCpuMs,
  referenceFlags,
} from '../../bench/providers.js'
import { median } from '../../bench/stats.js'

/** parseOptions for argv that is not a help request. */
function options(argv: string[]): BenchOptions {
  const o = parseOptions(argv, '/out')
  if (o === 'help') throw new Error('unexpected help')
  return o
}

t.test('options: fleet nodes and baselines', async (t) => {
  const full = options([])
  t.equal(full.nodes, 10)
  t.equal(full.fleetSpreadSec, 30)
  t.same(full.baselines, [DEFAULT_BASELINE], 'a full run compares against the build before issue 12')
  t.ok(full.scenarios.includes('fleet'))
  const quick = options(['--quick'])
  t.equal(quick.nodes, 2)
  t.equal(quick.fleetSpreadSec, 0)
  t.same(quick.baselines, [])
  const given = options(['--nodes', '5', '--baseline=abc1234,main', '--scenario', 'fleet'])
  t.equal(given.nodes, 5)
  t.same(given.baselines, ['abc1234', 'main'])
  t.same(given.scenarios, ['fleet'])
  const allAtOnce = options(['--fleet-spread', '0'])
  t.equal(allAtOnce.fleetSpreadSec, 0)
  const none = options(['--baseline', 'none'])
  t.same(none.baselines, [])
  t.throws(() => parseOptions(['--baseline', '../../etc'], '/out'), /--baseline: not a git revision/)
  t.throws(() => parseOptions(['--nodes', '0'], '/out'), /--nodes needs a positive integer/)
})

t.test('options: how long the footprint scenario lets a provider settle before its idle RSS', async (t) => {
  const full = options([])
  const quick = options(['--quick'])
  const given = options(['--settle', '30'])
  const tooShort = options(['--settle=1'])
  t.equal(full.settleSec, 20, 'past V8’s 8 s memory-reducer delay')
  t.equal(quick.settleSec, 2, 'a smoke run reads it once')
  t.equal(given.settleSec, 30)
  t.equal(tooShort.settleSec, 2, 'never before the 2 s reading')
  t.throws(() => parseOptions(['--settle', 'x'], '/out'), /--settle needs a positive number/)
})

t.test('options: unmeasured warm-up Mounts before the latency levels', async (t) => {
  const full = options([])
  const quick = options(['--quick'])
  const none = options(['--latency-warmup', '0'])
  const given = options(['--latency-warmup=1000'])
  t.equal(full.latencyWarmup, 400, 'past the ~300 Mounts ours needs to have its hot code optimised')
  t.equal(quick.latencyWarmup, 40)
  t.equal(none.latencyWarmup, 0, '0 keeps only the one Mount per pod')
  t.equal(given.latencyWarmup, 1000)
  t.throws(() => parseOptions(['--latency-warmup', '-5'], '/out'), /--latency-warmup needs a positive integer/)
  t.throws(() => parseOptions(['--latency-warmup', '2.5'], '/out'), /--latency-warmup needs a positive integer/)
})

t.test('options: the latency scenario over HTTPS', async (t) => {
  t.equal(options([]).vaultTls, false, 'plain HTTP unless asked, as in the samples before it')
  t.equal(options(['--vault-tls']).vaultTls, true)
  t.throws(() => parseOptions(['--vault-tls=yes'], '/out'), /--vault-tls takes no value, got --vault-tls=yes/)
})

t.test('options: idle seconds before the after-idle latency block', async (t) => {
  t.equal(options([]).latencyIdleSec, 20, 'past V8’s 8 s memory-reducer delay, like a node between pods')
  t.equal(options(['--quick']).latencyIdleSec, 1)
  t.equal(options(['--latency-idle', '0']).latencyIdleSec, 0, '0 skips the block')
  t.equal(options(['--latency-idle=2.5']).latencyIdleSec, 2.5)
  t.throws(() => parseOptions(['--latency-idle', '-1'], '/out'), /--latency-idle needs a positive number/)
  t.throws(() => parseOptions(['--latency-idle', 'x'], '/out'), /--latency-idle needs a positive number/)
})

t.test("options: the image's Node as one more variant of ours", async (t) => {
  t.equal(options([]).imageNode, undefined, 'none unless given (bench/run.sh passes the image’s Node)')
  t.equal(options(['--image-node', process.execPath]).imageNode, process.execPath)
  t.equal(options(['--image-node=none']).imageNode, undefined, '"none": not run')
  t.throws(() => parseOptions(['--image-node', 'bin/node'], '/out'), /--image-node needs an absolute path/)
  t.throws(() => parseOptions(['--image-node', '/no/such/node'], '/out'), /--image-node needs an absolute path/)
})

t.test('median: the middle value, or the mean of the two middle ones', async (t) => {
  t.equal(median([198, 129]), 163.5, 'two start-ups: their mean, not the lower one')
  t.equal(median([5, 1, 3]), 3)
  t.equal(median([4, 1, 3, 2]), 2.5)
  t.ok(Number.isNaN(median([])), 'none: NaN (shown as n/a)')
})

t.test('reference flags: -vault-* goes to -openbao-* where only that is listed', async (t) => {
  const openbaoHelp = [
    'Usage of openbao-csi-provider:',
    '  -endpoint string',
    '    \tpath to socket',
    '  -health-addr string',
    '  -hmac-secret-name string',
    '  -log-level string',
    '  -openbao-addr string',
    '  -openbao-mount string',
  ].join('\n')
  t.same(referenceFlags(openbaoHelp, ['-endpoint=/s', '-vault-addr=http://x', '-log-level=info', '-no-such=1']), [
    '-endpoint=/s',
    '-openbao-addr=http://x',
    '-log-level=info',
  ])
  const hashicorpHelp = '  -endpoint string\n  -vault-addr string\n'
  t.same(referenceFlags(hashicorpHelp, ['-endpoint=/s', '-vault-addr=http://x']), [
    '-endpoint=/s',
    '-vault-addr=http://x',
  ])
})

t.test('CPU time from /proc/<pid>/stat: utime + stime, a command name with spaces and parentheses', async (t) => {
  // Fields after "(comm) ": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime …
  const stat = '4242 (node (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 11 0'
  t.equal(cpuMsFromStat(stat, 100), 1750)
  t.equal(cpuMsFromStat(stat, 1000), 175)
})

t.test('machine CPU from /proc/stat: busy = all but idle and iowait, all CPUs summed', async (t) => {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const stat = 'cpu  100 5 50 800 20 3 2 0 7 0\ncpu0 50 2 25 400 10 1 1 0 3 0\nintr 1 2 3\n'
  t.same(machineCpuFromProcStat(stat, 100), { busyMs: 1600, allMs: 9800 })
  t.same(machineCpuFromProcStat('intr 1 2 3\n'), { busyMs: NaN, allMs: NaN }, 'no cpu line: NaN, not 0')
})

t.test('process CPU: this process has used some; a pid that is gone gives NaN', async (t) => {
  t.ok((await processCpuMs(process.pid)) > 0)
  t.ok(Number.isNaN(await processCpuMs(2 ** 22 + 1)), 'above pid_max: no such process')
})

t.test('memory from /proc/<pid>/status: VmRSS, VmHWM and the anon / file-backed split', async (t) => {
  const status = [
    'Name:\tnode',
    'VmHWM:\t  120000 kB',
    'VmRSS:\t   78200 kB',
    'RssAnon:\t   23752 kB',
    'RssFile:\t   54448 kB',
    'RssShmem:\t       0 kB',
  ].join('\n')
  t.same(memoryFromStatus(status), { rssKiB: 78200, hwmKiB: 120000, anonKiB: 23752, fileKiB: 54448 })
  // A kernel without the split (before 4.5) gives NaN, which the report prints as n/a.
  t.ok(Number.isNaN(memoryFromStatus('VmRSS:\t 1 kB\nVmHWM:\t 2 kB').anonKiB))
})

t.test('projection: n nodes cost n times one node', async (t) => {
  const counts = { ...emptyCounts(), logins: 220, tokenRevocations: 0 }
  const f: FleetResult = {
    variant: 'ours (pod)',
    nodes: 2,
    podsPerNode: 110,
    spreadSec: 0,
    objectsPerPod: 7,
    ok: 220,
    failed: 0,
    sampleError: undefined,
    allDoneMs: 1,
    nodeDoneP50Ms: 1,
    nodeDoneMaxMs: 1,
    counts,
    requests: 1540,
    peakPerSec: 1,
    activeSeconds: 1,
    tokensHeld: 220,
    leasesHeld: 220,
    hmacGets: 2,
  }
  const p = perNode(f)
  t.same(p, { variant: 'ours (pod)', podsPerNode: 110, requests: 770, logins: 110, tokensHeld: 110, leasesHeld: 110 })
  const row = project(p, 1000)
  t.equal(row.requests, 770_000)
  t.same(
    row.requestsPerSec,
    PROJECTION.spreadsSec.map((s) => 770_000 / s),
  )
  t.equal(row.tokensHeld, 110_000)
  t.equal(row.leasesHeld, 110_000)
  t.equal(projections([f]).length, PROJECTION.nodes.length)
  t.equal(projections([{ ...f, failed: 1 }]).length, 0, 'a fleet run with failures is not projected')
})
