// The breaker with injected time: probes are scheduled on a manual clock, so nothing sleeps.
import t from 'tap'
import type { ProviderError } from '../../../../src/errors.js'
import type { VaultConnection } from '../../../../src/request/types.js'
import { Deadline } from '../../../../src/util/deadline.js'
import {
  BreakerRegistry,
  DEFAULT_BREAKER_OPTIONS,
  mayBeDown,
  type ProbeOutcome,
} from '../../../../src/vault/resilience/breaker.js'
import { VaultConnectionError, VaultHttpError } from '../../../../src/vault/transport/call-errors.js'
import { withRetry } from '../../../../src/vault/resilience/retry.js'
import { ManualTime } from '../../../support/manual-time.js'

const conn: VaultConnection = { address: 'https://vault.example:8200', tls: { skipVerify: false } }
const refused = new VaultConnectionError('refused', 'ECONNREFUSED', 'connection failed (ECONNREFUSED)')
const sealed = new VaultHttpError(503, ['Vault is sealed'])

t.test('what may mean an address is down: connection failures, timeouts, 502/503/504', async (t) => {
  t.equal(mayBeDown(refused), true)
  t.equal(mayBeDown(new VaultConnectionError('timeout', 'ETIMEDOUT', 'x')), true)
  t.equal(mayBeDown(sealed), true)
  t.equal(mayBeDown(new VaultHttpError(502, [])), true)
  t.equal(mayBeDown(new VaultHttpError(500, [])), false, 'Vault answered: it is up')
  t.equal(mayBeDown(new VaultHttpError(403, [])), false)
  t.equal(mayBeDown(new VaultConnectionError('tls', 'CERT_HAS_EXPIRED', 'x')), false, 'TLS is configuration')
  t.equal(mayBeDown({ response: { statusCode: 503 } }), false, 'no library error shape is read')
})

/** The retries' waits between attempts, where a test is not about them: none. */
const NO_WAIT = { sleep: async (): Promise<void> => undefined }

/** A breaker on manual time whose probe answers what `verdict()` says, and counts its probes (3 a round). */
function breaker(verdict: () => ProbeOutcome) {
  const time = new ManualTime()
  const probed: string[] = []
  const b = new BreakerRegistry(
    { probeIntervalMs: 1000 },
    async (address) => {
      probed.push(address)
      return verdict()
    },
    time,
  )
  return { b, time, probed }
}

t.test("a Mount's failures never open the address while the provider's own probe finds Vault healthy", async (t) => {
  const { b, time, probed } = breaker(() => ({ healthy: true }))
  t.teardown(() => b.close())
  for (let i = 0; i < 100; i++) {
    b.recordFailure(conn, new VaultHttpError(503, ['chosen path answers 503']), 'attacker')
    await time.advance(10)
  }
  t.notOk(b.isOpen(conn.address))
  t.doesNotThrow(() => b.admit(conn))
  const rounds = probes(probed)
  t.ok(rounds >= 1 && rounds <= 2, `probes are rate-limited (${rounds} rounds for 100 failures in 1 s)`)
})

t.test('the probe finding Vault unreachable opens the address; a healthy probe closes it', async (t) => {
  let healthy = false
  const { b, time, probed } = breaker(() =>
    healthy ? { healthy: true } : { healthy: false, sealed: false, cause: 'connection failed (ECONNREFUSED)' },
  )
  t.teardown(() => b.close())
  b.recordFailure(conn, refused, 'ns')
  t.notOk(b.isOpen(conn.address), 'not before the probe has answered')
  await time.advance(0)
  t.ok(b.isOpen(conn.address))
  const err = t.throws(() => b.admit(conn)) as ProviderError
  t.equal(err.code, 'VAULT_UNAVAILABLE')
  t.match(
    err.message,
    /Vault at "https:\/\/vault\.example:8200" has been unreachable since 2023-11-14T22:13:20Z \(last: connection failed \(ECONNREFUSED\)\)/,
  )
  await time.advance(1000)
  t.equal(probes(probed), 2, 'probed again after the interval')
  healthy = true
  await time.advance(1000)
  t.notOk(b.isOpen(conn.address), 'closed after a healthy probe')
  t.doesNotThrow(() => b.admit(conn))
})

/** Rounds of probes so far: each round is DEFAULT_BREAKER_OPTIONS.probesToOpen probes. */
function probes(probed: string[]): number {
  return probed.length / DEFAULT_BREAKER_OPTIONS.probesToOpen
}

t.test('a sealed Vault opens the address as sealed', async (t) => {
  const { b, time } = breaker(() => ({ healthy: false, sealed: true, cause: 'Vault is sealed (503)' }))
  t.teardown(() => b.close())
  b.recordFailure(conn, sealed)
  await time.advance(0)
  t.throws(() => b.admit(conn), /has been sealed since/)
})

