import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import {
  VaultCallAborted,
  VaultConnectionError,
  VaultHttpError,
  VaultRedirect,
  vaultErrorsOf,
  type ConnectionFailureKind,
} from '../../../src/vault/transport/call-errors.js'
import {
  MAX_VAULT_ERROR_CHARS,
  oneLine,
  classify,
  deadlineError,
  describeFailure,
  isTimeout,
  SecretNotStored,
  statusOf,
  vaultError,
  type VaultFailure,
} from '../../../src/vault/failure-to-error.js'

const JWT =
  'eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6c2hvcDp3ZWIifQ.c2lnbmF0dXJlLW5vdC1yZWFs'
const TOKEN = 'hvs.CAESIFakeTokenForUnitTestsOnly0123456789abcdef'

/** What the transport throws for an HTTP error answer with this body. */
function httpError(statusCode: number, body: unknown, extra: Record<string, unknown> = {}): VaultHttpError {
  const err = new VaultHttpError(statusCode, vaultErrorsOf(body))
  Object.assign(err, extra)
  return err
}

const KINDS: Record<string, ConnectionFailureKind> = {
  ETIMEDOUT: 'timeout',
  ECONNREFUSED: 'refused',
  ENOENT: 'refused',
  ECONNRESET: 'reset',
  ENOTFOUND: 'dns',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'tls',
  ERR_TLS_CERT_ALTNAME_INVALID: 'tls',
  CERT_HAS_EXPIRED: 'tls',
  EPROTO: 'tls',
}

/** What the transport throws when no answer came; the message may hold anything (it is never shown). */
function socketError(code: string): VaultConnectionError {
  return new VaultConnectionError(KINDS[code] ?? 'other', code, `connect ${code} 10.0.0.1:8200 with ${TOKEN}`)
}

t.test('describeFailure: HTTP answers', async (t) => {
  t.strictSame(describeFailure(httpError(403, { errors: ['permission denied'] })), {
    status: 403,
    detail: 'permission denied',
    unavailable: false,
  })
  t.strictSame(describeFailure(httpError(400, { errors: ['invalid role name "web"', 'second'] })), {
    status: 400,
    detail: 'invalid role name "web"; second',
    unavailable: false,
  })
  t.strictSame(describeFailure(httpError(503, { errors: [] })), {
    status: 503,
    detail: 'Vault is sealed or in standby',
    unavailable: true,
  })
  t.strictSame(describeFailure(httpError(503, { errors: ['Vault is sealed'] })), {
    status: 503,
    detail: 'Vault is sealed',
    unavailable: true,
  })
  for (const status of [502, 504]) t.equal(describeFailure(httpError(status, 'Bad Gateway')).unavailable, true)
  t.equal(describeFailure(httpError(500, { errors: ['internal error'] })).unavailable, false)
  // Bodies without usable errors[].
  for (const body of [
    undefined,
    null,
    '',
    '<html>oops</html>',
    { errors: 'text' },
    { errors: [1, null, '', { a: 1 }] },
    { warnings: ['w'] },
  ]) {
    t.equal(describeFailure(httpError(404, body)).detail, 'no error text', JSON.stringify(body))
  }
  t.equal(describeFailure(httpError(404, { errors: [1, 'kept', ''] })).detail, 'kept')
  // Long error text is cut.
  const long = describeFailure(httpError(400, { errors: ['e'.repeat(2000)] })).detail
  t.equal(long.length, MAX_VAULT_ERROR_CHARS + 1)
  t.ok(long.endsWith('…'))
  // Only the transport's typed errors are read: a library's error shape is not trusted.
  t.equal(describeFailure({ response: { statusCode: 429, body: {} } }).status, undefined)
})

