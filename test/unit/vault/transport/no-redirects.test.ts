// No redirects (no-redirects.ts) alone over a real pool: a 3xx fails the call naming only the target's
// origin, and says what it is: a standby's redirect (VaultRedirect) or a refusal naming the cause.
import t from 'tap'
import type { ProviderError } from '../../../../src/errors.js'
import { VaultRedirect } from '../../../../src/vault/transport/call-errors.js'
import { noRedirects, redirectFailure, redirectOrigin } from '../../../../src/vault/transport/no-redirects.js'
import { composed, failed, outcome, serve } from '../../../support/dispatch.js'

t.test('a 3xx answer fails the call; nothing reaches the target; its connection is closed', async (t) => {
  const target = await serve(t, (_req, res) => res.end('{}'))
  for (const status of [301, 302, 303, 307, 308]) {
    const v = await serve(t, (_req, res) => res.writeHead(status, { location: `${target.url}/p?q=1` }).end())
    const d = composed(t, v.url, [noRedirects(v.url)])
    const err = failed(await outcome(d, { origin: v.url })) as ProviderError
    t.equal(err.code, 'VAULT_REDIRECT_REFUSED', `${status} to another path`)
    t.match(err.message, `Vault answered ${status} with a redirect to "${target.url}"; nothing was sent there`)
    t.match(err.message, /a web server or load balancer at the address rather than Vault's API/)
    t.notMatch(err.message, /\/p|q=1/, 'neither path nor query')
    t.notMatch(err.message, /set vaultAddress|active Vault node/, 'no advice that an election would make false')
    t.match(failed(await outcome(d, { origin: v.url })), { code: 'VAULT_REDIRECT_REFUSED' })
    t.ok(v.connections() >= 2, 'each redirect closed its connection: the second call needed a new one')
  }
  t.same(target.seen, [], 'the target saw nothing')
})

t.test("a standby's 307 or 308 to the same path is a VaultRedirect naming its target", async (t) => {
  const target = await serve(t, (_req, res) => res.end('{}'))
  const standby = await serve(t, (req, res) => {
    if (req.url === '/v1/ok') res.end('{"ok":true}')
    else res.writeHead(req.url === '/v1/p?q=1' ? 307 : 308, { location: `${target.url}${req.url}` }).end()
  })
  const d = composed(t, standby.url, [noRedirects(standby.url)])
  const r307 = failed(await outcome(d, { origin: standby.url, path: '/v1/p?q=1' }))
  t.ok(r307 instanceof VaultRedirect)
  t.match(r307, { status: 307, target: target.url, shown: `"${target.url}"` })
  t.match(failed(await outcome(d, { origin: standby.url, path: '/v1/auth/jwt/login' })), {
    status: 308,
    target: target.url,
  })
  t.same(target.seen, [], 'never followed here')
  t.match(await outcome(d, { origin: standby.url, path: '/v1/ok' }), { status: 200, body: '{"ok":true}' })
})

t.test('what a redirect is, by its Location', async (t) => {
  const from = 'http://vault.example:8200/v1/secret/data/a?version=2'
  const kind = (status: number, location: string | undefined): string => {
    const f = redirectFailure(status, location, from)
    return f instanceof VaultRedirect ? `standby ${f.target}` : `refused: ${(f as ProviderError).detail}`
  }
  t.equal(kind(307, 'http://10.0.0.2:8200/v1/secret/data/a?version=2'), 'standby http://10.0.0.2:8200')
  t.equal(kind(307, '/v1/secret/data/a?version=2'), 'standby http://vault.example:8200', 'a relative Location')
  t.equal(kind(308, 'HTTP://Vault-2.example:80/v1/secret/data/a?version=2'), 'standby http://vault-2.example')
  t.match(
    kind(307, 'http://10.0.0.2:8200/v1/secret/data/a'),
    /^refused: .*web server or load balancer/,
    'query differs',
  )
  t.match(kind(307, 'http://10.0.0.2:8200/ui/'), /^refused: /, 'another path')
  t.match(kind(302, 'http://10.0.0.2:8200/v1/secret/data/a?version=2'), /^refused: /, 'a 302 is no standby')
  t.match(kind(308, 'https://vault.example/v1/secret/data/a?version=2'), /another scheme \(https\)/)
  t.match(
    redirectFailure(307, 'http://x/v1/a', 'https://vault.example/v1/a'),
    { code: 'VAULT_REDIRECT_REFUSED', detail: /another scheme \(http\)/ },
    'https to http is refused, whatever the path',
  )
  t.match(kind(307, undefined), /^refused: .*not Vault's API/)
  t.match(kind(307, 'http://[::1'), /^refused: .*an unreadable Location/)
})

t.test('a relative Location is named by the origin it resolves to', async (t) => {
  t.equal(redirectOrigin('/elsewhere', 'https://vault.example:8200/v1/x'), '"https://vault.example:8200"')
  t.equal(redirectOrigin(undefined, 'http://v:1/x'), 'no Location')
})
