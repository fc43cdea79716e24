// The transports of the process, shared by every namespace's Mounts: keyed only by what applies to
// the connection, and bounded so that one namespace pushes out only its own pools; a pool closed to
// make room never breaks the sessions that used it.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import type { VaultConnection } from '../../../../src/request/types.js'
import {
  MAX_TRANSPORTS_PER_TENANT,
  TransportRegistry,
  callThrough,
  connectionKey,
} from '../../../../src/vault/transport/registry.js'
import { SecureContexts } from '../../../../src/vault/transport/secure-contexts.js'
import { MAX_CALLS_PER_TENANT } from '../../../../src/vault/transport/transport.js'
import { testTransportOptions } from '../../../support/transport-options.js'

const opts = testTransportOptions(1024 * 1024, { maxTlsFileBytes: 16 * 1024 })

async function okServer(t: Test): Promise<string> {
  const server = http.createServer((_req, res) => res.end('{"data":{}}'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const http1 = (address: string, tls: Partial<VaultConnection['tls']> = {}): VaultConnection => ({
  address,
  tls: { skipVerify: false, ...tls },
})

t.test('TLS settings make no other pool for an address that speaks no TLS', async (t) => {
  const a = connectionKey(http1('http://vault:8200'))
  t.equal(connectionKey(http1('http://vault:8200', { caCertPath: '/x', serverName: 'y', skipVerify: true })), a)
  t.equal(
    connectionKey(http1('unix:///run/agent.sock', { caCertPath: '/x' })),
    connectionKey(http1('unix:///run/agent.sock')),
  )
  t.not(
    connectionKey(http1('https://vault:8200', { caCertPath: '/x' })),
    connectionKey(http1('https://vault:8200', { caCertPath: '/z' })),
    'over https a CA file is another pool',
  )
})

t.test('a namespace that names many addresses pushes out only its own pools', async (t) => {
  const address = await okServer(t)
  const registry = new TransportRegistry(opts, new SecureContexts(), 8)
  t.teardown(() => registry.close())
  const victim = await registry.get(http1(address), 'victim')
  for (let i = 0; i < 100; i++) await registry.get(http1(`http://127.0.0.${(i % 200) + 2}:${9000 + i}`), 'attacker')
  t.equal(registry.heldBy('victim'), 1)
  t.equal(registry.heldBy('attacker'), 7)
  t.equal(await registry.get(http1(address), 'victim'), victim, "the victim's pool is the same one")
  t.equal((await victim.call({ tenant: 'test', method: 'GET', path: 'secret/x', timeoutMs: 5000 })).status, 200)
})

t.test('one namespace holds at most MAX_TRANSPORTS_PER_TENANT pools, even with room to spare', async (t) => {
  const address = await okServer(t)
  const registry = new TransportRegistry(opts, new SecureContexts())
  t.teardown(() => registry.close())
  const victim = await registry.get(http1(address), 'victim')
  for (let i = 0; i < 40; i++) await registry.get(http1(`http://127.0.0.${i + 2}:9000`), 'attacker')
  t.equal(registry.heldBy('attacker'), MAX_TRANSPORTS_PER_TENANT)
  t.equal(await registry.get(http1(address), 'victim'), victim, "the victim's pool is the same one")
})

t.test('a call through a pool closed to make room goes out on its replacement', async (t) => {
  const address = await okServer(t)
  const registry = new TransportRegistry(opts, new SecureContexts(), 1)
  t.teardown(() => registry.close())
  const first = await registry.get(http1(address), 'victim')
  // A second pool with room for one: the victim's is retired (both hold one; the older tenant gives way).
  await registry.get(http1('http://127.0.0.9:9'), 'other')
  const answer = await callThrough(registry, http1(address), {
    tenant: 'victim',
    method: 'GET',
    path: 'x',
    timeoutMs: 5000,
  })
  t.equal(answer.status, 200)
  t.not(await registry.get(http1(address), 'victim'), first, 'a new pool')
  const stale = await first.call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 }).then(
    () => 'sent',
    (err: Error) => err.name,
  )
  t.equal(stale, 'TransportClosed', 'the retired pool sends nothing new')
})

t.test("one namespace's slow calls cannot hold every connection of an address", async (t) => {
  const held: http.ServerResponse[] = []
  let inFlight = 0
  let most = 0
  const server = http.createServer((req, res) => {
    inFlight++
    most = Math.max(most, inFlight)
    res.on('close', () => inFlight--)
    if (req.url?.includes('slow')) held.push(res)
    else res.end('{"data":{}}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  const address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const registry = new TransportRegistry(opts, new SecureContexts())
  t.teardown(() => registry.close())
  const slow = Array.from({ length: MAX_CALLS_PER_TENANT + 8 }, () =>
    callThrough(registry, http1(address), { tenant: 'attacker', method: 'GET', path: 'slow', timeoutMs: 30_000 }),
  )
  while (held.length < MAX_CALLS_PER_TENANT) await new Promise((r) => setTimeout(r, 10))
  const victim = await callThrough(registry, http1(address), {
    tenant: 'victim',
    method: 'GET',
    path: 'x',
    timeoutMs: 5000,
  })
  t.equal(victim.status, 200, "the victim's call goes out beside the attacker's")
  t.equal(held.length, MAX_CALLS_PER_TENANT, "the attacker's extra calls wait for its own")
  t.equal(most, MAX_CALLS_PER_TENANT + 1)
  while (held.length > 0) held.shift()!.end('{}')
  // Its waiting calls then go out in turn.
  while (held.length < 8) await new Promise((r) => setTimeout(r, 10))
  while (held.length > 0) held.shift()!.end('{}')
  t.equal((await Promise.all(slow)).length, MAX_CALLS_PER_TENANT + 8, 'every call answered')
})
