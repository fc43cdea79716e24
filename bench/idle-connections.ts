// What a pause between Mounts costs when Vault is reached over TLS, as on a real node where pods
// come minutes apart: a real OpenBao serving HTTPS (-dev-tls), our provider started once per
// -vault-idle-connection-timeout given, and Mounts of 5 KV objects for a new pod each (so each
// logs in and reads), one at a time, each after a pause. The tests' TCP proxy in front of OpenBao
// (no faults set) counts the connections opened, TLS passing through it untouched; CPU time of the
// provider and of OpenBao comes from /proc/<pid>/stat, as in the scenarios.
//
//   node dist/bench/idle-connections.js [--gaps 2,10,45] [--mounts N] [--timeouts 4s,30s]
//
// --gaps: the pauses in seconds, each followed by N Mounts (default 3), each after that pause.
// --timeouts: one provider per value, one after the other (4s behaves as undici's own default did).
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { startFaultProxy } from '../test/support/fault-proxy.js'
import { Fixture } from '../test/support/fixture.js'
import { configureJwtAuth, createJwtRole } from '../test/support/jwt.js'
import { startOpenBao, type OpenBao } from '../test/support/openbao.js'
import { startProvider } from '../test/support/provider.js'
import { processCpuMs } from './providers.js'

const OBJECTS = 5

export interface GapFigures {
  gapSec: number
  mounts: number
  /** Connections opened to OpenBao per Mount (each one a TLS handshake for both sides). */
  newConnectionsPerMount: number
  providerCpuMsPerMount: number
  openbaoCpuMsPerMount: number
}

export interface TimeoutFigures {
  /** The -vault-idle-connection-timeout the provider ran with. */
  timeout: string
  /** Connections the first Mount of a new provider opened. */
  firstMountConnections: number
  gaps: GapFigures[]
}

export interface IdleConnectionOptions {
  gapsSec: readonly number[]
  mountsPerGap: number
  timeouts: readonly string[]
}

async function seed(bao: OpenBao): Promise<unknown[]> {
  await configureJwtAuth(bao, 'jwt')
  await bao.writePolicy('app-read', 'path "secret/*" { capabilities = ["read"] }')
  await createJwtRole(bao, 'jwt', 'app', { policies: ['app-read'], boundAudiences: ['vault'], ttl: '1h' })
  const objects = []
  for (let i = 0; i < OBJECTS; i++) {
    const put = await bao.api('POST', `/v1/secret/data/idle-${i}`, { data: { value: `v${i}` } })
    if (put.status >= 300) throw new Error(`kv put: HTTP ${put.status}`)
    objects.push({ objectName: `o${i}`, secretPath: `secret/data/idle-${i}`, secretKey: 'value' })
  }
  return objects
}

export async function measureIdleConnections(o: IdleConnectionOptions): Promise<TimeoutFigures[]> {
  const bao = await startOpenBao({ tls: true })
  const relay = await startFaultProxy(bao.port)
  try {
    const objects = await seed(bao)
    const out: TimeoutFigures[] = []
    for (const timeout of o.timeouts) {
      const provider = await startProvider({
        args: [`-vault-addr=https://127.0.0.1:${relay.port}`, `-vault-idle-connection-timeout=${timeout}`],
      })
      try {
        const fx = Fixture.attach(bao, provider)
        const mount = async (): Promise<{ conns: number; prov: number; bao: number }> => {
          const [c0, p0, b0] = [relay.stats.connections, await processCpuMs(provider.pid), await processCpuMs(bao.pid)]
          const uid = randomUUID()
          const res = await fx.mount({
            pod: { uid, name: `idle-${uid.slice(0, 8)}` },
            params: { objects, vaultCACertPath: bao.caCertPath },
          })
          if (!res.result.ok) throw new Error(`Mount failed: ${res.result.message}`)
          return {
            conns: relay.stats.connections - c0,
            prov: (await processCpuMs(provider.pid)) - p0,
            bao: (await processCpuMs(bao.pid)) - b0,
          }
        }
        const first = await mount()
        const gaps: GapFigures[] = []
        for (const gapSec of o.gapsSec) {
          const sum = { conns: 0, prov: 0, bao: 0 }
          for (let i = 0; i < o.mountsPerGap; i++) {
            await sleep(gapSec * 1000)
            const m = await mount()
            sum.conns += m.conns
            sum.prov += m.prov
            sum.bao += m.bao
          }
          const n = o.mountsPerGap
          gaps.push({
            gapSec,
            mounts: n,
            newConnectionsPerMount: sum.conns / n,
            providerCpuMsPerMount: sum.prov / n,
            openbaoCpuMsPerMount: sum.bao / n,
          })
        }
        out.push({ timeout, firstMountConnections: first.conns, gaps })
      } finally {
        await provider.stop()
      }
    }
    return out
  } finally {
    await relay.close()
    await bao.stop()
  }
}

export function idleConnectionsTable(figures: readonly TimeoutFigures[]): string {
  const rows = figures.flatMap((f) =>
    f.gaps.map(
      (g) =>
        `| ${f.timeout} | ${g.gapSec} s | ${g.mounts} | ${g.newConnectionsPerMount.toFixed(1)} | ${g.providerCpuMsPerMount.toFixed(1)} | ${g.openbaoCpuMsPerMount.toFixed(1)} |`,
    ),
  )
  return [
    `Mounts of ${OBJECTS} KV objects for a new pod each, one at a time, over TLS to OpenBao; CPU from /proc/<pid>/stat, in clock ticks (usually 10 ms)`,
    '',
    '| -vault-idle-connection-timeout | pause before each Mount | Mounts | new connections per Mount | provider CPU ms/Mount | OpenBao CPU ms/Mount |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n')
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  const args = process.argv.slice(2)
  const flag = (name: string): string | undefined => {
    const i = args.indexOf(name)
    return i >= 0 ? args[i + 1] : undefined
  }
  const list = (raw: string): string[] => raw.split(',').filter((v) => v !== '')
  const gapsSec = list(flag('--gaps') ?? '2,10,45').map(Number)
  const mountsPerGap = Number(flag('--mounts') ?? 3)
  if (gapsSec.some((g) => !Number.isFinite(g) || g < 0) || !Number.isInteger(mountsPerGap) || mountsPerGap < 1) {
    throw new Error('--gaps takes seconds ≥ 0, comma-separated; --mounts a whole number ≥ 1')
  }
  const timeouts = list(flag('--timeouts') ?? '4s,30s')
  process.stdout.write(`${idleConnectionsTable(await measureIdleConnections({ gapsSec, mountsPerGap, timeouts }))}\n`)
}
