// What the HTTP client under the Vault transport costs in memory and CPU, undici (as
// src/vault/transport/transport.ts calls it: a Pool, the dispatch API) against
// Node's own node:http (a keep-alive Agent), each in a process of its own with the image's heap
// flags, against one local HTTP server answering a KV-v2-shaped body (another process).
//
//   node dist/bench/http-clients.js [--requests N] [--node PATH]
//
// Each client process makes 2,000 warm-up requests and then N (default 8,000) at concurrency 8, and
// reports its CPU time per request (process.cpuUsage over the N), then waits 3 s with nothing to do
// and reports VmRSS and VmHWM: the high-water mark keeps whatever V8 needed on the way, such as the
// compilation of undici's WebAssembly HTTP parser (llhttp) in the background.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Pool } from 'undici'
import { PACKAGE_ROOT } from '../src/package-info.js'
import { memoryFromStatus, productionNodeFlags } from './providers.js'

export const CLIENT_KINDS = ['undici', 'node:http'] as const
export type ClientKind = (typeof CLIENT_KINDS)[number]
const CONCURRENCY = 8
const WARMUP_REQUESTS = 2000
const IDLE_MS = 3000
const PRODUCTION_NODE_FLAGS = productionNodeFlags()

export interface ClientFigures {
  kind: ClientKind
  /** process.versions.node of the client process. */
  node: string
  cpuUsPerRequest: number
  rssMiB: number
  hwmMiB: number
}

/** A Vault KV v2 answer of one 64-byte value, as OpenBao shapes it. */
const ANSWER = JSON.stringify({
  request_id: '00000000-0000-0000-0000-000000000000',
  lease_id: '',
  renewable: false,
  lease_duration: 0,
  data: { data: { password: 'x'.repeat(64) }, metadata: { version: 1, created_time: '2026-01-01T00:00:00Z' } },
  wrap_info: null,
  warnings: null,
  auth: null,
})

type OneRequest = () => Promise<unknown>

async function undiciClient(origin: string): Promise<OneRequest> {
  const pool = new Pool(origin, { connections: 64 })
  return () =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = []
      pool.dispatch(
        { path: '/v1/secret/data/app', method: 'GET', headers: { accept: 'application/json' } },
        {
          // The handler API the transport uses (undici's controller form): these two mark it as such.
          onRequestStart: () => undefined,
          onResponseStart: () => undefined,
          onResponseData: (_c, chunk) => void chunks.push(chunk),
          onResponseEnd: () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))),
          onResponseError: (_c, err) => reject(err),
        },
      )
    })
}

function nodeHttpClient(origin: string): OneRequest {
  const url = new URL(origin)
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
  return () =>
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: '/v1/secret/data/app',
          method: 'GET',
          agent,
          headers: { accept: 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))))
          res.on('error', reject)
        },
      )
      req.on('error', reject)
      req.end()
    })
}

async function runRequests(one: OneRequest, n: number): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < n) await one()
    }),
  )
}

/** The client process: measures, prints one JSON line, exits. */
async function child(kind: ClientKind, origin: string, requests: number): Promise<void> {
  const one = kind === 'undici' ? await undiciClient(origin) : nodeHttpClient(origin)
  await runRequests(one, WARMUP_REQUESTS)
  const before = process.cpuUsage()
  await runRequests(one, requests)
  const used = process.cpuUsage(before)
  await new Promise((r) => setTimeout(r, IDLE_MS))
  const memory = memoryFromStatus(readFileSync('/proc/self/status', 'utf8'))
  const figures: ClientFigures = {
    kind,
    node: process.versions.node,
    cpuUsPerRequest: (used.user + used.system) / requests,
    rssMiB: memory.rssKiB / 1024,
    hwmMiB: memory.hwmKiB / 1024,
  }
  process.stdout.write(`${JSON.stringify(figures)}\n`)
  process.exit(0)
}

/** Runs each client in its own process (Node `nodeBin`, the image's Node flags) against one local server. */
export async function measureClients(requests: number, nodeBin = process.execPath): Promise<ClientFigures[]> {
  const server = http.createServer((_req, res) => {
    res.setHeader('content-type', 'application/json')
    res.end(ANSWER)
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  // The compiled script (npm run build), also when this module runs from source under a test loader.
  const self = join(PACKAGE_ROOT, 'dist', 'bench', 'http-clients.js')
  try {
    const out: ClientFigures[] = []
    for (const kind of CLIENT_KINDS) {
      const proc = spawn(nodeBin, [...PRODUCTION_NODE_FLAGS, self, '--child', kind, origin, String(requests)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      let text = ''
      proc.stdout.on('data', (d: Buffer) => (text += d.toString('utf8')))
      const code = await new Promise<number | null>((r) => proc.once('exit', r))
      if (code !== 0) throw new Error(`the ${kind} client exited with ${code}`)
      out.push(JSON.parse(text.trim()) as ClientFigures)
    }
    return out
  } finally {
    server.closeAllConnections()
    server.close()
  }
}

export function clientsTable(figures: readonly ClientFigures[]): string {
  const rows = figures.map(
    (f) => `| ${f.kind} | ${f.cpuUsPerRequest.toFixed(1)} | ${f.rssMiB.toFixed(1)} | ${f.hwmMiB.toFixed(1)} |`,
  )
  return [
    `Node ${figures[0]?.node ?? '?'}, Node flags ${PRODUCTION_NODE_FLAGS.join(' ')}; concurrency ${CONCURRENCY}, after ${WARMUP_REQUESTS} warm-up requests`,
    '',
    '| client | CPU per request (µs) | RSS after 3 s idle (MiB) | peak RSS (MiB) |',
    '| --- | --- | --- | --- |',
    ...rows,
  ].join('\n')
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  const args = process.argv.slice(2)
  if (args[0] === '--child') {
    await child(args[1] as ClientKind, args[2]!, Number(args[3]))
  } else {
    const flag = (name: string): string | undefined => {
      const i = args.indexOf(name)
      return i >= 0 ? args[i + 1] : undefined
    }
    const requests = Number(flag('--requests') ?? 8000)
    const nodeBin = flag('--node') ?? process.execPath
    process.stdout.write(`${clientsTable(await measureClients(requests, nodeBin))}\n`)
  }
}
