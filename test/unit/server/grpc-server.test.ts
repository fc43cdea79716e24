// The gRPC adapter's cancellation: a Mount the driver gives up on is aborted (its signal fires
// with the reason), and a Mount that was answered is not, although grpc-js emits 'cancelled'
// after every call. The Mount logic is a stand-in that records the deadline it was given; the
// calls come from the driver's own client over a real unix socket.
import { getMaxListeners, once } from 'node:events'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { MountService } from '../../../src/mount/service.js'
import { createLogger } from '../../../src/observability/logger.js'
import { MOUNT_SIGNAL_LISTENERS, ProviderServer } from '../../../src/server/grpc-server.js'
import type { Deadline } from '../../../src/util/deadline.js'
import { systemTime } from '../../../src/util/time.js'
import { driverMount } from '../../support/driver-client.js'
import { tempDirFor } from '../../support/tmp.js'

const ATTRIBUTES = { secretProviderClass: 'spc' }

async function serve(
  t: Test,
  mount: (deadline: Deadline) => Promise<unknown>,
): Promise<{ socketDir: string; targetPath: string }> {
  const targetPath = await tempDirFor(t, 'vcp-grpc-server-')
  const socketDir = join(targetPath, 'sock')
  const mountService = { mount: (_req: unknown, deadline: Deadline) => mount(deadline) } as unknown as MountService
  const server = new ProviderServer({
    socketPath: join(socketDir, 'vault.sock'),
    mountService,
    mountTimeoutMs: 60_000,
    logger: createLogger('off'),
    // The system's clock: the Mount's deadline is set against the driver's, a real one.
    time: systemTime(),
  })
  await server.start()
  t.teardown(() => server.stop(1_000))
  return { socketDir, targetPath }
}

t.test('an answered Mount is not aborted by the "cancelled" grpc-js emits after every call', async (t) => {
  const signals: AbortSignal[] = []
  const { socketDir, targetPath } = await serve(t, async (deadline) => {
    if (deadline.signal === undefined) throw new Error('a Mount without a signal')
    signals.push(deadline.signal)
    return { objects: [{ id: 'a', version: 'v1', files: [{ path: 'a', mode: 0o644, contents: Buffer.from('x') }] }] }
  })
  for (let i = 0; i < 3; i++) {
    const res = await driverMount({ socketDir, provider: 'vault', targetPath, attributes: ATTRIBUTES, secrets: 'null' })
    t.ok(res.ok, `Mount ${i + 1} answered ${res.message}`)
  }
  // The driver's client has exited, so the server has sent its status and grpc-js has run its
  // cancel notification (a process.nextTick after the status, before any I/O callback of ours).
  t.equal(signals.length, 3)
  t.same(
    signals.map((s) => s.aborted),
    [false, false, false],
    'no answered Mount was aborted',
  )
  t.equal(new Set(signals).size, 3, 'a signal of its own per Mount: listeners never pile up on one object')
  t.same(
    signals.map((s) => getMaxListeners(s)),
    [MOUNT_SIGNAL_LISTENERS, MOUNT_SIGNAL_LISTENERS, MOUNT_SIGNAL_LISTENERS],
    "room for a Mount's listeners",
  )
})

t.test('a Mount the driver gives up on is aborted, with the reason', async (t) => {
  let aborted: Promise<unknown> | undefined
  const { socketDir, targetPath } = await serve(t, async (deadline) => {
    const signal = deadline.signal
    if (signal === undefined) throw new Error('a Mount without a signal')
    aborted = once(signal, 'abort').then(() => signal.reason)
    await aborted
    throw new Error('not reached: the driver is gone')
  })
  // The driver's deadline passes first: its client cancels the call (RST_STREAM).
  const res = await driverMount({
    socketDir,
    provider: 'vault',
    targetPath,
    attributes: ATTRIBUTES,
    secrets: 'null',
    timeoutMs: 2_500,
  })
  t.notOk(res.ok)
  t.equal(res.grpcCode, 'DeadlineExceeded')
  t.ok(aborted, 'the Mount started')
  const reason = await aborted
  t.match(String(reason), /the driver cancelled the Mount call/)
})
