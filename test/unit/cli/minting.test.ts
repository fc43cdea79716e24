// A token the CLI mints is sent only where the operator points it: what a file decides is shown and confirmed.
import { PassThrough } from 'node:stream'
import t from 'tap'
import { chosen, confirmMinting, type MintPlan } from '../../../src/cli/minting.js'
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
