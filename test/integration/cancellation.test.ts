// A Mount the driver gives up on stops. Forty objects behind a proxy that delays every request
// (so that reading them takes seconds); the driver's own client is killed once the first reads
// are on their way, as when kubelet gives up. The provider sees the call cancelled, aborts its
// Vault calls in flight and starts no new one: OpenBao's audit log shows a few of the forty
// reads, against all forty for the same Mount left to finish. The same for rendering: a Mount of
// many keystores stops before its next object when the driver cancels it (CANCELLED) or its
// deadline passes (DEADLINE_EXCEEDED), naming that object.
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { MOUNT_FETCH_CONCURRENCY } from '../../src/mount/mount.js'
import { hostileBundle, rsaPublicKey } from '../support/cert-builder.js'
import { DRIVER_CLIENT_BIN } from '../support/driver-client.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { Fixture, type PodSpec } from '../support/fixture.js'
import { tempDirFor } from '../support/tmp.js'

const OBJECTS = 40
const objects = Array.from({ length: OBJECTS }, (_, i) => ({
  objectName: `o${i}`,
  secretPath: `secret/data/cancel-${i}`,
  secretKey: 'value',
}))

/** Waits for a condition the system reaches by itself (an event, not time), up to a bound. */
async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const bound = Date.now() + 60_000
  for (;;) {
    const v = await probe()
    if (v !== undefined) return v
    if (Date.now() > bound) throw new Error(`gave up waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** The driver's own client running one Mount of `pod` (its own process, killed as kubelet's call ends). */
async function driverClient(
  t: Test,
  fx: Fixture,
  pod: PodSpec,
  params: Record<string, unknown>,
  timeoutMs: number,
): Promise<{ kill(signal: NodeJS.Signals): void; exited: Promise<unknown> }> {
  const dir = await tempDirFor(t)
  const attrFile = join(dir, 'attributes.json')
  const secFile = join(dir, 'secrets.json')
  await writeFile(attrFile, JSON.stringify(fx.buildAttributes({ pod, params })))
  await writeFile(secFile, 'null')
  const client: ChildProcess = spawn(
    DRIVER_CLIENT_BIN,
    [
      'mount',
      '--socket-dir',
      fx.provider.socketDir,
      '--provider',
      'vault',
      '--target',
      dir,
      '--permission',
      '420',
      '--attributes-file',
      attrFile,
      '--secrets-file',
      secFile,
      '--timeout',
      `${Math.round(timeoutMs)}ms`,
    ],
    { stdio: 'ignore' },
  )
  const exited = new Promise((r) => client.once('exit', r))
  t.teardown(() => {
    client.kill('SIGKILL')
  })
  return { kill: (signal) => client.kill(signal), exited }
}

/** The provider's log line for the Mount of the pod named `name`, once it has ended. */
function mountLine(fx: Fixture, name: string): Promise<Record<string, any>> {
  return until(`the Mount of ${name} to end`, async () =>
    (await fx.provider.logLines()).find((l) => l.msg === 'mount' && l.pod === `default/${name}`),
  )
}

t.test('a cancelled Mount stops its Vault requests (OpenBao audit log)', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  const audit = await fx.bao.enableFileAudit()
  for (const o of objects) await fx.kvPut(o.secretPath.slice('secret/data/'.length), { value: o.objectName })
  const proxy = await startFaultProxy(fx.bao.port)
  t.teardown(() => proxy.close())
  proxy.setLatency(200)
  const params = { objects, vaultAddress: proxy.addr }
  const auditReads = async (): Promise<number> =>
    (
      (await fx.bao.readAuditLog(audit)) as Array<{ type?: string; request?: { path?: string; operation?: string } }>
    ).filter(
      (e) =>
        e.type === 'response' &&
        e.request?.operation === 'read' &&
        (e.request.path ?? '').startsWith('secret/data/cancel-'),
    ).length
  const proxyReads = (): number =>
    [...proxy.stats.byPath].filter(([k]) => k.startsWith('GET /v1/secret/data/cancel-')).reduce((n, [, c]) => n + c, 0)

  // Left to finish: every object is read.
  const whole = await fx.mount({ pod: { name: 'whole', uid: 'uid-whole' }, params, timeoutMs: 120_000 })
  t.ok(whole.result.ok, whole.result.message)
  t.equal(await auditReads(), OBJECTS, 'all forty reads reached OpenBao')

  // The driver's client for the same Mount of another pod, killed once its first reads are out.
  const before = proxyReads()
  const client = await driverClient(t, fx, { name: 'leaving', uid: 'uid-leaving' }, params, 120_000)
  await until('the first reads', () => (proxyReads() - before >= MOUNT_FETCH_CONCURRENCY ? true : undefined))
  client.kill('SIGKILL')
  await client.exited

  const line = await mountLine(fx, 'leaving')
  t.equal(line.outcome, 'failure')
  t.equal(line.code, 'CANCELLED', 'the caller left')
  t.match(String(line.reason), /cancelled the Mount/)
  const sent = proxyReads() - before
  t.ok(sent <= 2 * MOUNT_FETCH_CONCURRENCY, `the provider sent ${sent} of ${OBJECTS} reads, then stopped`)
  const reached = (await auditReads()) - OBJECTS
  t.ok(reached < OBJECTS / 4, `${reached} of ${OBJECTS} reads reached OpenBao`)
})

t.test('a Mount of many keystores stops rendering when the driver cancels it, or at its deadline', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  const audit = await fx.bao.enableFileAudit()
  // An ordinary RSA-2048 key, its certificate and CA; 100 keystores of it stay within a Mount's render work budget.
  await fx.kvPut('keystore', {
    bundle: hostileBundle({ chainLength: 1, decoys: 0, decoyKey: () => rsaPublicKey(2048, 17) }).pem,
  })
  const KEYSTORES = 100
  const params = {
    objects: Array.from({ length: KEYSTORES }, (_, i) => ({
      objectName: `k${i}`,
      secretPath: 'secret/data/keystore',
      format: 'pkcs12',
    })),
  }
  const keystoreReads = async (): Promise<number> =>
    (
      (await fx.bao.readAuditLog(audit)) as Array<{ type?: string; request?: { path?: string; operation?: string } }>
    ).filter(
      (e) => e.type === 'response' && e.request?.operation === 'read' && e.request.path === 'secret/data/keystore',
    ).length
  /** The object a stopped render names: its index among the keystores. */
  const stoppedAt = (reason: string, re: RegExp): number => Number(re.exec(reason)?.[1] ?? Number.NaN)

  // Left to finish: every keystore is rendered; how long that takes on this machine sets the rest.
  const whole = await fx.mount({ pod: { name: 'whole', uid: 'uid-whole' }, params, timeoutMs: 120_000 })
  t.ok(whole.result.ok, whole.result.message)
  t.equal(whole.files.size, KEYSTORES, 'every keystore written')
  const wholeMs = Number((await mountLine(fx, 'whole')).durationMs)
  t.comment(`the whole Mount took ${wholeMs} ms`)

  // The driver's client for another pod, killed once OpenBao has answered its read: rendering has begun.
  const readsBefore = await keystoreReads()
  const client = await driverClient(t, fx, { name: 'leaving', uid: 'uid-leaving' }, params, 120_000)
  await until('the keystore read', async () => ((await keystoreReads()) > readsBefore ? true : undefined))
  client.kill('SIGKILL')
  await client.exited
  const left = await mountLine(fx, 'leaving')
  t.equal(left.outcome, 'failure')
  t.equal(left.code, 'CANCELLED', 'cancelled, not out of time')
  const cancelledAt = stoppedAt(
    String(left.reason),
    /^the driver cancelled the Mount before object "k(\d+)" \(GET secret\/data\/keystore\) was rendered; nothing more was rendered$/,
  )
  t.ok(cancelledAt < KEYSTORES - 1, `the render stopped before object "k${cancelledAt}" of ${KEYSTORES}`)

  // A deadline half as long as the whole Mount took: the provider answers in time, naming where it stopped.
  const late = await fx.mount({
    pod: { name: 'late', uid: 'uid-late' },
    params,
    // The driver's deadline less the provider's 2 s margin is the Mount's own.
    timeoutMs: Math.round(2_000 + wholeMs / 2),
  })
  t.equal(late.result.grpcCode, 'DeadlineExceeded')
  const lateAt = stoppedAt(
    late.result.message,
    /the Mount ran out of time before object "k(\d+)" \(GET secret\/data\/keystore\) was rendered/,
  )
  t.ok(lateAt < KEYSTORES - 1, `the render stopped at its deadline before object "k${lateAt}" of ${KEYSTORES}`)
  t.equal((await mountLine(fx, 'late')).code, 'DEADLINE_EXCEEDED')
})
