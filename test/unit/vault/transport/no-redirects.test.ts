// No redirects (no-redirects.ts) alone over a real pool: a 3xx fails the call naming only the target's origin.
import t from 'tap'
import { noRedirects, redirectOrigin } from '../../../../src/vault/transport/no-redirects.js'
import { composed, failed, outcome, serve } from '../../../support/dispatch.js'

t.test('a 3xx answer fails the call; nothing reaches the target; other answers pass', async (t) => {
  const target = await serve(t, (_req, res) => res.end('{}'))
  const vault = await serve(t, (req, res) => {
    if (req.url === '/v1/ok') res.end('{"ok":true}')
    else res.writeHead(307, { location: `${target.url}/v1/secret?token=hvs.x` }).end()
  })
  const d = composed(t, vault.url, [noRedirects(vault.url)])
  for (const status of [301, 302, 303, 307, 308]) {
    const v = await serve(t, (_req, res) => res.writeHead(status, { location: `${target.url}/p?q=1` }).end())
    const err = failed(await outcome(composed(t, v.url, [noRedirects(v.url)]), { origin: v.url }))
    t.equal(err.code, 'VAULT_REDIRECT_REFUSED', `${status}`)
    t.match(err.message, `Vault answered ${status} with a redirect to "${target.url}"; the provider never follows`)
    t.notMatch(err.message, /\/p|q=1/, 'neither path nor query')
  }
  t.equal(failed(await outcome(d, { origin: vault.url, path: '/v1/redirect' })).code, 'VAULT_REDIRECT_REFUSED')
  t.same(target.seen, [], 'the target saw nothing')
  t.match(await outcome(d, { origin: vault.url, path: '/v1/ok' }), { status: 200, body: '{"ok":true}' })
})

t.test('a relative Location is named by the origin it resolves to', async (t) => {
  t.equal(redirectOrigin('/elsewhere', 'https://vault.example:8200/v1/x'), '"https://vault.example:8200"')
  t.equal(redirectOrigin(undefined, 'http://v:1/x'), 'no Location')
})
