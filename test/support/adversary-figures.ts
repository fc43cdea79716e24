// The figures issue 43's closing note asks of every attack (bench/NOTES.md, "Render work"): the
// victim's Mount p50 / p99 and the operations port's /health/live p50 / p99 during the attack, and
// the daemon's CPU for one attacking Mount. `measuredAttack` is expectAttack with /health/live timed
// throughout (and held to the victim's bound) and a few attacking Mounts timed alone afterwards.
import { performance } from 'node:perf_hooks'
import type { Test } from 'tap'
import { allowedLoadedP99, percentile, type AttackOutcome } from './adversary.js'
import { expectAttack, type World } from './adversary-world.js'
import type { GrpcMountResult } from './grpc-client.js'
import { cpuMs, LiveProbe } from './live-probe.js'
import { healthPort } from './provider.js'

const ms = (v: number): string => v.toFixed(1)

export const FIGURES_HEADER = [
  '| attack | answer | victim p50 / p99 (ms) | /health/live p50 / p99 (ms) | daemon CPU per attacking Mount (ms) |',
  '|---|---|---|---|---|',
]

export interface AttackFigures {
  /** Measures `/health/live` unloaded (200 probes); once per suite, before the first attack. */
  start(t: Test): Promise<void>
  attack(
    t: Test,
    o: Parameters<typeof expectAttack>[2],
    /** One attacking Mount, run alone after the attack for its CPU; default the attack's first attempt. */
    cpuSample?: () => Promise<GrpcMountResult>,
  ): Promise<AttackOutcome>
  /** The rows so far, as a markdown table. */
  table(): string
}

export function attackFigures(w: World): AttackFigures {
  let live: LiveProbe | undefined
  let liveUnloaded: number[] = []
  const rows: string[] = []
  return {
    async start(t) {
      live = new LiveProbe(`http://127.0.0.1:${await healthPort(w.daemon.provider)}/health/live`)
      liveUnloaded = await live.measure(200)
      t.equal(live.failures, 0, '/health/live answers 200 without an attack')
    },
    async attack(t, o, cpuSample) {
      if (live === undefined) throw new Error('attackFigures: start() first')
      live.start()
      const out = await expectAttack(t, w, o)
      const loaded = await live.stop()
      t.equal(live.failures, 0, `/health/live answered 200 to every probe (${live.errors} connection errors)`)
      const unloadedP99 = percentile(liveUnloaded, 99)
      const allowed = allowedLoadedP99(unloadedP99)
      t.ok(
        percentile(loaded, 99) <= allowed,
        `/health/live p99 ${ms(percentile(loaded, 99))} ms under attack <= ${ms(allowed)} ms (unloaded p99 ${ms(unloadedP99)} ms, ${loaded.length} probes)`,
      )
      // The daemon's CPU for attacking Mounts alone, at least 3 and for at least half a second
      // (/proc counts in 10 ms ticks; noisy: other processes share the machine).
      const sample = cpuSample ?? (() => o.attempt(0))
      const before = cpuMs(w.daemon.provider.pid)
      const started = performance.now()
      let runs = 0
      while (runs < 3 || (performance.now() - started < 500 && runs < 100)) {
        await sample()
        runs += 1
      }
      const perMount = (cpuMs(w.daemon.provider.pid) - before) / runs
      rows.push(
        `| ${o.name} | ${out.answer.grpcCode} | ${ms(percentile(out.victim.latenciesMs, 50))} / ${ms(out.victimP99Ms)} ` +
          `(unloaded p99 ${ms(out.unloadedP99Ms)}) | ${ms(percentile(loaded, 50))} / ${ms(percentile(loaded, 99))} ` +
          `(unloaded p99 ${ms(unloadedP99)}) | ${ms(perMount)} |`,
      )
      return out
    },
    table: () => [...FIGURES_HEADER, ...rows].join('\n'),
  }
}
