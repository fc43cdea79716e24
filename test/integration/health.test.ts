// Health: HTTP liveness and readiness (a real Version call over the socket),
// grpc.health.v1.Health on the socket, and Vault reachability that never makes
// the provider unready.
import { join } from 'node:path'
import { Writable } from 'node:stream'
import t from 'tap'
import { buildProvider } from '../../src/app.js'
import { loadConfig } from '../../src/config/config.js'
import { createLogger } from '../../src/observability/logger.js'
import { checkGrpcHealth, checkSocket } from '../../src/server/health.js'
import { findLeaks } from '../support/leaks.js'
import { freePort } from '../support/ports.js'
import { healthPort, startProvider } from '../support/provider.js'
import { makeTempDir } from '../support/tmp.js'

async function get(port: number, path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`)
  const text = await res.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    /* text */
  }
  return { status: res.status, body }
}

t.test('readiness fails once the gRPC server is stopped while HTTP still runs', async (t) => {
  const dir = await makeTempDir('vcp-health-')
  t.teardown(() => dir.cleanup())
  const socketPath = join(dir.path, 'vault.sock')
  const logLines: string[] = []
  const logger = createLogger(
    'debug',
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        logLines.push(chunk.toString())
        cb()
      },
    }),
  )
  const config = loadConfig(
    [`-endpoint=${socketPath}`, '-health-addr=127.0.0.1:0', `-hmac-key-file=${join(dir.path, 'hmac.key')}`],
    {},
  )
  const provider = await buildProvider(config, logger, {})
  t.teardown(() => provider.close(1000))
  await provider.server.start()
  const port = await provider.http.start()
  t.ok(port, 'HTTP port bound')

  const live = await get(port!, '/health/live')
  t.equal(live.status, 200)
  const ready = await get(port!, '/health/ready')
  t.equal(ready.status, 200, JSON.stringify(ready.body))
  t.match(ready.body.detail, /answers Version: vault-csi-provider-ts/)

  t.same(await checkGrpcHealth(socketPath), { ok: true, status: 'SERVING' }, 'grpc.health.v1 Check("")')
  t.same(await checkGrpcHealth(socketPath, 'v1alpha1.CSIDriverProvider'), { ok: true, status: 'SERVING' })
  const unknown = await checkGrpcHealth(socketPath, 'no.such.Service')
  t.equal(unknown.ok, false)
  t.match(unknown.status, /^NOT_FOUND/, 'an unknown service is NOT_FOUND')

  await provider.server.stop(1000)
  const notReady = await get(port!, '/health/ready')
  t.equal(notReady.status, 503, 'not ready without the gRPC server')
  t.equal(notReady.body.status, 'unavailable')
  t.match(notReady.body.detail, /Version over .*vault\.sock failed/)
  t.equal((await get(port!, '/health/live')).status, 200, 'still live: the process answers')
  t.equal((await checkSocket(socketPath)).ok, false)
  t.same(findLeaks(logLines.join(''), []), [], 'log-leak check')
})

t.test('the daemon: probes on -health-addr; an unreachable Vault leaves it ready', async (t) => {
  // A port nobody listens on: Vault is "down".
  const deadPort = await freePort()
  const provider = await startProvider({
    args: ['-health-addr=127.0.0.1:0', `-vault-addr=http://127.0.0.1:${deadPort}`],
  })
  t.teardown(() => provider.stop())
  const port = await healthPort(provider)
  t.equal((await get(port, '/health/live')).status, 200)
  const ready = await get(port, '/health/ready')
  t.equal(ready.status, 200, 'ready although Vault is unreachable')
  const vault = await get(port, '/health/vault')
  t.equal(vault.status, 503)
  t.equal(vault.body.status, 'unreachable')
  t.match(vault.body.detail, /ECONNREFUSED/)
  t.same(await checkGrpcHealth(provider.socketPath), { ok: true, status: 'SERVING' })

  // After SIGTERM the socket is gone; a new process is needed for probes again.
  const exit = await provider.stop('SIGTERM')
  t.equal(exit.code, 0)
  await t.rejects(fetch(`http://127.0.0.1:${port}/health/live`), 'the HTTP server is closed on shutdown')
  t.same(findLeaks(await provider.logs(), []), [], 'log-leak check')
})

t.test('a health port already in use is reported, and the socket is still served', async (t) => {
  const first = await startProvider({ args: ['-health-addr=127.0.0.1:0'] })
  t.teardown(() => first.stop())
  const port = await healthPort(first)
  const second = await startProvider({ args: [`-health-addr=127.0.0.1:${port}`] })
  t.teardown(() => second.stop())
  t.equal((await checkSocket(second.socketPath)).ok, true, 'the provider API is served')
  const lines = await second.logLines()
  t.ok(
    lines.some((l) => l.msg === 'cannot serve health and metrics over HTTP' && l.level === 'error'),
    'the bind failure is logged as an error',
  )
  t.same(findLeaks(await second.logs(), []), [], 'log-leak check')
})
