// What the daemon finds at its socket path before binding: the decision behind
// "removed a stale socket file" and "took over the socket from a running instance".
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { lstat, writeFile } from 'node:fs/promises'
import net from 'node:net'
import { dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { inspectSocketPath } from '../../../src/server/socket.js'
import { tempDirFor } from '../../support/tmp.js'

/** A socket path in a directory of the test's own, removed at its end. */
async function socketPathIn(t: Test, ...sub: string[]): Promise<string> {
  return join(await tempDirFor(t, 'vcp-socket-'), ...sub, 'vault.sock')
}

t.test('nothing at the path (its directory is created)', async (t) => {
  const socketPath = await socketPathIn(t, 'sub')
  t.same(await inspectSocketPath(socketPath), { state: 'none' })
  t.ok((await lstat(dirname(socketPath))).isDirectory(), 'the socket directory exists')
})

t.test('a file that is not a socket is refused, never replaced', async (t) => {
  const socketPath = await socketPathIn(t)
  await writeFile(socketPath, 'not a socket')
  await t.rejects(inspectSocketPath(socketPath), /exists and is not a socket; refusing to replace it/)
})

t.test('a live server', async (t) => {
  const socketPath = await socketPathIn(t)
  const server = net.createServer((c) => c.destroy())
  server.listen(socketPath)
  await once(server, 'listening')
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  t.same(await inspectSocketPath(socketPath), { state: 'live' })
})

t.test('the socket file a killed process left: stale, because the connect is refused', async (t) => {
  const socketPath = await socketPathIn(t)
  // A process killed with SIGKILL leaves its socket file behind, as kill -9 of the daemon does.
  const child = spawn(
    process.execPath,
    [
      '-e',
      "require('net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))",
      socketPath,
    ],
    { stdio: 'ignore' },
  )
  const [, signal] = (await once(child, 'exit')) as [number | null, string | null]
  t.equal(signal, 'SIGKILL')
  t.ok((await lstat(socketPath)).isSocket(), 'the socket file is left')
  t.same(await inspectSocketPath(socketPath), { state: 'stale', why: 'nothing listens on it (ECONNREFUSED)' })
})
