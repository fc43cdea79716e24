// How long the Vault transport keeps an idle connection for the next call, against a local
// server that, like Vault and OpenBao, sends no Keep-Alive hint (test/support/idle-server.ts).
// Time is Node's mocked timers, which also drive undici's own: nothing here waits for the clock.
import { mock } from 'node:test'
import t, { type Test } from 'tap'
import { DEFAULT_VAULT_IDLE_CONNECTION_MS } from '../../../../src/config/config.js'
import type { VaultTransport, VaultTransportOptions } from '../../../../src/vault/transport/transport.js'
import { testTransport, testTransportOptions } from '../../../support/transport-options.js'
import { advance, startIdleServer } from '../../../support/idle-server.js'

const server = (t: Test, keepAliveHint?: number) => startIdleServer(t, '{"data":{}}', keepAliveHint)

async function transport(t: Test, url: string, extra: Partial<VaultTransportOptions> = {}): Promise<VaultTransport> {
  const tr = await testTransport(
    { address: url, tls: { skipVerify: false } },
    { ...testTransportOptions(64 * 1024), ...extra },
  )
  t.teardown(() => tr.close())
  return tr
}

const get = (tr: VaultTransport) => tr.call({ tenant: 'test', method: 'GET', path: 'sys/health', timeoutMs: 10_000 })

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
  // Closed once the hint's 5 s have passed, long before the provider's own 30 s.
  await advance(6_000)
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
