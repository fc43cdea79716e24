// The identity's read cache, against an in-memory backend that counts calls:
// the caching rules themselves, independent of Vault (the integration suite
// covers them against OpenBao).
import t from 'tap'
import { Deadline } from '../../../../src/util/deadline.js'
import { SecretCache, type CacheBackend } from '../../../../src/vault/sessions/secret-cache.js'
import { ManualTime } from '../../../support/manual-time.js'

/** A deadline nobody reaches in these tests, and the error a waiter that leaves gets. */
const far = (): Deadline => Deadline.in(3_600_000)
const giveUp = (cancelled: boolean): Error => new Error(cancelled ? 'caller left' : 'deadline passed')

function backend(answers: () => unknown, opts: { tokenExpiresAt?: number } = {}) {
  const calls = { read: 0, renew: 0 }
  let release: (() => void) | undefined
  let gate: Promise<void> | undefined
  const b: CacheBackend & { calls: typeof calls; hold(): void; go(): void } = {
    calls,
    hold() {
      gate = new Promise((r) => (release = r))
    },
    go() {
      release?.()
    },
    async read() {
      calls.read += 1
      if (gate) await gate
      return { body: answers(), tokenGeneration: 1 }
    },
    async renewLease() {
      calls.renew += 1
      return { ttlMs: 60_000, renewable: true }
    },
    tokenExpiresAt: () => opts.tokenExpiresAt ?? Number.POSITIVE_INFINITY,
  }
  return b
}

const kv = { lease_id: '', lease_duration: 0, data: { data: { a: 'b' } } }
let n = 0
const creds = () => ({
  lease_id: `database/creds/app/${++n}`,
  lease_duration: 60,
  renewable: true,
  data: { username: `u${n}` },
})

t.test('static answers: coalesced while in flight, not kept with freshness 0', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  const b = backend(() => kv)
  b.hold()
  const all = Promise.all([
    cache.fetch('k', 'p1', false, far(), giveUp, b),
    cache.fetch('k', 'p2', false, far(), giveUp, b),
    cache.fetch('k', 'p3', false, far(), giveUp, b),
  ])
  b.go()
  const out = await all
  t.equal(b.calls.read, 1)
  t.same(
    out.map((o) => o.source),
    ['vault', 'coalesced', 'coalesced'],
  )
  await cache.fetch('k', 'p1', false, far(), giveUp, b)
  t.equal(b.calls.read, 2, 'the next Mount reads again')
  t.equal(cache.size, 0)
})

t.test('static answers are kept for the freshness window', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 60_000, shareDynamic: false })
  const b = backend(() => kv)
  await cache.fetch('k', 'p1', false, far(), giveUp, b)
  const again = await cache.fetch('k', 'p2', false, far(), giveUp, b)
  t.equal(again.source, 'cache')
  t.equal(b.calls.read, 1)
})

t.test('leased answers belong to the pod that got them', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  const b = backend(creds)
  b.hold()
  const racing = Promise.all([
    cache.fetch('c', 'p1', false, far(), giveUp, b),
    cache.fetch('c', 'p2', false, far(), giveUp, b),
  ])
  b.go()
  const [one, two] = await racing
  t.not((one.body as any).data.username, (two.body as any).data.username, 'two pods, two credentials')
  t.equal(b.calls.read, 2)
  const again = await cache.fetch('c', 'p1', false, far(), giveUp, b)
  t.equal(again.source, 'cache')
  t.equal((again.body as any).data.username, (one.body as any).data.username, 'the pod keeps its credential')
})

t.test('shared dynamic credentials when asked', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: true })
  const b = backend(creds)
  const one = await cache.fetch('c', 'p1', false, far(), giveUp, b)
  const two = await cache.fetch('c', 'p2', false, far(), giveUp, b)
  t.equal((two.body as any).data.username, (one.body as any).data.username)
  t.equal(b.calls.read, 1)
})

t.test('a lease whose token has expired is not served', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  const b = backend(creds, { tokenExpiresAt: 0 })
  await cache.fetch('c', 'p1', false, far(), giveUp, b)
  const again = await cache.fetch('c', 'p1', false, far(), giveUp, b)
  t.equal(again.source, 'vault', 'read again: the lease died with its token')
  t.equal(b.calls.renew, 0)
})

t.test('errors reach every waiter and are not cached', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 60_000, shareDynamic: false })
  let fail = true
  const b = backend(() => {
    if (fail) throw new Error('boom')
    return kv
  })
  await t.rejects(
    Promise.all([cache.fetch('k', 'p1', false, far(), giveUp, b), cache.fetch('k', 'p2', false, far(), giveUp, b)]),
    /boom/,
  )
  fail = false
  t.equal((await cache.fetch('k', 'p1', false, far(), giveUp, b)).source, 'vault')
})

