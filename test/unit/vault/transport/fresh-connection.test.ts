// A call's own connection (fresh-connection.ts): alone over a real pool, then through a whole transport,
// where it is still one of its tenant's slots and still passes the allow-list's connection guard.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { Pool } from 'undici'
import type { ProviderError } from '../../../../src/errors.js'
import type { VaultConnectionError } from '../../../../src/vault/transport/call-errors.js'
import { freshConnections } from '../../../../src/vault/transport/fresh-connection.js'
import { MAX_CALLS_PER_TENANT, type VaultTransport } from '../../../../src/vault/transport/transport.js'
import { composed, outcome, serve } from '../../../support/dispatch.js'
import { testTransport, testTransportOptions } from '../../../support/transport-options.js'

t.test('a call asking for it gets a new connection, closed after it; the others share the pool', async (t) => {
  const server = await serve(t, (_req, res) => res.end('{}'))
  const opened: Pool[] = []
  const d = composed(t, server.url, [
    freshConnections(() => {
      const one = new Pool(server.url, { connections: 1 })
      opened.push(one)
      return one
    }),
  ])
  for (let i = 0; i < 3; i++) t.match(await outcome(d, { origin: server.url }), { status: 200 })
  const pooled = server.connections()
  for (let i = 0; i < 3; i++) {
    t.match(await outcome(d, { origin: server.url, freshConnection: true } as object), { status: 200 })
  }
  t.equal(opened.length, 3)
  t.equal(server.connections(), pooled + 3, 'each fresh call had a connection of its own')
  await new Promise((r) => setImmediate(r))
  t.ok(
    opened.every((one) => one.closed || one.destroyed),
    'each was closed once its call ended',
  )
  t.match(await outcome(d, { origin: server.url }), { status: 200 })
  t.equal(server.connections(), pooled + 3, 'and the pool went on with its own')
})

async function hangingServer(t: Test): Promise<{ address: string; connections: () => number }> {
  let connections = 0
  const server = http.createServer((req, res) => {
    // Answers only /v1/ok; every other request waits for its caller to give up.
    if (req.url === '/v1/ok') res.end('{}')
  })
  server.on('connection', () => connections++)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  return { address: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections }
}

t.test("through a transport: a fresh call is one of its tenant's slots", async (t) => {
  const { address } = await hangingServer(t)
  const tr: VaultTransport = await testTransport({ address, tls: { skipVerify: false } }, testTransportOptions(65536))
  t.teardown(() => tr.close())
  const held = Array.from({ length: MAX_CALLS_PER_TENANT }, () =>
    tr.call({ tenant: 'greedy', method: 'GET', path: 'hang', timeoutMs: 3000 }).catch((e: unknown) => e),
  )
  const waited = (await tr
    .call({ tenant: 'greedy', method: 'GET', path: 'ok', timeoutMs: 300, freshConnection: true })
    .catch((e: unknown) => e)) as VaultConnectionError
  t.match(waited.message, /this namespace's calls to the address were all in flight/, 'it waited for a slot')
  const other = await tr.call({ tenant: 'other', method: 'GET', path: 'ok', timeoutMs: 3000, freshConnection: true })
  t.equal(other.status, 200, "another namespace's fresh call goes through")
  await Promise.all(held)
})

t.test('through a transport: a fresh connection passes the connection guard like any other', async (t) => {
  const { address, connections } = await hangingServer(t)
  let allowed = true
  const tr = await testTransport(
    { address, tls: { skipVerify: false } },
    testTransportOptions(65536, { allowlist: { allows: () => allowed } }),
  )
  t.teardown(() => tr.close())
  t.equal(
    (await tr.call({ tenant: 'a', method: 'GET', path: 'ok', timeoutMs: 3000, freshConnection: true })).status,
    200,
  )
  allowed = false
  const refused = (await tr
    .call({ tenant: 'a', method: 'GET', path: 'ok', timeoutMs: 3000, freshConnection: true })
    .catch((e: unknown) => e)) as ProviderError
  t.equal(refused.code, 'VAULT_ADDRESS_NOT_ALLOWED')
  t.equal(connections(), 1, 'nothing was sent')
})
