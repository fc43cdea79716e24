// A token the CLI mints is sent only where the operator points it: what a file decides is shown and confirmed.
import { PassThrough } from 'node:stream'
import t from 'tap'
import { chosen, classLogin, confirmMinting, type MintPlan } from '../../../src/cli/minting.js'
import { UsageError } from '../../../src/cli/output.js'
import { AddressAllowlist } from '../../../src/vault/transport/address-allowlist.js'

function streams(
  tty: boolean,
  answer = '',
): { input: NodeJS.ReadStream; output: NodeJS.WriteStream; text: () => string } {
  const input = new PassThrough() as unknown as NodeJS.ReadStream
  input.isTTY = tty
  const output = new PassThrough() as unknown as NodeJS.WriteStream
  let text = ''
  ;(output as unknown as PassThrough).on('data', (c: Buffer) => (text += c.toString()))
  if (answer !== '') setImmediate(() => (input as unknown as PassThrough).write(`${answer}\n`))
  return { input, output, text: () => text }
}

const plan = (over: Partial<MintPlan> = {}): MintPlan => ({
  namespace: chosen('team-a', 'team-b', 'default'),
  serviceAccount: 'app',
  audience: chosen(undefined, undefined, 'vault'),
  destination: chosen('https://vault.corp:8200', 'https://evil.example', ''),
  vaultAddress: 'https://vault.corp:8200',
  ...over,
})

t.test('chosen: the command line, else the file, else the default', async (t) => {
  t.same(chosen('a', 'b', 'c'), { value: 'a', from: 'command line' })
  t.same(chosen(undefined, 'b', 'c'), { value: 'b', from: 'file' })
  t.same(chosen(undefined, '', 'c'), { value: 'c', from: 'default' })
})

t.test('everything from the command line: nothing to confirm', async (t) => {
  const s = streams(false)
  await confirmMinting(plan(), { yes: false, allowlist: new AddressAllowlist([]), ...s })
  t.equal(s.text(), '')
})

t.test('a namespace from the file is refused without a confirmation, and shown', async (t) => {
  const s = streams(false)
  const p = plan({ namespace: chosen(undefined, 'team-b', 'default') })
  const err = await confirmMinting(p, { yes: false, allowlist: new AddressAllowlist([]), ...s }).catch((e) => e)
  t.type(err, UsageError)
  t.match(err.message, 'service account team-b/app')
  t.match(err.message, 'the SecretProviderClass file chose the namespace: not confirmed')
  await confirmMinting(p, { yes: true, allowlist: new AddressAllowlist([]), ...s })
  t.match(s.text(), 'chose the namespace (--yes)', '--yes still shows it')
})

t.test('on a terminal the operator is asked', async (t) => {
  const p = plan({ destination: chosen(undefined, 'https://evil.example', '') })
  const no = streams(true, 'n')
  await t.rejects(confirmMinting(p, { yes: false, allowlist: new AddressAllowlist([]), ...no }), UsageError)
  t.match(no.text(), /send it to https:\/\/evil\.example.*Continue\? \[y\/N\]/s)
  const yes = streams(true, 'y')
  await confirmMinting(p, { yes: false, allowlist: new AddressAllowlist([]), ...yes })
})

t.test('an address outside --vault-addr-allowlist is refused even with --yes', async (t) => {
  const s = streams(false)
  const p = plan({ vaultAddress: 'https://evil.example', destination: chosen(undefined, 'https://evil.example', '') })
  const err = await confirmMinting(p, {
    yes: true,
    allowlist: new AddressAllowlist(['https://vault.corp:8200']),
    ...s,
  }).catch((e) => e)
  t.type(err, UsageError)
  t.match(err.message, 'https://evil.example is not in --vault-addr-allowlist')
})

t.test('what the file says reaches the terminal without its control characters', async (t) => {
  const s = streams(false)
  const p = plan({ namespace: chosen(undefined, 'ns\u001b]0;pwned\u0007', 'default') })
  const err = await confirmMinting(p, { yes: false, allowlist: new AddressAllowlist([]), ...s }).catch((e) => e)
  t.match(err.message, 'ns\\u001b]0;pwned\\u0007')
})

