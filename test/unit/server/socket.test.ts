// What the daemon finds at its socket path before binding: the decision behind
// "removed a stale socket file" and "took over the socket from a running instance".
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { lstat, writeFile } from 'node:fs/promises'
import net from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { inspectSocketPath } from '../../../src/server/socket.js'
import { makeTempDir } from '../../support/tmp.js'

t.test('nothing at the path (its directory is created)', async (t) => {
  const tmp = await makeTempDir('vcp-socket-')
  t.teardown(tmp.cleanup)
  const socketPath = join(tmp.path, 'sub', 'vault.sock')
  t.same(await inspectSocketPath(socketPath), { state: 'none' })
  t.ok((await lstat(join(tmp.path, 'sub'))).isDirectory(), 'the socket directory exists')
})

t.test('a file that is not a socket is refused, never replaced', async (t) => {
  const tmp = await makeTempDir('vcp-socket-')
  t.teardown(tmp.cleanup)
  const socketPath = join(tmp.path, 'vault.sock')
  await writeFile(socketPath, 'not a socket')
  await t.rejects(inspectSocketPath(socketPath), /exists and is not a socket; refusing to replace it/)
})

t.test('a live server', async (t) => {
  const tmp = await makeTempDir('vcp-socket-')
  t.teardown(tmp.cleanup)
  const socketPath = join(tmp.path, 'vault.sock')
  const server = net.createServer((c) => c.destroy())
  server.listen(socketPath)
  await once(server, 'listening')
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  t.same(await inspectSocketPath(socketPath), { state: 'live' })
})

t.test('the socket file a killed process left: stale, because the connect is refused', async (t) => {
  const tmp = await makeTempDir('vcp-socket-')
  t.teardown(tmp.cleanup)
  const socketPath = join(tmp.path, 'vault.sock')
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