t.test('describeFailure: socket and TLS errors', async (t) => {
  t.strictSame(describeFailure(socketError('ECONNREFUSED')), {
    detail: 'connection failed (ECONNREFUSED)',
    unavailable: true,
  })
  t.strictSame(describeFailure(socketError('ENOTFOUND')), {
    detail: 'connection failed (ENOTFOUND)',
    unavailable: true,
  })
  t.strictSame(describeFailure(socketError('ENOENT')), { detail: 'connection failed (ENOENT)', unavailable: true })
  t.strictSame(describeFailure(socketError('ETIMEDOUT')), { detail: 'no answer in time', unavailable: true })
  t.equal(isTimeout(socketError('ETIMEDOUT')), true)
  t.strictSame(describeFailure(new VaultCallAborted()), { detail: 'the Mount was cancelled', unavailable: true })
  t.equal(isTimeout(socketError('ECONNREFUSED')), false)
  t.equal(isTimeout(undefined), false)
  t.equal(isTimeout(httpError(504, {})), false)
  t.strictSame(describeFailure(socketError('DEPTH_ZERO_SELF_SIGNED_CERT')), {
    detail: 'Vault presents a self-signed certificate; set vaultCACertPath (DEPTH_ZERO_SELF_SIGNED_CERT)',
    unavailable: true,
  })
  t.match(describeFailure(socketError('ERR_TLS_CERT_ALTNAME_INVALID')).detail, 'vaultTLSServerName')
  t.match(describeFailure(socketError('CERT_HAS_EXPIRED')).detail, 'expired')
  t.match(describeFailure(socketError('EPROTO')).detail, 'http:// instead of https://')
  // Nothing recognisable.
  for (const thrown of [new Error(`boom ${TOKEN}`), 'string', undefined, null, 42, { code: 17 }]) {
    t.strictSame(describeFailure(thrown), { detail: 'request failed', unavailable: true })
  }
})

t.test('statusOf', async (t) => {
  t.equal(statusOf(httpError(404, {})), 404)
  t.equal(statusOf(socketError('ECONNREFUSED')), undefined)
  t.equal(statusOf({ response: { statusCode: '404' } }), undefined)
  t.equal(statusOf(null), undefined)
})

t.test('classify: login vs read', async (t) => {
  const f = (status?: number): VaultFailure => ({ status, detail: 'x', unavailable: false })
  const table: Array<[number | undefined, string, string]> = [
    [undefined, 'VAULT_UNAVAILABLE', 'VAULT_UNAVAILABLE'],
    [400, 'VAULT_LOGIN_DENIED', 'VAULT_BAD_REQUEST'],
    [401, 'VAULT_LOGIN_DENIED', 'VAULT_PERMISSION_DENIED'],
    [403, 'VAULT_LOGIN_DENIED', 'VAULT_PERMISSION_DENIED'],
    [404, 'VAULT_NOT_FOUND', 'VAULT_NOT_FOUND'],
    [405, 'VAULT_LOGIN_DENIED', 'VAULT_BAD_REQUEST'],
    [412, 'VAULT_UNAVAILABLE', 'VAULT_UNAVAILABLE'],
    [422, 'VAULT_LOGIN_DENIED', 'VAULT_BAD_REQUEST'],
    [429, 'VAULT_RATE_LIMITED', 'VAULT_RATE_LIMITED'],
    [500, 'VAULT_UNAVAILABLE', 'VAULT_UNAVAILABLE'],
    [502, 'VAULT_UNAVAILABLE', 'VAULT_UNAVAILABLE'],
    [503, 'VAULT_UNAVAILABLE', 'VAULT_UNAVAILABLE'],
    [504, 'VAULT_UNAVAILABLE', 'VAULT_UNAVAILABLE'],
    [200, 'VAULT_BAD_RESPONSE', 'VAULT_BAD_RESPONSE'],
    [301, 'VAULT_BAD_RESPONSE', 'VAULT_BAD_RESPONSE'],
    [418, 'VAULT_BAD_RESPONSE', 'VAULT_BAD_RESPONSE'],
  ]
  for (const [status, login, read] of table) {
    t.equal(classify(f(status), true), login, `login ${status}`)
    t.equal(classify(f(status), false), read, `read ${status}`)
  }
})

