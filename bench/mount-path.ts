// What the provider's own Mount path costs in CPU with nothing to wait for: the whole MountService
// (request parsing, the pod's token, the session pool, secret cache and coalescing, retries, the
// breaker, node-vault, rendering, versions, the Mount's log line and metrics), wired as
// src/app.ts wires it, in a process of its own with the image's heap flags, against a fake Vault
// that answers every call at once in-process. A stand-in, on purpose: without network, gRPC or
// OpenBao the figure is the provider's own work per Mount, measurable to a few per cent in seconds,
// where the latency scenario's CPU per Mount also holds undici's and grpc-js's work and the noise of
// a busy machine. Not a substitute for that scenario (the fake answers skip the Vault transport's
// HTTP code, src/vault/transport/transport.ts and its interceptors).
//
//   node dist/bench/mount-path.js [--mounts N] [--node PATH]
//
// 8 pods of one service account Mount 5 KV objects each, one Mount at a time: 3,000 warm-up Mounts,
// then N (default 20,000) timed with process.cpuUsage. Over the timed Mounts it also counts two
// engine-level costs that once dominated the path (bench/NOTES.md): AbortControllers made (~7 µs
// each on Node 20) and garbage collections, young and full (a full one per ~500 Mounts when a
// waiter's getter kept the Mounts' answers alive through young collections).
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { PerformanceObserver, constants } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { wireMountService } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'
import { ephemeralKey } from '../src/hmac/hmac-key.js'
import { createLogger } from '../src/observability/logger.js'
import { ProviderMetrics } from '../src/observability/metrics.js'
import { operationOfCall } from '../src/observability/vault-observer.js'
import { PACKAGE_ROOT } from '../src/package-info.js'
import { mountStatusName } from '../src/server/grpc-status.js'
import { Deadline } from '../src/util/deadline.js'
import { systemTime } from '../src/util/time.js'
import { AddressAllowlist } from '../src/vault/transport/address-allowlist.js'
import { BreakerRegistry } from '../src/vault/resilience/breaker.js'
import type { VaultAnswer, VaultCall, VaultCaller } from '../src/vault/transport/transport.js'
import { attributesFor, type Pod } from './load.js'
import { productionNodeFlags } from './providers.js'
import { SMALL_KV } from './scenarios.js'
import { AUTH_MOUNT, NAMESPACE, ROLE, SERVICE_ACCOUNT } from './world.js'

const PODS = 8
const WARMUP_MOUNTS = 3000
const ADDRESS = 'http://127.0.0.1:8200'

export interface MountPathFigures {
  /** process.versions.node of the measuring process. */
  node: string
  flags: string[]
  mounts: number
  cpuUsPerMount: number
  /** Calls the fake Vault answered during the timed Mounts, per Mount (5: one read per object). */
  vaultCallsPerMount: number
  /** AbortControllers made during the timed Mounts, per Mount. */
  abortControllersPerMount: number
  /** Young-generation (scavenge) and full (mark-compact) collections per 1,000 timed Mounts. */
  youngGcsPer1000: number
  fullGcsPer1000: number
}

/** Counts the AbortControllers made and the collections run until `stop()`. */
function countEngineWork(): { stop(): Promise<{ abortControllers: number; young: number; full: number }> } {
  const counts = { abortControllers: 0, young: 0, full: 0 }
  const Original = globalThis.AbortController
  globalThis.AbortController = class extends Original {
    constructor() {
      super()
      counts.abortControllers += 1
    }
  }
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) counts.young += 1
      else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) counts.full += 1
    }
  })
  observer.observe({ entryTypes: ['gc'] })
  return {
    async stop() {
      globalThis.AbortController = Original
      // GC entries are delivered after the fact, on a later timer turn: let the last ones in.
      await sleep(50)
      observer.disconnect()
      return counts
    },
  }
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

/** A service-account JWT's shape (never verified here: the fake Vault accepts any login). */
function podJwt(name: string, uid: string): string {
  const now = Math.floor(Date.now() / 1000)
  const claims = {
    aud: ['vault'],
    exp: now + 3600,
    iat: now,
    nbf: now,
    iss: 'https://kubernetes.default.svc.cluster.local',
    sub: `system:serviceaccount:${NAMESPACE}:${SERVICE_ACCOUNT}`,
    'kubernetes.io': {
      namespace: NAMESPACE,
      pod: { name, uid },
      serviceaccount: { name: SERVICE_ACCOUNT, uid: randomUUID() },
    },
  }
  return [base64url({ alg: 'RS256', kid: 'k'.repeat(43) }), base64url(claims), 's'.repeat(342)].join('.')
}

/** Vault's answers, as OpenBao shapes them; a new object per call, as JSON.parse would give. */
function answer(call: VaultCall): VaultAnswer {
  if (call.path.endsWith('/login')) {
    const auth = {
      client_token: `hvs.${'t'.repeat(91)}`,
      accessor: 'accessor',
      policies: ['bench'],
      metadata: { role: ROLE, service_account_name: SERVICE_ACCOUNT, service_account_namespace: NAMESPACE },
      lease_duration: 3600,
      renewable: true,
    }
    return { status: 200, body: { request_id: randomUUID(), lease_duration: 0, data: null, auth } }
  }
  const data = { data: { value: 'v'.repeat(32) }, metadata: { version: 1, created_time: '2026-01-01T00:00:00Z' } }
  return {
    status: 200,
    body: { request_id: randomUUID(), lease_id: '', renewable: false, lease_duration: 0, data, auth: null },
  }
}