const DEFAULTS = { authMount: 'kubernetes', tls: { skipVerify: false } }
const BAO_FILE = {
  baoAddress: 'https://evil.example',
  vaultAddress: 'https://vault.corp:8200',
  baoRoleName: 'web',
  vaultNamespace: 'team-a',
  audience: 'openbao-web',
}

t.test('classLogin: what the Mount uses, by its own parser, and who chose it', async (t) => {
  const file = classLogin(BAO_FILE, {}, 'openbao', DEFAULTS)
  t.same(file.address, { value: 'https://evil.example', from: 'file', parameter: 'baoAddress' }, 'baoAddress first')
  t.same(file.role, { value: 'web', from: 'file', parameter: 'baoRoleName' })
  t.same(file.vaultNamespace, { value: 'team-a', from: 'file', parameter: 'vaultNamespace' })
  t.same(file.audience, { value: 'openbao-web', from: 'file', parameter: 'audience' })
  t.equal(file.product, 'OpenBao')

  const overVault = classLogin(BAO_FILE, { vaultAddress: 'https://vault.corp:8200' }, 'openbao', DEFAULTS)
  t.same(
    overVault.address,
    { value: 'https://evil.example', from: 'file', parameter: 'baoAddress' },
    'a --param the Mount does not read changes nothing',
  )

  const overBao = classLogin(BAO_FILE, { baoAddress: 'https://vault.corp:8200/' }, 'openbao', DEFAULTS)
  t.same(
    overBao.address,
    { value: 'https://vault.corp:8200', from: 'command line', parameter: 'baoAddress' },
    '--param baoAddress is the command line',
  )

  const vault = classLogin(BAO_FILE, {}, 'vault', DEFAULTS)
  t.same(
    vault.address,
    { value: 'https://vault.corp:8200', from: 'file', parameter: 'vaultAddress' },
    'provider: vault reads vaultAddress',
  )
  t.same(vault.audience, { value: 'openbao-web', from: 'file', parameter: 'audience' })

  const none = classLogin({ roleName: 'web' }, {}, 'openbao', DEFAULTS)
  t.equal(none.address, undefined, "no address anywhere: the daemon's own")
  t.same(none.audience, { value: 'openbao', from: 'default' }, "the flavour's default audience")
  const flag = classLogin({ roleName: 'web' }, {}, 'openbao', { ...DEFAULTS, address: 'https://vault.corp:8200' })
  t.same(flag.address, { value: 'https://vault.corp:8200', from: 'default' })

  t.throws(
    () => classLogin({ baoAddress: 'ftp://x' }, {}, 'openbao', DEFAULTS),
    UsageError,
    'a bad parameter: no token',
  )
})

t.test('the prompt and the refusals name the parameter the class used', async (t) => {
  const login = classLogin(BAO_FILE, {}, 'openbao', DEFAULTS)
  const p: MintPlan = {
    namespace: chosen('default', undefined, 'default'),
    serviceAccount: 'app',
    audience: chosen('vault', undefined, 'vault'),
    destination: login.address!,
    vaultAddress: login.address!.value,
    product: login.product,
    role: login.role,
    vaultNamespace: login.vaultNamespace,
    addressOption: '--param',
  }
  const s = streams(false)
  const err = await confirmMinting(p, { yes: false, allowlist: new AddressAllowlist([]), ...s }).catch((e) => e)
  t.type(err, UsageError)
  t.match(err.message, 'send it to https://evil.example (parameter "baoAddress" of the SecretProviderClass file)')
  t.match(err.message, 'to log in as role web in OpenBao namespace team-a')
  t.match(err.message, 'the SecretProviderClass file chose the OpenBao address (baoAddress): not confirmed')
  t.match(err.message, '--param baoAddress=<address>')
  const outside = await confirmMinting(p, {
    yes: true,
    allowlist: new AddressAllowlist(['https://vault.corp:8200']),
    ...s,
  }).catch((e) => e)
  t.match(
    outside.message,
    'the OpenBao address https://evil.example (parameter "baoAddress" of the SecretProviderClass file) is not in --vault-addr-allowlist',
  )
})