t.test('vaultError: a 403 on login vs on read', async (t) => {
  const denied = httpError(403, { errors: ['permission denied'] })
  const login = vaultError(denied, { call: 'login to auth/kubernetes as role "web"' }, true)
  t.ok(login instanceof ProviderError)
  t.equal(login.code, 'VAULT_LOGIN_DENIED')
  t.equal(login.message, 'login to auth/kubernetes as role "web": Vault answered 403: permission denied')

  const read = vaultError(denied, { call: 'object "db-password" (GET secret/data/db)' }, false)
  t.equal(read.code, 'VAULT_PERMISSION_DENIED')
  t.equal(read.message, 'object "db-password" (GET secret/data/db): Vault answered 403: permission denied')

  const badRole = vaultError(httpError(400, { errors: ['invalid role name "web"'] }), { call: 'login' }, true)
  t.equal(badRole.code, 'VAULT_LOGIN_DENIED')
  t.equal(badRole.message, 'login: Vault answered 400: invalid role name "web"')

  const missing = vaultError(httpError(404, { errors: [] }), { call: 'object "a" (GET secret/data/a)' }, false)
  t.equal(missing.code, 'VAULT_NOT_FOUND')
  t.equal(missing.message, 'object "a" (GET secret/data/a): Vault answered 404: no error text')

  const down = vaultError(socketError('ECONNREFUSED'), { call: 'login' }, true)
  t.equal(down.code, 'VAULT_UNAVAILABLE')
  t.equal(down.message, 'login: connection failed (ECONNREFUSED)')

  const sealed = vaultError(httpError(503, { errors: [] }), { call: 'login' }, true)
  t.equal(sealed.code, 'VAULT_UNAVAILABLE')
  t.equal(sealed.message, 'login: Vault answered 503: Vault is sealed or in standby')

  // The caller left: CANCELLED, saying so.
  const left = vaultError(new VaultCallAborted(), { call: 'object "a"' }, false)
  t.equal(left.code, 'CANCELLED')
  t.equal(left.message, 'object "a": the driver cancelled the Mount before Vault answered')

  // Out of time is not the same as a caller that left: each has its code, the message unchanged.
  const late = deadlineError({ call: 'object "a"' }, false)
  t.equal(late.code, 'DEADLINE_EXCEEDED')
  t.equal(late.message, 'object "a": Vault did not answer before the Mount\'s deadline')
  const gone = deadlineError({ call: 'object "a"' }, true)
  t.equal(gone.code, 'CANCELLED')
  t.equal(gone.message, 'object "a": the driver cancelled the Mount before Vault answered')

  // A ProviderError passes through untouched.
  const own = new ProviderError('DEADLINE_EXCEEDED', 'out of time')
  t.equal(vaultError(own, { call: 'login' }, true), own)
})

t.test('vaultError: what the text says is in fields too', async (t) => {
  const fields = { call: 'object "a": GET secret/data/a (role "web")', address: 'https://vault:8200' }
  const denied = vaultError(httpError(403, { errors: ['permission denied'] }), fields, false)
  t.same(denied.fields, { ...fields, vaultStatus: 403, proxy: undefined, attempts: undefined })
  t.equal(denied.detail, 'Vault answered 403: permission denied')

  // Attempts are told when Vault stayed unavailable for a read, as the text always said.
  const unavailable = Object.assign(httpError(503, { errors: [] }), { attempts: 5 })
  const down = vaultError(unavailable, fields, false)
  t.equal(down.fields.attempts, 5)
  t.equal(down.message, `${fields.call}: Vault answered 503: Vault is sealed or in standby (after 5 attempts)`)
  t.equal(vaultError(unavailable, fields, true).fields.attempts, undefined, 'not for a login')
  const limited = vaultError(Object.assign(httpError(429, { errors: [] }), { attempts: 5 }), fields, false)
  t.equal(limited.code, 'VAULT_RATE_LIMITED')
  t.equal(limited.fields.attempts, undefined, 'nor for another code')

  // A refusal of the transport says what happened; the call is added as a field.
  const refusal = new ProviderError('VAULT_REDIRECT_REFUSED', 'Vault answered 307 (a redirect); it was not followed')
  const refused = vaultError(refusal, fields, false)
  t.equal(refused.code, 'VAULT_REDIRECT_REFUSED')
  t.same(refused.fields, fields)
  t.equal(refused.message, `${fields.call}: Vault answered 307 (a redirect); it was not followed`)
})

