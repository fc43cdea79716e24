import t from 'tap'
import { ProviderError } from '../../../../src/errors.js'
import { AddressAllowlist } from '../../../../src/vault/transport/address-allowlist.js'

t.test('empty: any address (the compatible default)', async (t) => {
  const a = new AddressAllowlist([])
  t.ok(a.allowsAny)
  t.ok(a.allows('https://anything:8200'))
})

t.test('exact entries, normalised like vaultAddress', async (t) => {
  const a = new AddressAllowlist(['HTTPS://Vault.Example:443/', 'unix:///run/agent.sock', 'http://127.0.0.1:8200'])
  t.ok(a.allows('https://vault.example'), 'default port and case')
  t.ok(a.allows('unix:///run/agent.sock'))
  t.ok(a.allows('http://127.0.0.1:8200'))
  t.notOk(a.allows('http://vault.example'), 'scheme matters')
  t.notOk(a.allows('https://vault.example:8200'), 'port matters')
  t.notOk(a.allows('https://vault.example.evil.com'))
  const err = t.throws(() => a.check('https://evil:8200')) as ProviderError
  t.equal(err.code, 'VAULT_ADDRESS_NOT_ALLOWED')
  t.match(err.message, /Vault address "https:\/\/evil:8200".*not in the provider's -vault-addr-allowlist/)
})

t.test('host wildcards', async (t) => {
  const a = new AddressAllowlist(['https://*.vault.svc:8200'])
  t.ok(a.allows('https://vault-0.vault.svc:8200'))
  t.ok(a.allows('https://a.b.vault.svc:8200'))
  t.notOk(a.allows('https://vault.svc:8200'))
  t.notOk(a.allows('https://x.vault.svc.evil:8200'))
  t.notOk(a.allows('https://xvault.svc:8200'))
  t.notOk(a.allows('http://a.vault.svc:8200'))
  t.throws(() => new AddressAllowlist(['https://vault.*.svc']), /only a leading "\*\." host wildcard/)
  t.throws(() => new AddressAllowlist(['ftp://x']), /-vault-addr-allowlist entry "ftp:\/\/x"/)
})

t.test('onUnrestricted counts the Mounts let through only because no list is set', async (t) => {
  let unrestricted = 0
  const any = new AddressAllowlist([], { onUnrestricted: () => (unrestricted += 1) })
  any.check('https://a:8200')
  any.check('https://b:8200')
  t.equal(unrestricted, 2)
  let restricted = 0
  const some = new AddressAllowlist(['https://a:8200'], { onUnrestricted: () => (restricted += 1) })
  some.check('https://a:8200')
  t.throws(() => some.check('https://b:8200'))
  t.equal(restricted, 0, 'a configured list never counts')
})
