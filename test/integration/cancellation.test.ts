// A Mount the driver gives up on stops talking to Vault. Forty objects behind a proxy that
// delays every request (so that reading them takes seconds); the driver's own client is killed
// once the first reads are on their way, as when kubelet gives up. The provider sees the call
// cancelled, aborts its Vault calls in flight and starts no new one: OpenBao's audit log shows
// a few of the forty reads, against all forty for the same Mount left to finish.
import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { MOUNT_FETCH_CONCURRENCY } from '../../src/mount/mount.js'
import { DRIVER_CLIENT_BIN } from '../support/driver-client.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { Fixture } from '../support/fixture.js'
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
  const dir = await tempDirFor(t)
  const attrFile = join(dir, 'attributes.json')
  const secFile = join(dir, 'secrets.json')
  await writeFile(
    attrFile,
    JSON.stringify(fx.buildAttributes({ pod: { name: 'leaving', uid: 'uid-leaving' }, params })),
  )
  await writeFile(secFile, 'null')
  const before = proxyReads()
  const client = spawn(
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
      '120000ms',
    ],
    { stdio: 'ignore' },
  )
  const exited = new Promise((r) => client.once('exit', r))
  await until('the first reads', () => (proxyReads() - before >= MOUNT_FETCH_CONCURRENCY ? true : undefined))
  client.kill('SIGKILL')
  await exited

  const line = await until('the Mount to end', async () =>
    (await fx.provider.logLines()).find((l) => l.msg === 'mount' && JSON.stringify(l).includes('leaving')),
  )
  t.equal(line.outcome, 'failure')
  t.equal(line.code, 'DEADLINE_EXCEEDED', 'the caller left')
  t.match(String(line.reason), /cancelled the Mount/)
  const sent = proxyReads() - before
  t.ok(sent <= 2 * MOUNT_FETCH_CONCURRENCY, `the provider sent ${sent} of ${OBJECTS} reads, then stopped`)
  const reached = (await auditReads()) - OBJECTS
  t.ok(reached < OBJECTS / 4, `${reached} of ${OBJECTS} reads reached OpenBao`)
})
