// What the adversarial suites time besides the victim's Mounts: the operations port's /health/live
// (what the kubelet's liveness probe asks) asked back to back during an attack, and a process's CPU.
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'

/** Back-to-back GETs of /health/live until stopped: the latency a liveness probe sees. */
export class LiveProbe {
  private running = false
  private done: Promise<void> = Promise.resolve()
  samples: number[] = []
  failures = 0
  errors = 0

  constructor(private url: string) {}

  /** Probes another process from now on (a successor's own port after a handover). */
  retarget(url: string): void {
    this.url = url
  }

  private async once(): Promise<void> {
    const started = performance.now()
    try {
      const res = await fetch(this.url, { signal: AbortSignal.timeout(30_000) })
      await res.text()
      if (!res.ok) this.failures += 1
    } catch {
      // A connection the server closed as the client reused it (keep-alive), not an answer: counted apart.
      this.errors += 1
    }
    this.samples.push(performance.now() - started)
  }

  async measure(n: number): Promise<number[]> {
    const before = this.samples.length
    for (let i = 0; i < n; i++) await this.once()
    return this.samples.slice(before)
  }

  start(): void {
    this.running = true
    this.samples = []
    this.failures = 0
    this.errors = 0
    this.done = (async () => {
      while (this.running) await this.once()
    })()
  }

  async stop(): Promise<number[]> {
    this.running = false
    await this.done
    return this.samples
  }
}

/** A process's CPU time so far (user + system), in milliseconds, from /proc. */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  // Fields 14 and 15 of stat (utime, stime), in clock ticks of 10 ms (USER_HZ on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10
}
