// The CLI takes every daemon flag of the table (but those that mean nothing in its own process) and
// hands it to the daemon's own parser: a flag given to `mount --in-process` configures its Mount
// service exactly as the same flag configures the daemon, under either name, in either spelling.
import { Command, CommanderError } from 'commander'
import t from 'tap'
import { CLI_PROVIDER_FLAGS, addProviderFlags, providerArgv } from '../../../src/cli/provider-flags.js'
import { ConfigError, loadConfig, type ProviderConfig } from '../../../src/config/config.js'
import { FLAGS, flagNames } from '../../../src/config/flags.js'
import { NEEDS, SAMPLES } from '../../support/flag-samples.js'
import { thrown } from '../../support/thrown.js'

/** What the CLI hands the daemon's parser for this command line, as `mount` would. */
function argvFor(args: string[]): string[] {
  const cmd = addProviderFlags(new Command('mount').exitOverride().configureOutput({ writeErr: () => {} }))
  cmd.parse(args, { from: 'user' })
  return providerArgv(cmd.opts())
}

const viaCli = (args: string[]): ProviderConfig => loadConfig(argvFor(args), {})

t.test('every daemon flag the CLI takes configures what it configures in the daemon', async (t) => {
  t.ok(CLI_PROVIDER_FLAGS.length >= 30, `${CLI_PROVIDER_FLAGS.length} flags`)
  for (const spec of CLI_PROVIDER_FLAGS) {
    const needs = (NEEDS[spec.name] ?? []).map((f) => `-${f}`)
    const expected = loadConfig([...(NEEDS[spec.name] ?? []), `-${spec.name}=${SAMPLES[spec.name]}`], {})
    t.notSame(expected, loadConfig(NEEDS[spec.name] ?? [], {}), `-${spec.name}: the sample is not the default`)
    for (const name of flagNames(spec)) {
      // commander's spellings: `--name=value` and `--name value`; a boolean bare or `--no-name`.
      const spellings =
        spec.kind === 'boolean'
          ? [[SAMPLES[spec.name] === 'true' ? `--${name}` : `--no-${name}`]]
          : [[`--${name}=${SAMPLES[spec.name]}`], [`--${name}`, SAMPLES[spec.name]]]
      for (const args of spellings) t.same(viaCli([...needs, ...args]), expected, args.join(' '))
    }
  }
})

t.test('flags the CLI did not take before reach the Mount service', async (t) => {
  const config = viaCli([
    '--identity-scope=serviceaccount',
    '--max-mount-bytes',
    '64KiB',
    '--openbao-addr=https://bao.example:8200',
    '--mount-timeout=5s',
    '--share-dynamic-secrets',
    '--vault-auth-namespace=admin',
  ])
  t.equal(config.identityScope, 'serviceaccount')
  t.equal(config.limits.maxMountBytes, 64 * 1024)
  t.equal(config.vault.address, 'https://bao.example:8200')
  t.equal(config.mountTimeoutMs, 5000)
  t.equal(config.shareDynamicSecrets, true)
  t.equal(config.vault.authNamespace, 'admin')
})

t.test('a boolean is true bare, false as --no-…, and left to the environment when not given', async (t) => {
  t.same(argvFor(['--vault-tls-skip-verify']), ['--vault-tls-skip-verify=true'])
  t.same(argvFor(['--no-vault-tls-skip-verify']), ['--vault-tls-skip-verify=false'])
  t.same(argvFor(['--no-openbao-tls-skip-verify']), ['--openbao-tls-skip-verify=false'])
  t.equal(
    loadConfig(argvFor(['--no-vault-tls-skip-verify']), { VAULT_SKIP_VERIFY: 'true' }).vault.tls.skipVerify,
    false,
  )
  t.equal(loadConfig(argvFor([]), { VAULT_SKIP_VERIFY: 'true' }).vault.tls.skipVerify, true)
  t.same(argvFor([]), [], 'nothing given: nothing passed, so every default is the daemon’s')
})

t.test('the two names of one setting with different values are refused by the daemon’s parser', async (t) => {
  t.equal(
    thrown(() => viaCli(['--vault-addr=https://a.example:8200', '--openbao-addr=https://b.example:8200']), ConfigError)
      .message,
    '-vault-addr and -openbao-addr set the same thing to different values: give one of them, or the same value to both',
  )
})

t.test('the flags that mean nothing in the CLI’s process are not options of it', async (t) => {
  const daemonOnly = FLAGS.filter((f) => f.daemonOnly !== undefined)
  t.ok(daemonOnly.length >= 5)
  for (const { name } of daemonOnly) {
    t.equal(thrown(() => argvFor([`--${name}=x`]), CommanderError).code, 'commander.unknownOption', `--${name}`)
  }
})
