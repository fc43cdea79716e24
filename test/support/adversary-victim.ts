// The victim pod's Mount loop, run in a worker thread: its latency must not include whatever
// the attacker's client does in the test's own thread (encoding a 6 MiB request, building
// thousands of objects). Loaded by adversary.ts's Victim; a worker only when given
// `workerData.adversaryVictim`.
import { performance } from 'node:perf_hooks'
import { isMainThread, parentPort, workerData } from 'node:worker_threads'
import { connectProvider } from './grpc-client.js'

export interface VictimConfig {
  socketPath: string
  attributes: string
  /** The one file's expected contents: anything else is a failed victim Mount. */
  expected: string
}

export interface VictimSample {
  ms: number
  ok: boolean
  grpcCode: string
  message: string
}

export type VictimCommand = { type: 'run'; id: number; count: number } | { type: 'loop'; id: number } | { type: 'stop' }

export type VictimReply = { type: 'samples'; id: number; samples: VictimSample[] } | { type: 'progress'; count: number }

if (!isMainThread && parentPort !== null && (workerData as { adversaryVictim?: VictimConfig })?.adversaryVictim) {
  const port = parentPort
  const cfg = (workerData as { adversaryVictim: VictimConfig }).adversaryVictim
  const client = connectProvider(cfg.socketPath)
  const once = async (): Promise<VictimSample> => {
    const started = performance.now()
    const r = await client.mount({ attributes: cfg.attributes }, 20_000)
    const ms = performance.now() - started
    const ok = r.ok && r.files.length === 1 && Buffer.from(r.files[0]!.contents).toString() === cfg.expected
    return { ms, ok, grpcCode: r.grpcCode, message: r.message.slice(0, 300) }
  }
  let looping = false
  port.on('message', (cmd: VictimCommand) => {
    void (async () => {
      if (cmd.type === 'stop') {
        looping = false
        return
      }
      const samples: VictimSample[] = []
      if (cmd.type === 'run') {
        for (let i = 0; i < cmd.count; i++) samples.push(await once())
      } else {
        looping = true
        while (looping) {
          samples.push(await once())
          port.postMessage({ type: 'progress', count: samples.length } satisfies VictimReply)
        }
      }
      port.postMessage({ type: 'samples', id: cmd.id, samples } satisfies VictimReply)
    })()
  })
}