t.test(
  "one node's answers, once the deadline ran out: UNAVAILABLE saying electing or sealed, never a set-up",
  async (t) => {
    const fields = {
      call: 'login to Vault at http://vault:8200 (role "app", auth mount "jwt")',
      address: 'http://vault:8200',
    }
    const node = (status: number, errors: string[], attempts: number): VaultHttpError =>
      Object.assign(new VaultHttpError(status, errors, undefined, { kind: 'errors', entries: errors.length }), {
        attempts,
      })
    const cases: Array<[unknown, RegExp, number]> = [
      [
        Object.assign(new VaultRedirect(307, 'http://10.0.0.1:8200', '"http://10.0.0.1:8200"'), { attempts: 31 }),
        /^the Vault cluster has no active node to answer \(electing a leader\): a standby redirected to "http:\/\/10\.0\.0\.1:8200" \(307\)$/,
        307,
      ],
      [
        node(500, ['local node not active but active cluster node not found'], 12),
        /^the Vault cluster has no active node to answer \(electing a leader\): a standby answered 500: local node not active but active cluster node not found$/,
        500,
      ],
      [node(503, ['Vault is sealed'], 40), /^Vault is sealed: the node answered 503: Vault is sealed$/, 503],
      [
        node(429, [], 3),
        /^the Vault cluster has no active node to answer \(electing a leader\): a standby that had not reached/,
        429,
      ],
    ]
    for (const [err, detail, status] of cases) {
      for (const login of [true, false]) {
        const pe = vaultError(err, fields, login)
        t.equal(pe.code, 'VAULT_UNAVAILABLE', `${status}`)
        t.match(pe.detail, detail)
        t.match(pe.message, /\b(electing|sealed)\b/)
        t.notMatch(pe.message, /set vaultAddress|active Vault node|load balancer/, 'no configuration advice')
        t.same(pe.fields, {
          ...fields,
          vaultStatus: status,
          proxy: undefined,
          attempts: (err as VaultHttpError).attempts,
        })
        t.match(pe.message, / \(after \d+ attempts\)$/, 'how long it was tried, for a login too')
      }
    }
    const permanent = vaultError(new VaultRedirect(308, 'http://x', '"http://x:80"'), fields, true)
    t.equal(permanent.code, 'VAULT_REDIRECT_REFUSED')
    t.match(
      permanent.detail,
      /^Vault answered 308 with a redirect to "http:\/\/x:80", a permanent redirect the provider does not follow/,
    )
  },
)

t.test('SecretNotStored: made from fields, and stays one with more context', async (t) => {
  const fields = { call: 'GET secret/data/a' }
  const err = new SecretNotStored('Vault answered 404: no error text', fields)
  t.equal(err.code, 'VAULT_NOT_FOUND')
  t.equal(err.message, 'GET secret/data/a: Vault answered 404: no error text')
  const more = err.within({ object: { index: 0, name: 'a' } })
  t.ok(more instanceof SecretNotStored)
  t.equal(more.message, 'object "a": GET secret/data/a: Vault answered 404: no error text')
})

