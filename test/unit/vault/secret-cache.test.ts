// The identity's read cache, against an in-memory backend that counts calls:
// the caching rules themselves, independent of Vault (the integration suite
// covers them against OpenBao).
import t from 'tap'
import { SecretCache, type CacheBackend } from '../../../src/vault/secret-cache.js'

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
    cache.fetch('k', 'p1', false, b),
    cache.fetch('k', 'p2', false, b),
    cache.fetch('k', 'p3', false, b),
  ])
  b.go()
  const out = await all
  t.equal(b.calls.read, 1)
  t.same(
    out.map((o) => o.source),
    ['vault', 'coalesced', 'coalesced'],
  )
  await cache.fetch('k', 'p1', false, b)
  t.equal(b.calls.read, 2, 'the next Mount reads again')
  t.equal(cache.size, 0)
})

t.test('static answers are kept for the freshness window', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 60_000, shareDynamic: false })
  const b = backend(() => kv)
  await cache.fetch('k', 'p1', false, b)
  const again = await cache.fetch('k', 'p2', false, b)
  t.equal(again.source, 'cache')
  t.equal(b.calls.read, 1)
})

t.test('leased answers belong to the pod that got them', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  const b = backend(creds)
  b.hold()
  const racing = Promise.all([cache.fetch('c', 'p1', false, b), cache.fetch('c', 'p2', false, b)])
  b.go()
  const [one, two] = await racing
  t.not((one.body as any).data.username, (two.body as any).data.username, 'two pods, two credentials')
  t.equal(b.calls.read, 2)
  const again = await cache.fetch('c', 'p1', false, b)
  t.equal(again.source, 'cache')
  t.equal((again.body as any).data.username, (one.body as any).data.username, 'the pod keeps its credential')
})

t.test('shared dynamic credentials when asked', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: true })
  const b = backend(creds)
  const one = await cache.fetch('c', 'p1', false, b)
  const two = await cache.fetch('c', 'p2', false, b)
  t.equal((two.body as any).data.username, (one.body as any).data.username)
  t.equal(b.calls.read, 1)
})

t.test('a lease whose token has expired is not served', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  const b = backend(creds, { tokenExpiresAt: 0 })
  await cache.fetch('c', 'p1', false, b)
  const again = await cache.fetch('c', 'p1', false, b)
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
  await t.rejects(Promise.all([cache.fetch('k', 'p1', false, b), cache.fetch('k', 'p2', false, b)]), /boom/)
  fail = false
  t.equal((await cache.fetch('k', 'p1', false, b)).source, 'vault')
})

t.test('a lease near its max TTL is replaced, not renewed for a sliver', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  const b = backend(() => ({
    lease_id: `db/${++n}`,
    lease_duration: 0.03,
    renewable: true,
    data: { username: `u${n}` },
  }))
  b.renewLease = async () => {
    b.calls.renew += 1
    return { ttlMs: 5, renewable: true }
  }
  const first = await cache.fetch('c', 'p1', false, b)
  await new Promise((r) => setTimeout(r, 25))
  const second = await cache.fetch('c', 'p1', false, b)
  t.equal(b.calls.renew, 1, 'tried to renew')
  t.equal(second.source, 'vault', 'then issued a new one')
  t.not((second.body as any).data.username, (first.body as any).data.username)
})
