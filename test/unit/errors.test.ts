import t from 'tap'
import {
  ERROR_CATALOGUE,
  ProviderError,
  cutForScrub,
  isProviderError,
  q,
  safeText,
  scrub,
  toProviderError,
  type ErrorCode,
} from '../../src/errors.js'

const JWT =
  'eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50Iiwic3ViIjoid2ViIn0.ZmFrZS1zaWduYXR1cmUtZm9yLXRlc3Rz'
const UNSIGNED_JWT = 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ3ZWIifQ.'
const HVS = 'hvs.CAESIJlWh3Ck0xY2YzU1c2NlRBd0pLcEZYQjhQRnB6Z3dHUU4'
const HVB = 'hvb.AAAAAQJpl1lnO4l0uAaXZ9IQ5o9F2OXg0Q6vQn0vQ0oRkM8b'
const HVR = 'hvr.abcdefghijklmnopqrstuvwxyz012345'
const LEGACY = 's.Xk3Jd8sLmQ2pR7vTn4wY9zAb'
const LEGACY_B = 'b.AAAAAQKb9XnLd3s8WqYt7vRm2pZc'

t.test('every catalogue code describes itself and makes a ProviderError', async (t) => {
  const codes = Object.keys(ERROR_CATALOGUE) as ErrorCode[]
  t.ok(codes.length >= 19)
  for (const code of codes) {
    t.ok(ERROR_CATALOGUE[code].length > 10, `${code}: a description`)
    const err = new ProviderError(code, 'm')
    t.equal(err.code, code)
    t.equal(err.message, 'm')
    t.equal(err.name, 'ProviderError')
    t.ok(err instanceof Error)
    t.notOk('grpcStatus' in err, 'no transport status below the adapter')
  }
})

t.test('scrub removes JWTs and Vault tokens', async (t) => {
  t.equal(scrub(`login with ${JWT} failed`), 'login with [redacted-jwt] failed')
  t.equal(scrub(`jwt=${UNSIGNED_JWT}`), 'jwt=[redacted-jwt]')
  t.equal(scrub(`{"jwt":"${JWT}","role":"web"}`), '{"jwt":"[redacted-jwt]","role":"web"}')
  t.equal(scrub(`Bearer ${JWT}`), 'Bearer [redacted-jwt]')
  for (const token of [HVS, HVB, HVR, LEGACY, LEGACY_B]) {
    t.equal(scrub(`X-Vault-Token: ${token}`), 'X-Vault-Token: [redacted-token]', token.slice(0, 4))
    t.equal(scrub(`"${token}"`), '"[redacted-token]"', token.slice(0, 4))
  }
  t.equal(scrub(`${HVS} and ${JWT} and ${LEGACY}`), '[redacted-token] and [redacted-jwt] and [redacted-token]')
  // Ordinary text is left alone.
  for (const text of [
    'object "db-password" (GET secret/data/db): Vault answered 403: permission denied',
    'secrets.example.com',
    'tokens.csi.storage.k8s.io/serviceAccount.tokens',
    'version s.1',
    'eyJ is a prefix',
    'role "web" in namespace "shop"',
    'hvs.short',
  ]) {
    t.equal(scrub(text), text, text)
  }
})

t.test('ProviderError scrubs its message', async (t) => {
  const err = new ProviderError('VAULT_LOGIN_DENIED', `Vault said: invalid jwt ${JWT} for token ${HVS} (${LEGACY})`)
  t.equal(err.message, 'Vault said: invalid jwt [redacted-jwt] for token [redacted-token] ([redacted-token])')
  t.equal(err.code, 'VAULT_LOGIN_DENIED')
})

t.test('toProviderError hides unknown errors', async (t) => {
  const own = new ProviderError('VAULT_NOT_FOUND', 'nope')
  t.equal(toProviderError(own), own)
  for (const thrown of [
    new Error(`ECONNRESET while sending ${JWT}`),
    new TypeError("Cannot read properties of undefined (reading 'password')"),
    `a string with ${HVS}`,
    { message: 'plain object with password=hunter2' },
    undefined,
    null,
    42,
  ]) {
    const err = toProviderError(thrown)
    t.ok(err instanceof ProviderError)
    t.equal(err.code, 'INTERNAL')
    t.equal(err.message, 'internal error (see the provider log for details)')
  }
  // Something that only looks like a ProviderError is not trusted.
  const fake = { name: 'ProviderError', code: 'BAD_PARAMETER', message: `x ${JWT}` }
  t.equal(toProviderError(fake).code, 'INTERNAL')
  t.equal(isProviderError(fake), false)
  t.equal(isProviderError(own), true)
  t.equal(isProviderError(new Error('x')), false)
})

t.test('q quotes and cuts', async (t) => {
  t.equal(q('db-password'), '"db-password"')
  t.equal(q('a"b\nc'), '"a\\"b\\nc"')
  t.equal(q('x'.repeat(120)), `"${'x'.repeat(120)}"`)
  t.equal(q('x'.repeat(121)), `"${'x'.repeat(120)}…"`)
  t.equal(q('abcdef', 3), '"abc…"')
  t.equal(q(''), '""')
})

t.test('scrub finds short Vault tokens, and runs before any cut', async (t) => {
  for (const token of ['hvs.ABCDEFGH', 'hvb.abcdefgh12', 'hvr.12345678', 's.AbCdEfGh', 'b.12345678', 'r.abcdefgh']) {
    t.equal(scrub(`token ${token} expired`), 'token [redacted-token] expired', token)
  }
  t.equal(scrub('hvs.ABCDEFG'), 'hvs.ABCDEFG', 'seven characters are not a token')
  // q() cuts a quoted value: the cut must not leave a piece of a token scrub() no longer sees.
  const name = `${'n'.repeat(110)} ${HVS}`
  t.equal(q(name), JSON.stringify(`${'n'.repeat(110)} [redacted…`))
  t.notMatch(q(name), /hvs\./)
  // A ProviderError message is scrubbed, then bounded.
  const long = new ProviderError('VAULT_BAD_REQUEST', `${'x '.repeat(5000)}${HVS}`)
  t.ok(long.message.length <= 2049, `${long.message.length} characters`)
  t.notMatch(new ProviderError('VAULT_BAD_REQUEST', `${'x'.repeat(2040)} ${HVS}`).message, /hvs\./)
})

t.test('cutForScrub drops a token-character run cut in two, so no short fragment survives', async (t) => {
  t.equal(cutForScrub('abc', 10), 'abc')
  t.equal(cutForScrub(`see ${HVS} now`, 10), 'see ')
  t.equal(cutForScrub('hello world', 6), 'hello ')
  t.equal(cutForScrub('hello world', 5), 'hello')
  t.equal(cutForScrub('x'.repeat(100), 50), '', 'one long run: nothing of it')
})

t.test('scrub is linear on hostile text (the inputs that made the old patterns quadratic)', async (t) => {
  // No timing: these finish at once with linear patterns and would take minutes with quadratic ones
  // (the test's timeout catches that). Their results are checked too.
  const eyj = 'eyJ'.repeat(70_000)
  t.equal(scrub(eyj), eyj)
  const dotted = 'eyJaaaaa.'.repeat(30_000)
  t.match(scrub(dotted), /^\[redacted-jwt\]/)
  const s = 's.'.repeat(100_000)
  t.equal(scrub(s), s)
  t.equal(safeText('a'.repeat(1_000_000), 10), '')
})
