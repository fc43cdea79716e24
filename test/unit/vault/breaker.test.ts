import http from 'node:http'
import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import type { VaultConnection } from '../../../src/request/types.js'
import { BreakerRegistry, failureKind, probeHealth, type ProbeOutcome } from '../../../src/vault/breaker.js'

const conn: VaultConnection = { address: 'https://vault.example:8200', tls: { skipVerify: false } }
const refused = Object.assign(new Error('x'), { code: 'ECONNREFUSED' })
const sealed = { response: { statusCode: 503, body: { errors: ['Vault is sealed'] } } }
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

t.test('failure kinds', async (t) => {
  t.same(failureKind(refused), { kind: 'unreachable', cause: 'connection failed (ECONNREFUSED)' })
  t.same(failureKind(Object.assign(new Error(), { code: 'ECONNABORTED' })), {
    kind: 'unreachable',
    cause: 'no answer in time',
  })
  t.equal(failureKind(sealed)?.kind, 'sealed')
  t.equal(failureKind({ response: { statusCode: 502 } })?.kind, 'unreachable')
  t.equal(failureKind({ response: { statusCode: 500 } }), undefined, 'Vault answered: it is up')
  t.equal(failureKind({ response: { statusCode: 403 } }), undefined)
  t.equal(failureKind(Object.assign(new Error(), { code: 'CERT_HAS_EXPIRED' })), undefined, 'TLS is configuration')
})

t.test('opens after repeated failures, fails fast saying since when, closes on a healthy probe', async (t) => {
  let healthy = false
  let probes = 0
  let concurrent = 0
  let maxConcurrent = 0
  const probe = async (): Promise<ProbeOutcome> => {
    probes++
    concurrent++
    maxConcurrent = Math.max(maxConcurrent, concurrent)
    await sleep(5)
    concurrent--
    return healthy ? { healthy: true } : { healthy: false, sealed: false, cause: 'connection failed (ECONNREFUSED)' }
  }
  const b = new BreakerRegistry({ failureThreshold: 3, coolDownMs: 20, probeIntervalMs: 20 }, probe)
  t.teardown(() => b.close())
  b.recordFailure(conn, refused)
  b.recordFailure(conn, refused)
  t.doesNotThrow(() => b.admit(conn), 'still closed below the threshold')
  b.recordSuccess(conn.address)
  b.recordFailure(conn, refused)
  b.recordFailure(conn, refused)
  t.doesNotThrow(() => b.admit(conn), 'a success resets the count')
  b.recordFailure(conn, refused)
  t.ok(b.isOpen(conn.address))
  const err = t.throws(() => b.admit(conn)) as ProviderError
  t.equal(err.code, 'VAULT_UNAVAILABLE')
  t.match(
    err.message,
    /Vault at "https:\/\/vault\.example:8200" has been unreachable since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(last: connection failed \(ECONNREFUSED\)\)/,
  )
  await sleep(120)
  t.ok(probes >= 2, `probed ${probes} times while open`)
  t.equal(maxConcurrent, 1, 'one probe at a time')
  healthy = true
  await sleep(80)
  t.notOk(b.isOpen(conn.address), 'closed after a healthy probe')
  t.doesNotThrow(() => b.admit(conn))
})

t.test('sealed opens at once; suspect() lets a probe decide', async (t) => {
  const b = new BreakerRegistry({ coolDownMs: 10_000 }, async () => ({
    healthy: false,
    sealed: true,
    cause: 'Vault is sealed (503)',
  }))
  t.teardown(() => b.close())
  b.recordFailure(conn, sealed)
  t.throws(() => b.admit(conn), /has been sealed since/)

  const other: VaultConnection = { ...conn, address: 'https://other:8200' }
  const fine = new BreakerRegistry({ failureThreshold: 1 }, async () => ({ healthy: true }))
  t.teardown(() => fine.close())
  fine.suspect(other)
  await sleep(20)
  t.notOk(fine.isOpen(other.address), 'a healthy probe clears a suspicion (e.g. a TLS misconfiguration elsewhere)')
  const down = new BreakerRegistry({ failureThreshold: 1 }, async () => ({
    healthy: false,
    sealed: false,
    cause: 'no answer in time',
  }))
  t.teardown(() => down.close())
  down.suspect(other)
  await sleep(20)
  t.ok(down.isOpen(other.address))
})

t.test('bounded', async (t) => {
  const b = new BreakerRegistry({ maxAddresses: 3, failureThreshold: 100 }, async () => ({ healthy: true }))
  t.teardown(() => b.close())
  for (let i = 0; i < 50; i++) b.recordFailure({ ...conn, address: `https://v${i}:8200` }, refused)
  t.ok(b.size <= 3)
})

t.test('probeHealth: a TLS problem is configuration, not an outage', async (t) => {
  // https:// to a plain HTTP server: the TLS handshake fails (EPROTO), yet something answered.
  const server = http.createServer((_req, res) => res.end('{}'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const port = (server.address() as { port: number }).port
  const tlsMismatch = await probeHealth({ address: `https://127.0.0.1:${port}`, tls: { skipVerify: false } }, 2000)
  t.same(tlsMismatch, { healthy: true }, 'reachable: the problem is configuration')
  const plain = await probeHealth({ address: `http://127.0.0.1:${port}`, tls: { skipVerify: false } }, 2000)
  t.same(plain, { healthy: true }, 'sys/health answered 200')
  const nothing = await probeHealth({ address: 'http://127.0.0.1:1', tls: { skipVerify: false } }, 2000)
  t.match(nothing, { healthy: false, sealed: false, cause: /connection failed \(ECONNREFUSED\)/ })
})