/** Runs in the measuring process: the MountService of src/app.ts with the fake Vault under it. */
export async function measureHere(mounts: number, warmup = WARMUP_MOUNTS): Promise<MountPathFigures> {
  const config = loadConfig([`-vault-addr=${ADDRESS}`, `-vault-mount=${AUTH_MOUNT}`], {})
  // The Mount's log line is written, to nowhere: pino's work counts, a terminal's does not.
  const logger = createLogger('info', { write: () => undefined })
  const metrics = new ProviderMetrics({ grpcCodeOf: mountStatusName })
  let calls = 0
  const fake: VaultCaller = {
    address: ADDRESS,
    call: (c) => {
      calls += 1
      // What the transport reports of every call (src/vault/transport/call-observer.ts).
      const operation = c.operation ?? operationOfCall(c.method, c.path)
      metrics.vaultCall({ operation, ok: true, status: undefined, durationMs: 0, description: `${c.method} ${c.path}` })
      return Promise.resolve(answer(c))
    },
  }
  const time = systemTime()
  const breakers = new BreakerRegistry({}, () => Promise.resolve({ healthy: true as const }), time, logger)
  const { pool, mountService: service } = wireMountService(config, {
    logger,
    observer: metrics,
    metrics,
    transports: { get: () => Promise.resolve(fake) },
    breakers,
    kube: undefined,
    hmacKey: ephemeralKey(),
    allowlist: new AddressAllowlist([], {}),
    time,
  })
  const requests = Array.from({ length: PODS }, (_, i) => {
    const name = `mount-path-${i}`
    const uid = randomUUID()
    const pod: Pod = { name, uid, jwt: podJwt(name, uid), target: '/nonexistent' }
    return { attributes: attributesFor(pod, SMALL_KV), secrets: '{}', permission: '420' }
  })
  // Each Mount with a signal of its own, as the gRPC adapter gives it (src/server/grpc-server.ts).
  const mount = (i: number): Promise<unknown> =>
    service.mount(requests[i % PODS]!, Deadline.in(30_000, new AbortController().signal, time))
  try {
    for (let i = 0; i < warmup; i++) await mount(i)
    const callsBefore = calls
    const engine = countEngineWork()
    const before = process.cpuUsage()
    for (let i = 0; i < mounts; i++) await mount(i)
    const used = process.cpuUsage(before)
    const counted = await engine.stop()
    return {
      node: process.versions.node,
      flags: process.execArgv,
      mounts,
      cpuUsPerMount: (used.user + used.system) / mounts,
      vaultCallsPerMount: (calls - callsBefore) / mounts,
      abortControllersPerMount: counted.abortControllers / mounts,
      youngGcsPer1000: (counted.young * 1000) / mounts,
      fullGcsPer1000: (counted.full * 1000) / mounts,
    }
  } finally {
    breakers.close()
    pool.close()
  }
}

/** Measures in a child process on `nodeBin` with the image's heap flags (BENCH_NODE_FLAGS overrides them). */
export function measureMountPath(mounts: number, nodeBin = process.execPath): Promise<MountPathFigures> {
  return new Promise((resolve, reject) => {
    // The compiled script (npm run build), also when this module runs from source under a test loader.
    const self = join(PACKAGE_ROOT, 'dist', 'bench', 'mount-path.js')
    const child = spawn(nodeBin, [...productionNodeFlags(), self, '--child', String(mounts)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')))
    child.on('error', reject)
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`the measuring process exited with ${String(code)}`))
      else resolve(JSON.parse(out) as MountPathFigures)
    })
  })
}

export function mountPathLine(f: MountPathFigures): string {
  return (
    `Node ${f.node} (${f.flags.join(' ') || 'no flags'}): ${f.cpuUsPerMount.toFixed(0)} µs of CPU per Mount of ` +
    `${SMALL_KV.length} KV objects over ${f.mounts} Mounts, ${f.vaultCallsPerMount.toFixed(2)} fake Vault calls per Mount; ` +
    `per Mount ${f.abortControllersPerMount.toFixed(2)} AbortControllers made; per 1,000 Mounts ` +
    `${f.youngGcsPer1000.toFixed(1)} young and ${f.fullGcsPer1000.toFixed(1)} full collections`
  )
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  const args = process.argv.slice(2)
  if (args[0] === '--child') {
    process.stdout.write(JSON.stringify(await measureHere(Number(args[1]))))
  } else {
    const flag = (name: string): string | undefined => {
      const i = args.indexOf(name)
      return i >= 0 ? args[i + 1] : undefined
    }
    const figures = await measureMountPath(Number(flag('--mounts') ?? 20_000), flag('--node') ?? process.execPath)
    process.stdout.write(`${mountPathLine(figures)}\n`)
  }
}
