// Restarts and upgrades without failed Mounts: SIGTERM drains the calls in
// flight; a new instance started beside the old one takes the socket over
// under continuous traffic; kill -9 then restart serves again at once.
import { randomUUID } from 'node:crypto'
import { lstat, unlink } from 'node:fs/promises'
import t from 'tap'
import { driverVersion } from '../support/driver-client.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { Fixture, type PodSpec } from '../support/fixture.js'
import { connectProvider } from '../support/grpc-client.js'
import { findLeaks } from '../support/leaks.js'
import { startProvider, type ProviderProcess } from '../support/provider.js'

t.setTimeout(5 * 60_000)

const SECRET = `restart-${randomUUID()}`
const params = { objects: [{ objectName: 'pw', secretPath: 'secret/data/app', secretKey: 'password' }] }
const figures: Record<string, unknown> = {}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function waitFor(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

let fx: Fixture
const allLogs: ProviderProcess[] = []
const allJwts: string[] = []

t.before(async () => {
  fx = await Fixture.start()
  allLogs.push(fx.provider)
  await fx.kvPut('app', { password: SECRET })
})

t.teardown(async () => {
  t.comment(`restart figures: ${JSON.stringify(figures)}`)
  await fx?.stop()
})

t.test('SIGTERM with 50 Mounts in flight: every one completes, then a clean exit', async (t) => {
  const proxy = await startFaultProxy(fx.bao.port)
  t.teardown(() => proxy.close())
  proxy.setLatency(1_500)
  const provider = await startProvider({ args: [`-vault-addr=${proxy.addr}`] })
  allLogs.push(provider)
  const local = Fixture.attach(fx.bao, provider)
  const mounts = Array.from({ length: 50 }, (_, i) =>
    local.mount({ params, pod: { name: `drain-${i}`, uid: randomUUID() }, timeoutMs: 60_000 }),
  )
  // Every Mount has reached Vault (its login is on the slow wire) before the signal.
  await waitFor('50 logins in flight', () => (proxy.stats.byPath.get('POST /v1/auth/jwt/login') ?? 0) >= 50, 60_000)
  provider.child.kill('SIGTERM')
  const results = await Promise.all(mounts)
  const failed = results.filter((r) => !r.result.ok)
  t.equal(failed.length, 0, failed.map((f) => f.result.message).join('\n'))
  for (const r of results) t.equal(r.files.get('pw')?.bytes.toString(), SECRET)
  const exit = await provider.exited
  t.equal(exit.code, 0, 'exits cleanly after draining')
  figures.sigtermInFlight = results.length
  figures.sigtermFailed = failed.length
  allJwts.push(...local.issuedJwts)
})

t.test('socket handover between two instances under continuous Mount traffic: zero failed Mounts', async (t) => {
  const proxy = await startFaultProxy(fx.bao.port)
  t.teardown(() => proxy.close())
  // A little latency keeps Mounts in flight across the handover.
  proxy.setLatency(100)
  const args = [`-vault-addr=${proxy.addr}`]
  const oldInstance = await startProvider({ args })
  allLogs.push(oldInstance)
  const local = Fixture.attach(fx.bao, oldInstance)

  interface Done {
    via: string
    ok: boolean
    message: string
    at: number
  }
  const done: Done[] = []
  let running = true
  const pods: PodSpec[] = Array.from({ length: 3 }, (_, i) => ({ name: `steady-${i}`, uid: randomUUID() }))
  // The driver's own client, one process (so one dial of the path) per Mount.
  const driverLoops = pods.map(async (pod) => {
    while (running) {
      const { result } = await local.mount({ params, pod, timeoutMs: 30_000 })
      done.push({ via: 'driver-client', ok: result.ok, message: result.message, at: Date.now() })
    }
  })
  // And one long-lived connection, as the driver keeps its ClientConn: it must move on GOAWAY.
  const client = connectProvider(oldInstance.socketPath)
  const attributes = JSON.stringify(local.buildAttributes({ params, pod: { name: 'long-lived', uid: randomUUID() } }))
  const grpcLoop = (async () => {
    while (running) {
      const r = await client.mount({ attributes }, 30_000)
      done.push({ via: 'long-lived connection', ok: r.ok, message: r.message, at: Date.now() })
    }
  })()

  await sleep(2_000)
  const handoverStarted = Date.now()
  const newInstance = await startProvider({ socketDir: oldInstance.socketDir, args })
  allLogs.push(newInstance)
  await waitFor('the new instance serving', async () => /serving the provider API/.test(await newInstance.logs()))
  // The old instance drains, then stands by (a DaemonSet would restart a container that exits).
  await waitFor('the old instance to finish its handover', async () =>
    /handover complete/.test(await oldInstance.logs()),
  )
  const handoverEnded = Date.now()
  await sleep(2_000)
  running = false
  await Promise.all([...driverLoops, grpcLoop])
  client.close()

  t.match(await oldInstance.logs(), /standing by until this pod is stopped/)
  const oldExit = await oldInstance.stop('SIGTERM')
  t.equal(oldExit.code, 0, 'the replaced instance exits cleanly on SIGTERM')
  t.match(await newInstance.logs(), /took over the socket from a running instance/)
  t.match(await oldInstance.logs(), /another instance took over the socket/)
  t.match(await oldInstance.logs(), /handover complete/)
  const failed = done.filter((d) => !d.ok)
  t.equal(failed.length, 0, failed.map((f) => `${f.via}: ${f.message}`).join('\n'))
  const during = done.filter((d) => d.at >= handoverStarted && d.at <= handoverEnded)
  t.ok(during.length > 0, `${during.length} Mounts completed during the handover`)
  const newLines = (await newInstance.logLines()).filter((l) => l.msg === 'mount' && l.outcome === 'success')
  t.ok(newLines.length > 0, 'the new instance served Mounts after the handover')
  t.ok(
    done.some((d) => d.via === 'long-lived connection' && d.at > handoverEnded),
    'the long-lived connection moved to the new instance',
  )
  figures.handover = {
    totalMounts: done.length,
    duringHandover: during.length,
    failed: failed.length,
    handoverMs: handoverEnded - handoverStarted,
  }
  allJwts.push(...local.issuedJwts)
  await newInstance.stop()
})

// What kill -9 leaves is a socket file nobody listens on: connecting to it is refused at once, so
// the restart replaces it without waiting for the probe's timeout. Asserted on the reason the new
// instance logs, not on a time, which would measure this machine's load instead.
t.test('kill -9, then a restart replaces the stale socket at once and serves', async (t) => {
  const first = await startProvider({ args: [`-vault-addr=${fx.bao.addr}`] })
  allLogs.push(first)
  const local = Fixture.attach(fx.bao, first)
  t.ok((await local.mount({ params })).result.ok)
  await first.stop('SIGKILL')
  const spawned = Date.now()
  const second = await startProvider({ socketDir: first.socketDir, args: [`-vault-addr=${fx.bao.addr}`] })
  allLogs.push(second)
  const serving = Date.now() - spawned
  const again = Fixture.attach(fx.bao, second)
  const { result } = await again.mount({ params })
  const mounted = Date.now() - spawned
  t.ok(result.ok, result.message)
  const removed = (await second.logLines()).filter((l) => l.msg === 'removed a stale socket file')
  t.equal(removed.length, 1, 'the new instance removed the stale socket file')
  t.match(removed[0]?.why, /^nothing listens on it \(ECONNREFUSED\)$/, 'decided by a refused connect, not a timeout')
  t.equal((await driverVersion({ socketDir: second.socketDir, provider: 'vault' })).ok, true)
  figures.killRestart = { servingMs: serving, firstMountMs: mounted }
  allJwts.push(...local.issuedJwts, ...again.issuedJwts)
  await second.stop()
})

t.test('a socket file that disappears is bound again (an older version unlinks the path when it closes)', async (t) => {
  const provider = await startProvider({ args: [`-vault-addr=${fx.bao.addr}`] })
  allLogs.push(provider)
  t.teardown(() => provider.stop())
  const local = Fixture.attach(fx.bao, provider)
  await unlink(provider.socketPath)
  const gone = Date.now()
  await waitFor(
    'the socket file again',
    async () => (await lstat(provider.socketPath).catch(() => undefined))?.isSocket() === true,
    5_000,
  )
  figures.socketRecreatedMs = Date.now() - gone
  const { result } = await local.mount({ params })
  t.ok(result.ok, result.message)
  t.match(await provider.logs(), /the socket file disappeared; binding it again/)
  allJwts.push(...local.issuedJwts)
})

t.test('no secret, JWT or token in any instance log', async (t) => {
  for (const p of allLogs) {
    const leaks = findLeaks(await p.logs(), [SECRET, ...allJwts, ...fx.issuedJwts])
    t.same(leaks, [], p.logPath)
  }
})
