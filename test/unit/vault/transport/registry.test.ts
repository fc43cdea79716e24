// The transports of the process, shared by every namespace's Mounts: keyed only by what applies to
// the connection, and bounded so that one namespace pushes out only its own pools; a pool closed to
// make room never breaks the sessions that used it.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import type { VaultConnection } from '../../../../src/request/types.js'
import { AddressAllowlist } from '../../../../src/vault/transport/address-allowlist.js'
import { VaultRedirect } from '../../../../src/vault/transport/call-errors.js'
import {
  MAX_TRANSPORTS_PER_TENANT,
  TransportRegistry,
  callThrough,
  connectionKey,
  followsRedirect,
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

/** A server that records what reached it (method, path, whether a token came) and answers `answer`. */
async function recording(
  t: Test,
  answer: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<{ address: string; received: string[] }> {
  const received: string[] = []
  const server = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url}${req.headers['x-vault-token'] ? ' token' : ''}`)
    answer(req, res)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  return { address: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}

const login = { tenant: 'ns', method: 'POST', path: 'auth/jwt/login', token: 'hvs.pod-token', timeoutMs: 5000 }

t.test("a standby's redirect: followed once, only to an address the operator's allow-list names", async (t) => {
  const active = await recording(t, (_req, res) => res.end('{"auth":{}}'))
  const standby = await recording(t, (req, res) =>
    res.writeHead(307, { location: `${active.address}${req.url}` }).end(),
  )
  const elsewhere = await recording(t, (req, res) =>
    res.writeHead(307, { location: `${active.address}${req.url}` }).end(),
  )
  const following = new TransportRegistry(
    { ...opts, redirectTargets: new AddressAllowlist([standby.address, active.address]) },
    new SecureContexts(),
  )
  t.teardown(() => following.close())
  t.equal(following.followsRedirect(standby.address, active.address), true)
  const answer = await callThrough(following, http1(standby.address), login)
  t.equal(answer.status, 200, 'followed')
  t.same(active.received, ['POST /v1/auth/jwt/login token'], 'the token went where the allow-list says it may')

  // No allow-list set (any address allowed): never followed, nothing reaches the Location.
  const unset = new TransportRegistry(opts, new SecureContexts())
  t.teardown(() => unset.close())
  const refused = await callThrough(unset, http1(elsewhere.address), login).catch((e: unknown) => e)
  t.ok(refused instanceof VaultRedirect, 'the standby’s redirect goes up to the retry layer as one node’s answer')
  t.equal(active.received.length, 1, 'nothing more reached the Location')

  // The allow-list set, but not naming the Location: not followed.
  const narrow = new TransportRegistry(
    { ...opts, redirectTargets: new AddressAllowlist([standby.address]) },
    new SecureContexts(),
  )
  t.teardown(() => narrow.close())
  t.ok((await callThrough(narrow, http1(standby.address), login).catch((e: unknown) => e)) instanceof VaultRedirect)
  t.equal(active.received.length, 1)
})

t.test('at most one hop: a redirect from the target is not followed again', async (t) => {
  const last = await recording(t, (_req, res) => res.end('{}'))
  const second = await recording(t, (req, res) => res.writeHead(307, { location: `${last.address}${req.url}` }).end())
  const first = await recording(t, (req, res) => res.writeHead(307, { location: `${second.address}${req.url}` }).end())
  const registry = new TransportRegistry(
    { ...opts, redirectTargets: new AddressAllowlist([first.address, second.address, last.address]) },
    new SecureContexts(),
  )
  t.teardown(() => registry.close())
  const err = (await callThrough(registry, http1(first.address), login).catch((e: unknown) => e)) as VaultRedirect
  t.ok(err instanceof VaultRedirect)
  t.equal(err.target, last.address, 'the second redirect is what the caller is told')
  t.same(second.received, ['POST /v1/auth/jwt/login token'], 'one hop')
  t.same(last.received, [], 'not two')
})

t.test('never from https to http, whatever the allow-list says', async (t) => {
  const targets = new AddressAllowlist(['https://vault.example:8200', 'http://10.0.0.2:8200', 'https://10.0.0.2:8200'])
  t.equal(followsRedirect(targets, 'https://vault.example:8200', 'http://10.0.0.2:8200'), false)
  t.equal(followsRedirect(targets, 'https://vault.example:8200', 'https://10.0.0.2:8200'), true)
  t.equal(followsRedirect(targets, 'http://vault.example:8200', 'http://10.0.0.2:8200'), true)
  t.equal(followsRedirect(targets, 'https://vault.example:8200', 'https://10.0.0.3:8200'), false, 'not listed')
  t.equal(followsRedirect(undefined, 'https://vault.example:8200', 'https://10.0.0.2:8200'), false, 'no list')
})