t.test('vaultError never leaks the token, the JWT or the request', async (t) => {
  // Even with a library's request options stuck on it, only the typed fields are read.
  const err = httpError(
    403,
    { errors: ['permission denied'] },
    {
      options: {
        method: 'POST',
        uri: 'https://vault:8200/v1/auth/kubernetes/login',
        headers: { 'X-Vault-Token': TOKEN },
        json: { jwt: JWT, role: 'web' },
      },
      config: {
        headers: { 'X-Vault-Token': TOKEN, Authorization: `Bearer ${JWT}` },
        data: JSON.stringify({ jwt: JWT, role: 'web' }),
      },
      request: { body: JSON.stringify({ jwt: JWT }) },
    },
  )
  err.message = `403 - POST with ${TOKEN} body {"jwt":"${JWT}"}`
  for (const login of [true, false]) {
    const pe = vaultError(err, { call: 'login' }, login)
    t.notMatch(pe.message, TOKEN)
    t.notMatch(pe.message, JWT)
    t.notMatch(pe.message, 'hvs.')
    t.notMatch(pe.message, 'eyJ')
    t.notMatch(pe.message, 'X-Vault-Token')
    t.equal(pe.message, 'login: Vault answered 403: permission denied')
  }
  // A socket error whose message holds a token: only the code is used.
  const sock = vaultError(socketError('ECONNRESET'), { call: 'object "a"' }, false)
  t.equal(sock.message, 'object "a": connection failed (ECONNRESET)')
  // If Vault itself echoes a credential in errors[], it is scrubbed.
  const echoed = vaultError(
    httpError(400, { errors: [`bad jwt ${JWT}`, `token ${TOKEN} expired`] }),
    { call: 'login' },
    true,
  )
  t.equal(echoed.message, 'login: Vault answered 400: bad jwt [redacted-jwt]; token [redacted-token] expired')
})

t.test('Vault error texts are cut and scrubbed before any pattern runs on them', async (t) => {
  // Vault echoes pod input: a 200,000-character roleName in "role X not found".
  const echoed = `role "${'a'.repeat(200_000)}" could not be found`
  const err = vaultError(httpError(400, { errors: [echoed] }), { call: 'login' }, true)
  t.ok(err.message.length < MAX_VAULT_ERROR_CHARS + 40, `${err.message.length} characters`)
  t.match(err.message, /^login: Vault answered 400: role "…|^login: Vault answered 400: role "$/)
  // A token cut in two at the limit is gone entirely, not left as a short unrecognisable piece.
  const padded = `${'x '.repeat(MAX_VAULT_ERROR_CHARS / 2 - 3)}${TOKEN}`
  const cut = describeFailure(httpError(400, { errors: [padded] })).detail
  t.notMatch(cut, /hvs\./)
  t.notMatch(cut, TOKEN.slice(4, 12))
  // Thousands of entries: a bounded number is read.
  const many = describeFailure(httpError(400, { errors: Array.from({ length: 10_000 }, (_, i) => `e${i}`) })).detail
  t.equal(many, 'e0; e1; e2; e3; e4; e5; e6; e7')
})

t.test('oneLine is linear and keeps its meaning', async (t) => {
  t.equal(oneLine('1 error occurred:\n\t* permission denied\n\n'), 'permission denied')
  t.equal(oneLine('2 errors occurred:\n\t* a\n\t* b\n\n'), 'a; b')
  t.equal(oneLine('* first line keeps its star\n  * x'), '* first line keeps its star; x')
  t.equal(oneLine('a\n\n   \n b'), 'a; b')
  // Inputs that made the old patterns quadratic finish, with the right result (no timing asserted).
  t.equal(oneLine('1'.repeat(100_000)), '1'.repeat(100_000))
  t.equal(oneLine('\n'.repeat(100_000)), '')
  t.equal(oneLine(`${'\n '.repeat(50_000)}x`), 'x')
})