t.test('as a layer around a call: stops retries once the address is open', async (t) => {
  const { b, time } = breaker(() => ({ healthy: false, sealed: false, cause: 'connection failed (ECONNREFUSED)' }))
  t.teardown(() => b.close())
  let attempts = 0
  const call = withRetry(
    async () => {
      attempts++
      // The probe answers between attempts.
      await time.advance(0)
      throw refused
    },
    Deadline.in(60_000, undefined, time),
    NO_WAIT,
    { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 1, rateLimitFloorMs: 0, minAttemptMs: 0, nodeMaxDelayMs: 1 },
    b.hooks(conn, 'ns'),
  )
  const err = await call.catch((e: unknown) => e)
  t.equal(err, refused, 'the retry stopped once the probe opened the address, with the real cause')
  t.throws(() => b.admit(conn), /has been unreachable since/, 'the next call fails fast')
  t.equal(attempts, 2, 'the attempt after the probe answered was the last')
})

t.test('bounded, and fair between namespaces', async (t) => {
  const b = new BreakerRegistry(
    { maxAddresses: 8, maxAddressesPerTenant: 3 },
    async () => ({ healthy: true }),
    new ManualTime(),
  )
  t.teardown(() => b.close())
  b.recordFailure({ ...conn, address: 'https://victim:8200' }, refused, 'victim')
  for (let i = 0; i < 50; i++) b.recordFailure({ ...conn, address: `https://v${i}:8200` }, refused, 'attacker')
  t.ok(b.size <= 4, `${b.size} addresses tracked`)
})

t.test('one node of a Service sealed: the address opens only when every probe of a round agrees', async (t) => {
  // Behind a round-robin Service of three nodes, each probe (a connection of its own) reaches the
  // next node; one of them is sealed.
  let next = 0
  const nodes: ProbeOutcome[] = [
    { healthy: true },
    { healthy: false, sealed: true, cause: 'Vault is sealed (503)' },
    { healthy: true },
  ]
  const { b, time, probed } = breaker(() => nodes[next++ % nodes.length]!)
  t.teardown(() => b.close())
  for (let i = 0; i < 20; i++) {
    b.recordFailure(conn, sealed, 'ns')
    await time.advance(500)
    t.notOk(b.isOpen(conn.address), `round ${i}: not open while another node serves`)
  }
  t.ok(probes(probed) >= 5, `${probes(probed)} rounds, each of ${DEFAULT_BREAKER_OPTIONS.probesToOpen} probes`)
  t.equal(DEFAULT_BREAKER_OPTIONS.probesToOpen, 3)

  // The retries of a Mount in flight meet the sealed node again and again: never cut.
  let attempts = 0
  const answer = await withRetry(
    async () => {
      attempts++
      await time.advance(0)
      if (attempts < 6) throw new VaultHttpError(503, ['Vault is sealed'], undefined, { kind: 'errors', entries: 1 })
      return 'ok'
    },
    Deadline.in(60_000, undefined, time),
    NO_WAIT,
    undefined,
    b.hooks(conn, 'ns'),
  )
  t.equal(answer, 'ok', 'the sixth attempt, on another node, answered')

  // Every node sealed (or one sealed Vault): all agree, it opens, as sealed.
  nodes[0] = nodes[1]!
  nodes[2] = nodes[1]!
  b.recordFailure(conn, sealed, 'ns')
  await time.advance(1000)
  t.ok(b.isOpen(conn.address))
  t.throws(() => b.admit(conn), /has been sealed since/)
})

t.test('a round down for two reasons is down, not sealed', async (t) => {
  let i = 0
  const { b, time } = breaker(() =>
    i++ % 3 === 0
      ? { healthy: false, sealed: true, cause: 'Vault is sealed (503)' }
      : { healthy: false, sealed: false, cause: 'connection failed (ECONNREFUSED)' },
  )
  t.teardown(() => b.close())
  b.recordFailure(conn, refused, 'ns')
  await time.advance(0)
  t.throws(() => b.admit(conn), /has been unreachable since/)
})

t.test("a tenant's own address that answers 503 forever opens only that address", async (t) => {
  const hostile = { ...conn, address: 'http://evil.example:8200' }
  const time = new ManualTime()
  const b = new BreakerRegistry(
    {},
    async (address) =>
      address === hostile.address
        ? { healthy: false, sealed: true, cause: 'Vault is sealed (503)' }
        : { healthy: true },
    time,
  )
  t.teardown(() => b.close())
  for (let i = 0; i < 20; i++) b.recordFailure(hostile, sealed, 'attacker')
  b.recordFailure(conn, sealed, 'victim')
  // The first probes of each address are due at once.
  await time.advance(0)
  t.ok(b.isOpen(hostile.address), "the attacker's own address opened")
  t.notOk(b.isOpen(conn.address), "the victim's did not")
  t.doesNotThrow(() => b.admit(conn))
})
