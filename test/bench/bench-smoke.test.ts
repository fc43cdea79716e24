// Keeps the benchmark harness (bench/) from rotting: a --quick run against our provider only,
// every scenario, a few pods. Asserts what the harness produced and counted, never timings.
import { existsSync, readFileSync } from 'node:fs'
import t from 'tap'
import { runBench } from '../../bench/main.js'
import { parseOptions } from '../../bench/options.js'
import type { BenchResults } from '../../bench/report.js'
import { tempDirFor } from '../support/tmp.js'

t.test('bench --quick --no-reference writes results with Vault counts', async (t) => {
  const out = await tempDirFor(t, 'vcp-bench-smoke-')
  const opts = parseOptions(
    ['--quick', '--no-reference', '--pods', '3', '--rounds', '2', '--latency-mounts', '10', '--out', out],
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

  const foot = r.footprint.find((f) => f.variant === 'ours (pod)')
  t.ok((foot?.idleRssKiB ?? 0) > 0 && (foot?.peakRssKiB ?? 0) >= (foot?.idleRssKiB ?? 0), 'RSS read from /proc')

  const md = readFileSync(`${out}/results.md`, 'utf8')
  t.match(md, /## 1\. Rollout storm/)
  t.match(
    md,
    new RegExp(
      `\\| ours \\(pod\\) \\| 3 \\| 0 \\| ${storm?.counts.logins ?? -1} \\| ${storm?.counts.kvReads ?? -1} \\|`,
    ),
  )
  t.match(md, /## Targets of issue 3/)
  const svg = readFileSync(`${out}/chart.svg`, 'utf8')
  t.match(svg, /^<svg /)
  t.match(svg, /Storm: logins/)
})
