import t, { type Test } from 'tap'
import type { ProviderError } from '../../../src/errors.js'
import { checkPodToken, decodeServiceAccountJwt, MAX_POD_JWT_BYTES } from '../../../src/identity/claims.js'
import { signJwt, signServiceAccountJwt } from '../../support/jwt.js'

const NOW = Date.UTC(2030, 0, 1)
const POD = { namespace: 'team-a', serviceAccount: 'app', podName: 'app-0', podUid: 'uid-0' }
const EXPECTED = { ...POD, audience: 'vault' }

function token(over: Partial<Parameters<typeof signServiceAccountJwt>[0]> = {}): string {
  return signServiceAccountJwt({
    ...POD,
    audience: 'vault',
    issuedAtSec: NOW / 1000 - 60,
    expiresInSec: 600,
    ...over,
  })
}

function mismatch(t: Test, fn: () => unknown, pattern: RegExp, what: string): void {
  const err = t.throws(fn, what) as ProviderError
  t.equal(err.code, 'POD_TOKEN_MISMATCH', `${what}: code`)
  t.match(err.message, pattern, `${what}: message`)
}

t.test('a real-shaped service-account token of the pod passes and is decoded', async (t) => {
  const c = checkPodToken(token(), EXPECTED, NOW)
  t.equal(c.namespace, 'team-a')
  t.equal(c.serviceAccount.name, 'app')
  t.same(c.pod, { name: 'app-0', uid: 'uid-0' })
  t.equal(c.sub, 'system:serviceaccount:team-a:app')
  t.same(c.aud, ['vault'])
})

t.test('every disagreeing claim is named, never the token', async (t) => {
  mismatch(
    t,
    () => checkPodToken(token({ namespace: 'team-b' }), EXPECTED, NOW),
    /claim "kubernetes.io.namespace" is not "team-a"/,
    'namespace',
  )
  mismatch(
    t,
    () => checkPodToken(token({ serviceAccount: 'admin' }), EXPECTED, NOW),
    /claim "kubernetes.io.serviceaccount.name" is not "app"/,
    'service account',
  )
  mismatch(
    t,
    () => checkPodToken(token({ podName: 'other' }), EXPECTED, NOW),
    /claim "kubernetes.io.pod.name" is not "app-0"/,
    'pod name',
  )
  mismatch(
    t,
    () => checkPodToken(token({ podUid: 'uid-9' }), EXPECTED, NOW),
    /claim "kubernetes.io.pod.uid" is not "uid-0"/,
    'pod uid',
  )
  mismatch(
    t,
    () => checkPodToken(token({ audience: 'other' }), EXPECTED, NOW),
    /not for audience "vault" \(claim "aud"\)/,
    'audience',
  )
  mismatch(
    t,
    () => checkPodToken(token({ extraClaims: { sub: 'system:serviceaccount:team-a:admin' } }), EXPECTED, NOW),
    /claim "sub" is not "system:serviceaccount:team-a:app"/,
    'sub',
  )
  const expired = token({ issuedAtSec: NOW / 1000 - 700, expiresInSec: 600 })
  mismatch(
    t,
    () => checkPodToken(expired, EXPECTED, NOW),
    /expired at 2029-12-31T23:58:20.000Z \(claim "exp"\)/,
    'expired',
  )
  t.doesNotThrow(
    () => checkPodToken(expired, EXPECTED, NOW - 200_000),
    'the same token before its expiry (injected clock)',
  )
})

t.test(
  'tokens without a pod claim (not pod-bound) are judged by namespace, service account, sub, aud, exp',
  async (t) => {
    const payload = {
      aud: ['vault'],
      exp: NOW / 1000 + 600,
      sub: 'system:serviceaccount:team-a:app',
      'kubernetes.io': { namespace: 'team-a', serviceaccount: { name: 'app', uid: 'sa-uid' } },
    }
    t.doesNotThrow(() => checkPodToken(signJwt(payload), EXPECTED, NOW))
    t.equal(decodeServiceAccountJwt(signJwt(payload)).pod, undefined)
  },
)

t.test('garbage, non-service-account and oversized tokens', async (t) => {
  const secretish = 'garbage-token-value-123'
  const err = t.throws(() => checkPodToken(secretish, EXPECTED, NOW)) as ProviderError
  t.equal(err.code, 'POD_TOKEN_MISMATCH')
  t.match(err.message, /is not a JWT/)
  t.notMatch(err.message, secretish, 'the token is never echoed')
  mismatch(t, () => checkPodToken('a.!!!.c', EXPECTED, NOW), /payload is not JSON/, 'bad payload')
  mismatch(
    t,
    () => checkPodToken(signJwt({ sub: 'x', exp: 1 }), EXPECTED, NOW),
    /not a service-account token/,
    'other JWT',
  )
  mismatch(
    t,
    () => checkPodToken('a'.repeat(MAX_POD_JWT_BYTES + 1), EXPECTED, NOW),
    /longer than 16384 bytes/,
    'oversized',
  )
})
