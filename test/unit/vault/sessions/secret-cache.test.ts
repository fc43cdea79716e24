// The identity's read cache on its own: what it keeps, for whom and how long, with time given by
// the test. It makes no call; the session's tests (session.test.ts) cover reads, renewals and
// coalescing through it, and the integration suite covers them against OpenBao.
import t from 'tap'
import {
  SecretCache,
  createSecretStore,
  type CacheLookup,
  type TokenExpiries,
} from '../../../../src/vault/sessions/secret-cache.js'

const kv = { lease_id: '', lease_duration: 0, data: { data: { a: 'b' } } }
const creds = (n: number, ttlSec = 60, renewable = true) => ({
  lease_id: `database/creds/app/${n}`,
  lease_duration: ttlSec,
  renewable,
  data: { username: `u${n}` },
})
/** Token 1 lives for ever unless a test says otherwise. */
const LIVE: TokenExpiries = new Map([[1, Number.POSITIVE_INFINITY]])

function kindAndSource(found: CacheLookup): string {
  return found.kind === 'hit' ? `hit:${found.outcome.source}` : found.kind
}

t.test('static answers: kept only for the freshness window', async (t) => {
  const none = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  t.equal(none.store('k', 'p1', kv, false, 1, 0), 'static')
  t.equal(kindAndSource(none.lookup('k', 'p1', 0, LIVE)), 'miss', 'freshness 0: the next Mount reads again')
  t.equal(none.size, 0)

  const fresh = new SecretCache({ staticFreshnessMs: 60_000, shareDynamic: false })
  fresh.store('k', 'p1', kv, false, 1, 0)
  t.equal(kindAndSource(fresh.lookup('k', 'p2', 59_999, LIVE)), 'hit:cache', 'any pod of the identity, within it')
  t.equal(kindAndSource(fresh.lookup('k', 'p2', 60_000, LIVE)), 'miss', 'not past it')
})

t.test('leased answers belong to the pod that got them, or to every pod when shared', async (t) => {
  const own = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  t.equal(own.store('c', 'p1', creds(1), false, 1, 0), 'leased')
  const hit = own.lookup('c', 'p1', 1_000, LIVE)
  t.equal(kindAndSource(hit), 'hit:cache')
  t.same(hit.kind === 'hit' && hit.outcome.body, creds(1), "the pod's own credential")
  t.equal(kindAndSource(own.lookup('c', 'p2', 1_000, LIVE)), 'miss', 'another pod gets none of it')

  const shared = new SecretCache({ staticFreshnessMs: 0, shareDynamic: true })
  shared.store('c', 'p1', creds(2), false, 1, 0)
  t.equal(kindAndSource(shared.lookup('c', 'p2', 1_000, LIVE)), 'hit:cache')
})

t.test('a lease whose token has expired is not served, nor offered for renewal', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  cache.store('c', 'p1', creds(1), false, 1, 0)
  t.equal(kindAndSource(cache.lookup('c', 'p1', 1_000, new Map([[1, 1_000]]))), 'miss', 'its token ended')
  t.equal(kindAndSource(cache.lookup('c', 'p1', 1_000, LIVE)), 'miss', 'and it is forgotten')
  cache.store('c', 'p1', creds(2), false, 7, 0)
  t.equal(kindAndSource(cache.lookup('c', 'p1', 1_000, LIVE)), 'miss', 'a token the session no longer knows')
})

t.test('past two thirds of its lifetime a renewable lease is due; renewed, it is served again', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  cache.store('c', 'p1', creds(1, 30), false, 1, 0)
  t.equal(kindAndSource(cache.lookup('c', 'p1', 19_999, LIVE)), 'hit:cache', 'before the renewal point')
  const due = cache.lookup('c', 'p1', 20_000, LIVE)
  t.equal(due.kind, 'renewDue')
  if (due.kind !== 'renewDue') return
  t.equal(due.lease.leaseId, 'database/creds/app/1')
  t.equal(cache.extend(due.lease, { ttlMs: 60_000, renewable: true }, 21_000), true, '60 s granted: kept')
  t.equal(kindAndSource(cache.lookup('c', 'p1', 60_999, LIVE)), 'hit:cache', 'until two thirds of the new TTL')
  t.equal(kindAndSource(cache.lookup('c', 'p1', 61_000, LIVE)), 'renewDue')
})

t.test('a lease near its max TTL is not kept for a sliver; one that cannot be renewed is dropped', async (t) => {
  const cache = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false })
  cache.store('c', 'p1', creds(1, 30), false, 1, 0)
  const due = cache.lookup('c', 'p1', 25_000, LIVE)
  if (due.kind !== 'renewDue') return t.fail(`due, got ${due.kind}`)
  t.equal(cache.extend(due.lease, { ttlMs: 5_000, renewable: true }, 25_000), false, '5 s of a first 30 s: replace')
  cache.drop(due.lease)
  t.equal(kindAndSource(cache.lookup('c', 'p1', 25_000, LIVE)), 'miss')

  cache.store('c', 'p1', creds(2, 30, false), false, 1, 0)
  t.equal(kindAndSource(cache.lookup('c', 'p1', 20_000, LIVE)), 'miss', 'not renewable: read anew')
})

t.test("identities share one store; clear() forgets one identity's entries only", async (t) => {
  const store = createSecretStore()
  const a = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false, store, prefix: 'a\n' })
  const b = new SecretCache({ staticFreshnessMs: 0, shareDynamic: false, store, prefix: 'b\n' })
  a.store('c', 'p1', creds(1), false, 1, 0)
  t.equal(kindAndSource(b.lookup('c', 'p1', 0, LIVE)), 'miss', "the same key is another identity's")
  b.store('c', 'p1', creds(2), false, 1, 0)
  a.clear()
  t.equal(kindAndSource(a.lookup('c', 'p1', 0, LIVE)), 'miss')
  t.equal(kindAndSource(b.lookup('c', 'p1', 0, LIVE)), 'hit:cache')
  t.equal(store.size, 1)
})
