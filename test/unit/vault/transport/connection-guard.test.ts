// The connection guard (connection-guard.ts) as a real pool's connector: every new connection is checked.
import t from 'tap'
import { guardedConnector } from '../../../../src/vault/transport/connection-guard.js'
import { composed, failed, outcome, serve } from '../../../support/dispatch.js'

t.test('each new connection is admitted only while the allow-list admits the address', async (t) => {
  // Each answer closes its connection, so every call opens (and checks) a new one.
  const vault = await serve(t, (_req, res) => res.writeHead(200, { connection: 'close' }).end('{}'))
  let allowed = true
  const connect = guardedConnector(vault.url, {}, { allowlist: { allows: () => allowed } }, vault.url)
  const d = composed(t, vault.url, [], { connect })
  t.match(await outcome(d, {}), { status: 200 })
  allowed = false
  const err = failed(await outcome(d, {}))
  t.equal(err.code, 'VAULT_ADDRESS_NOT_ALLOWED')
  t.match(err.message, `Vault address "${vault.url}" is not in the provider's -vault-addr-allowlist; nothing was sent`)
  t.equal(vault.connections(), 1, 'the refused connection was never opened')
})

t.test('a connection to any other host or port is refused before it is opened', async (t) => {
  const other = await serve(t, (_req, res) => res.end('{}'))
  const connect = guardedConnector(
    'http://127.0.0.1:8200',
    {},
    { allowlist: { allows: () => true } },
    'http://127.0.0.1:8200',
  )
  const err = failed(await outcome(composed(t, other.url, [], { connect }), {}))
  t.equal(err.code, 'VAULT_ADDRESS_NOT_ALLOWED')
  t.match(err.message, `a connection to "${other.url.slice('http://'.length)}" is not the transport's Vault address`)
  t.equal(other.connections(), 0)
})
