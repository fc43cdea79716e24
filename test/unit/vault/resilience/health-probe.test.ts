// The provider's own health probe as the breaker reads it (providerProber, probeOutcome), against
// local servers: what answers, what is configuration, and through which transport each address goes.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import type { VaultCallEvent } from '../../../../src/observability/vault-observer.js'
import { probeOutcome, providerProber } from '../../../../src/vault/resilience/health-probe.js'
import { systemTime } from '../../../../src/util/time.js'
import { readProxySettings } from '../../../../src/vault/transport/proxy.js'
import { TransportRegistry } from '../../../../src/vault/transport/registry.js'
import { SecureContexts } from '../../../../src/vault/transport/secure-contexts.js'
import type { VaultTransportOptions } from '../../../../src/vault/transport/transport.js'
import { testTransportOptions } from '../../../support/transport-options.js'

/** The probes reach real HTTP servers: their durations and the clock skew they report are the system clock's. */
const time = systemTime()

async function healthServer(t: Test): Promise<number> {
  const server = http.createServer((_req, res) => res.end('{"initialized":true,"sealed":false,"standby":false}'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  return (server.address() as AddressInfo).port
}

function registry(t: Test, more: Partial<VaultTransportOptions> = {}): TransportRegistry {
  const r = new TransportRegistry(testTransportOptions(64 * 1024, more), new SecureContexts())
  t.teardown(() => r.close())
  return r
}

const none = { address: '', tls: { skipVerify: false } }

t.test('probe outcomes: a TLS problem is configuration, not an outage', async (t) => {
  t.same(probeOutcome({ reachable: true, healthy: true, status: 200, detail: '', durationMs: 0 }), { healthy: true })
  t.same(probeOutcome({ reachable: true, healthy: false, status: 503, detail: '', durationMs: 0 }), {
    healthy: false,
    sealed: true,
    cause: 'Vault is sealed (503)',
  })
  t.same(probeOutcome({ reachable: true, healthy: false, status: 472, detail: '', durationMs: 0 }), {
    healthy: false,
    sealed: false,
    cause: 'sys/health answered 472',
  })
  t.same(
    probeOutcome({
      reachable: false,
      healthy: false,
      errorKind: 'tls',
      errorCode: 'EPROTO',
      detail: '',
      durationMs: 0,
    }),
    { healthy: true },
  )
  // https:// to a plain HTTP server: the TLS handshake fails, yet something answered.
  const port = await healthServer(t)
  const probe = providerProber(registry(t), none, time)
  t.same(await probe(`https://127.0.0.1:${port}`, 2000), { healthy: true }, 'reachable: the problem is configuration')
  t.same(await probe(`http://127.0.0.1:${port}`, 2000), { healthy: true }, 'sys/health answered 200')
  t.match(await probe('http://127.0.0.1:1', 2000), {
    healthy: false,
    sealed: false,
    cause: /connection failed \(ECONNREFUSED\)/,
  })
})

t.test("a failure at the egress proxy names it in the cause, as the breaker's message shows", async (t) => {
  t.same(
    probeOutcome({
      reachable: false,
      healthy: false,
      errorKind: 'refused',
      errorCode: 'ECONNREFUSED',
      proxy: 'http://proxy.corp:3128',
      detail: '',
      durationMs: 0,
    }),
    { healthy: false, sealed: false, cause: 'connection failed (PROXY_ECONNREFUSED@proxy.corp:3128)' },
  )
  // A real refusal: the proxy of VAULT_PROXY_ADDR listens nowhere.
  const probe = providerProber(
    registry(t, { proxy: readProxySettings({ VAULT_PROXY_ADDR: 'http://127.0.0.1:1' }) }),
    none,
    time,
  )
  t.same(await probe('http://vault.example:8200', 2000), {
    healthy: false,
    sealed: false,
    cause: 'connection failed (PROXY_ECONNREFUSED@127.0.0.1:1)',
  })
})

t.test(
  "every probe goes through the registry's options: its observer sees -vault-addr's and the others'",
  async (t) => {
    const port = await healthServer(t)
    const events: VaultCallEvent[] = []
    const transports = registry(t, { observer: { vaultCall: (e) => events.push(e) } })
    const own = { address: `http://127.0.0.1:${port}`, tls: { skipVerify: false } }
    const probe = providerProber(transports, own, time)
    t.same(await probe(own.address, 2000), { healthy: true })
    t.equal(transports.heldBy(''), 1, "-vault-addr through the registry's shared pool")
    t.same(await probe(`http://localhost:${port}`, 2000), { healthy: true })
    t.equal(transports.heldBy(''), 1, 'another address over a transport of its own, closed after')
    t.same(
      events.map((e) => [e.operation, e.description]),
      [
        ['health', 'GET sys/health?standbyok=true'],
        ['health', 'GET sys/health?standbyok=true'],
      ],
    )
  },
)