t.test('a lease near its max TTL is replaced, not renewed for a sliver', async (t) => {
  // Time is injected: the second fetch happens past the renewal point (2/3 of 30 s) and before expiry.
  const time = new ManualTime()
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false, clock: time.clock, timers: time })
  const b = backend(() => ({
    lease_id: `db/${++n}`,
    lease_duration: 30,
    renewable: true,
    data: { username: `u${n}` },
  }))
  b.renewLease = async () => {
    b.calls.renew += 1
    return { ttlMs: 5_000, renewable: true }
  }
  const first = await cache.fetch('c', 'p1', false, far(), giveUp, b)
  await time.advance(25_000)
  const second = await cache.fetch('c', 'p1', false, far(), giveUp, b)
  t.equal(b.calls.renew, 1, 'tried to renew')
  t.equal(second.source, 'vault', 'then issued a new one')
  t.not((second.body as any).data.username, (first.body as any).data.username)
})

t.test('a lease renewed with enough time left is served again, renewed', async (t) => {
  const time = new ManualTime()
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false, clock: time.clock, timers: time })
  const b = backend(() => ({ lease_id: `db/${++n}`, lease_duration: 30, renewable: true, data: { username: `u${n}` } }))
  const first = await cache.fetch('c', 'p1', false, far(), giveUp, b)
  await time.advance(19_000)
  t.equal((await cache.fetch('c', 'p1', false, far(), giveUp, b)).source, 'cache', 'before the renewal point')
  await time.advance(2_000)
  const renewed = await cache.fetch('c', 'p1', false, far(), giveUp, b)
  t.equal(renewed.source, 'renewed', 'past it: renewed (60 s granted)')
  t.same(renewed.body, first.body)
  t.equal(b.calls.read, 1)
})

t.test('coalesced reads: each waiter gives up on its own deadline; the read goes on for the others', async (t) => {
  const time = new ManualTime()
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false, clock: time.clock, timers: time })
  let readDeadline: Deadline | undefined
  const b = backend(() => kv)
  const read = b.read
  b.read = (d: Deadline) => {
    readDeadline = d
    return read(d)
  }
  b.hold()
  const leader = cache.fetch('k', 'p1', false, Deadline.in(1_000, undefined, time.clock), giveUp, b)
  const follower = cache.fetch('k', 'p2', false, Deadline.in(10_000, undefined, time.clock), giveUp, b)
  const leaderOutcome = leader.then(
    () => 'answered',
    (e: Error) => e.message,
  )
  await time.advance(1_000)
  t.equal(await leaderOutcome, 'deadline passed', 'the leader gave up on its own deadline')
  t.equal(readDeadline?.signal.aborted, false, 'the read goes on for the follower')
  t.equal(readDeadline?.expiresAt, time.clock() + 9_000, "the read's deadline is now the follower's")
  b.go()
  t.equal((await follower).source, 'coalesced', 'the follower got the answer')
  t.equal(b.calls.read, 1)
})

t.test('a follower never fails for the leader leaving; the read is aborted when every waiter left', async (t) => {
  const time = new ManualTime()
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false, clock: time.clock, timers: time })
  let readDeadline: Deadline | undefined
  const b = backend(() => kv)
  const read = b.read
  b.read = (d: Deadline) => {
    readDeadline = d
    return read(d)
  }
  b.hold()
  const leaderGone = new AbortController()
  const followerGone = new AbortController()
  const leader = cache
    .fetch('k', 'p1', false, Deadline.in(10_000, leaderGone.signal, time.clock), giveUp, b)
    .catch((e: Error) => e.message)
  const follower = cache
    .fetch('k', 'p2', false, Deadline.in(10_000, followerGone.signal, time.clock), giveUp, b)
    .catch((e: Error) => e.message)
  await time.advance(0)
  leaderGone.abort()
  t.equal(await leader, 'caller left')
  t.equal(readDeadline?.signal.aborted, false, 'still read for the follower')
  followerGone.abort()
  t.equal(await follower, 'caller left')
  t.equal(readDeadline?.signal.aborted, true, 'nobody waits: the read is aborted')
  b.go()
  await time.advance(0)
  // The abandoned read is not joined: the next caller starts a new one.
  const next = await cache.fetch('k', 'p3', false, far(), giveUp, b)
  t.equal(next.source, 'vault')
  t.equal(b.calls.read, 2)
})
