import t from 'tap'
import { expiryOf, lifetimeOf, renewPoint } from '../../../../src/vault/sessions/lifetime.js'

t.test('leased, issued and static answers', async (t) => {
  const now = 1_000_000
  t.same(lifetimeOf({ lease_id: 'x/1', lease_duration: 30, renewable: true, data: {} }, now, false), {
    kind: 'leased',
    leaseId: 'x/1',
    ttlMs: 30_000,
    renewable: true,
  })
  t.same(
    lifetimeOf({ lease_id: '', lease_duration: 3600, data: { data: { a: 1 } } }, now, false),
    { kind: 'static' },
    'KV v1 ttl is not a lease',
  )
  t.same(lifetimeOf('', now, false), { kind: 'static' })
  t.same(lifetimeOf(null, now, true), { kind: 'static' })
  const issued = lifetimeOf(
    {
      data: {
        certificate: '-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----',
        private_key: 'k',
        expiration: now / 1000 + 90,
      },
    },
    now,
    true,
  )
  t.same(issued, { kind: 'issued', notBefore: now, notAfter: now + 90_000 }, 'falls back to Vault expiration')
  t.same(
    lifetimeOf({ data: { certificate: 'x', private_key: 'k', expiration: now / 1000 + 90 } }, now, false),
    { kind: 'static' },
    'a GET never issues',
  )
})

t.test('renewal at two thirds, counted from when we got it', async (t) => {
  const now = 1_000_000
  t.equal(renewPoint({ kind: 'leased', leaseId: 'a', ttlMs: 60_000, renewable: false }, now), now + 40_000)
  t.equal(expiryOf({ kind: 'leased', leaseId: 'a', ttlMs: 60_000, renewable: false }, now), now + 60_000)
  // A CA backdates notBefore by 30 s: the 60 s still ahead count, not the 90 s of validity.
  t.equal(renewPoint({ kind: 'issued', notBefore: now - 30_000, notAfter: now + 60_000 }, now), now + 40_000)
})
