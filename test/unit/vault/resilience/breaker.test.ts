// The breaker with injected time: probes are scheduled on a manual clock, so nothing sleeps.
import http from 'node:http'
import t from 'tap'
import type { ProviderError } from '../../../../src/errors.js'
import type { VaultConnection } from '../../../../src/request/types.js'
import { Deadline } from '../../../../src/util/deadline.js'
import {
  BreakerRegistry,
  failureKind,
  probeHealth,
  probeOutcome,
  type ProbeOutcome,
} from '../../../../src/vault/resilience/breaker.js'
import { VaultConnectionError, VaultHttpError } from '../../../../src/vault/transport/call-errors.js'
import { withRetry } from '../../../../src/vault/resilience/retry.js'
import { ManualTime } from '../../../support/manual-time.js'

const conn: VaultConnection = { address: 'https://vault.example:8200', tls: { skipVerify: false } }
const refused = new VaultConnectionError('refused', 'ECONNREFUSED', 'connection failed (ECONNREFUSED)')
const sealed = new VaultHttpError(503, ['Vault is sealed'])

t.test('failure kinds', async (t) => {
  t.same(failureKind(refused), { kind: 'unreachable', cause: 'connection failed (ECONNREFUSED)' })
  t.same(failureKind(new VaultConnectionError('timeout', 'ETIMEDOUT', 'x')), {
    kind: 'unreachable',
    cause: 'no answer in time',
  })
  t.equal(failureKind(sealed)?.kind, 'sealed')
  t.same(failureKind(new VaultHttpError(503, [])), { kind: 'unreachable', cause: 'Vault answered 503' })
  t.equal(failureKind(new VaultHttpError(502, []))?.kind, 'unreachable')
  t.equal(failureKind(new VaultHttpError(500, [])), undefined, 'Vault answered: it is up')
  t.equal(failureKind(new VaultHttpError(403, [])), undefined)
  t.equal(failureKind(new VaultConnectionError('tls', 'CERT_HAS_EXPIRED', 'x')), undefined, 'TLS is configuration')
  t.equal(failureKind({ response: { statusCode: 503 } }), undefined, 'no library error shape is read')
})

t.test('opens after repeated failures, fails fast saying since when, closes on a healthy probe', async (t) => {
  const time = new ManualTime()
  let healthy = false
  let probes = 0
  let concurrent = 0
  let maxConcurrent = 0
  let release: (() => void) | undefined
  const probe = async (): Promise<ProbeOutcome> => {
    probes++
    concurrent++
    maxConcurrent = Math.max(maxConcurrent, concurrent)
    await new Promise<void>((r) => (release = r))
    concurrent--
    return healthy ? { healthy: true } : { healthy: false, sealed: false, cause: 'connection failed (ECONNREFUSED)' }
  }
  const b = new BreakerRegistry({ failureThreshold: 3, coolDownMs: 20, probeIntervalMs: 20 }, probe, undefined, {
    clock: time.clock,
    timers: time,
  })
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
    /Vault at "https:\/\/vault\.example:8200" has been unreachable since 2023-11-14T22:13:20Z \(last: connection failed \(ECONNREFUSED\)\)/,
  )
  t.equal(probes, 0, 'no probe before the cool-down')
  await time.advance(20)
  t.equal(probes, 1, 'the first probe after the cool-down')
  await time.advance(100)
  t.equal(probes, 1, 'no second probe while one is running')
  release!()
  await time.advance(20)
  t.equal(probes, 2, 'probed again after the interval')
  t.equal(maxConcurrent, 1, 'one probe at a time')
  healthy = true
  release!()
  await time.advance(20)
  release!()
  await time.advance(0)
  t.notOk(b.isOpen(conn.address), 'closed after a healthy probe')
  t.doesNotThrow(() => b.admit(conn))
})

t.test('sealed opens at once', async (t) => {
  const time = new ManualTime()
  const b = new BreakerRegistry(
    { coolDownMs: 10_000 },
    async () => ({ healthy: false, sealed: true, cause: 'Vault is sealed (503)' }),
    undefined,
    { clock: time.clock, timers: time },
  )
  t.teardown(() => b.close())
  b.recordFailure(conn, sealed)
  t.throws(() => b.admit(conn), /has been sealed since/)
})

t.test('as a layer around a call: counts the first failure of each call, stops retries once open', async (t) => {
  const time = new ManualTime()
  const b = new BreakerRegistry(
    { failureThreshold: 2, coolDownMs: 60_000 },
    async () => ({ healthy: true }),
    undefined,
    {
      clock: time.clock,
      timers: time,
    },
  )
  t.teardown(() => b.close())
  let attempts = 0
  const call = (): Promise<unknown> =>
    withRetry(
      async () => {
        attempts++
        throw refused
      },
      Deadline.in(60_000),
      { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 1, rateLimitFloorMs: 0, minAttemptMs: 0 },
      b.hooks(conn),
      async () => undefined,
    )
  await t.rejects(call(), refused)
  t.equal(attempts, 5, 'a closed address: every attempt made')
  t.notOk(b.isOpen(conn.address), 'one call counts once')
  attempts = 0
  const second = (await call().catch((e: unknown) => e)) as ProviderError
  t.equal(second.code, 'VAULT_UNAVAILABLE', 'the second call opened the address: the retry failed fast')
  t.equal(attempts, 1)
})

t.test('bounded', async (t) => {
  const b = new BreakerRegistry({ maxAddresses: 3, failureThreshold: 100 }, async () => ({ healthy: true }))
  t.teardown(() => b.close())
  for (let i = 0; i < 50; i++) b.recordFailure({ ...conn, address: `https://v${i}:8200` }, refused)
  t.ok(b.size <= 3)
})

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
  const server = http.createServer((_req, res) => res.end('{"initialized":true,"sealed":false,"standby":false}'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  const port = (server.address() as { port: number }).port
  const tlsMismatch = await probeHealth({ address: `https://127.0.0.1:${port}`, tls: { skipVerify: false } }, 2000)
  t.same(tlsMismatch, { healthy: true }, 'reachable: the problem is configuration')
  const plain = await probeHealth({ address: `http://127.0.0.1:${port}`, tls: { skipVerify: false } }, 2000)
  t.same(plain, { healthy: true }, 'sys/health answered 200')
  const nothing = await probeHealth({ address: 'http://127.0.0.1:1', tls: { skipVerify: false } }, 2000)
  t.match(nothing, { healthy: false, sealed: false, cause: /connection failed \(ECONNREFUSED\)/ })
})
