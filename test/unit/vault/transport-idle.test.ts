// How long the Vault transport keeps an idle connection for the next call. Vault and OpenBao
// send no Keep-Alive hint, which a local HTTP server can be made to do (keepAliveTimeout 0);
// time is Node's mocked timers (node:test MockTimers), which also drive undici's own timers,
// so nothing here waits for the clock.
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { mock } from 'node:test'
import { setImmediate as turn } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { DEFAULT_VAULT_IDLE_CONNECTION_MS } from '../../../src/config/config.js'
import { VaultTransport, defaultTransportOptions, type VaultTransportOptions } from '../../../src/vault/transport.js'

interface Server {
  url: string
  /** Every connection the server accepted, in order. */
  sockets: Socket[]
  isOpen(i: number): boolean
  /**
   * Lets sockets run until connection `i` has closed, or 10 s of real time went by: a bound
   * on a hang, not a speed limit (a close takes a few turns of the event loop).
   */
  settle(i: number): Promise<void>
}

async function server(t: Test, keepAliveHint?: number): Promise<Server> {
  const sockets: Socket[] = []
  const open = new Set<Socket>()
  const s = http.createServer((_req, res) => {
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' }
    if (keepAliveHint !== undefined) headers['keep-alive'] = `timeout=${keepAliveHint}`
    res.writeHead(200, headers).end('{"data":{}}')
  })
  // No Keep-Alive header and no idle timeout of the server's own, as Vault's 5 minutes are
  // beyond every step here: only the client closes an idle connection.
  s.keepAliveTimeout = 0
  s.on('connection', (socket: Socket) => {
    sockets.push(socket)
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    s.closeAllConnections()
    return new Promise<void>((r) => s.close(() => r()))
  })
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    sockets,
    isOpen: (i) => open.has(sockets[i]!),
    settle: async (i) => {
      const until = Date.now() + 10_000
      while (open.has(sockets[i]!) && Date.now() < until) await turn()
    },
  }
}

async function transport(t: Test, url: string, extra: Partial<VaultTransportOptions> = {}): Promise<VaultTransport> {
  const tr = await VaultTransport.create(
    { address: url, tls: { skipVerify: false } },
    { ...defaultTransportOptions(64 * 1024), ...extra },
  )
  t.teardown(() => tr.close())
  return tr
}

const get = (tr: VaultTransport) => tr.call({ method: 'GET', path: 'sys/health', timeoutMs: 10_000 })

/** Moves mocked time on in half-second steps, letting sockets and promises run between them. */
async function advance(ms: number): Promise<void> {
  for (let done = 0; done < ms; done += 500) {
    mock.timers.tick(Math.min(500, ms - done))
    for (let i = 0; i < 5; i++) await turn()
  }
}

t.beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }))
t.afterEach(() => mock.timers.reset())

t.test('an idle connection is kept for the next call well past undici’s 4 s default', async (t) => {
  const s = await server(t)
  const tr = await transport(t, s.url)
  await get(tr)
  t.equal(s.sockets.length, 1)

  await advance(DEFAULT_VAULT_IDLE_CONNECTION_MS - 5_000)
  t.ok(s.isOpen(0), '25 s idle: still open')
  await get(tr)
  t.equal(s.sockets.length, 1, 'the second call reused the connection')

  await advance(DEFAULT_VAULT_IDLE_CONNECTION_MS + 2_000)
  await s.settle(0)
  t.notOk(s.isOpen(0), 'closed by the provider once idle past the timeout')
  await get(tr)
  t.equal(s.sockets.length, 2, 'the next call opens a new one')
})

t.test('-vault-idle-connection-timeout sets it', async (t) => {
  const s = await server(t)
  const tr = await transport(t, s.url, { idleConnectionMs: 2_000 })
  await get(tr)
  await advance(1_500)
  await get(tr)
  t.equal(s.sockets.length, 1, 'reused before the timeout')
  await advance(2_500)
  await s.settle(0)
  t.notOk(s.isOpen(0), 'closed after it')
})

t.test('a shorter Keep-Alive hint from a proxy in front of Vault wins', async (t) => {
  const s = await server(t, 5)
  const tr = await transport(t, s.url)
  await get(tr)
  // undici leaves a 2 s margin before a hinted timeout: closed after ~3 s, not 30 s.
  await advance(4_000)
  await s.settle(0)
  t.notOk(s.isOpen(0))
})

t.test('a longer hint does not keep it past the timeout', async (t) => {
  const s = await server(t, 600)
  const tr = await transport(t, s.url, { idleConnectionMs: 3_000 })
  await get(tr)
  await advance(2_000)
  await get(tr)
  t.equal(s.sockets.length, 1, 'reused before the timeout')
  await advance(3_500)
  await s.settle(0)
  t.notOk(s.isOpen(0), 'closed after the provider’s own timeout, not the hint’s 10 minutes')
})
