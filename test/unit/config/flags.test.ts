// The flag table is what the config loader reads: every flag of it is accepted and changes the
// configuration, its environment variable (when it has one) does the same when the flag is not
// given, and a flag outside the table stops the daemon.
import t from 'tap'
import { ConfigError, loadConfig } from '../../../src/config/config.js'
import { flag, flagNames, FLAGS } from '../../../src/config/flags.js'
import { NEEDS, SAMPLES } from '../../support/flag-samples.js'
import { thrown } from '../../support/thrown.js'

t.test('every flag of the table is accepted and changes the configuration', async (t) => {
  const defaults = loadConfig([], {})
  t.ok(FLAGS.length >= 30, `${FLAGS.length} flags`)
  for (const { name } of FLAGS) {
    const needs = NEEDS[name] ?? []
    t.notSame(
      loadConfig([...needs, `-${name}=${SAMPLES[name]}`], {}),
      needs.length === 0 ? defaults : loadConfig(needs, {}),
      `-${name}=${SAMPLES[name]}`,
    )
  }
})

t.test('boolean flags of the table are true when bare', async (t) => {
  const booleans = FLAGS.filter((f) => f.kind === 'boolean')
  t.ok(booleans.length >= 4)
  for (const { name } of booleans) t.same(loadConfig([`-${name}`], {}), loadConfig([`-${name}=true`], {}), name)
})

t.test('a flag’s environment variable sets what the flag sets, and the flag wins', async (t) => {
  const withEnv = FLAGS.filter((f) => f.env !== undefined)
  t.ok(withEnv.length >= 8, `${withEnv.length} flags with a variable`)
  for (const { name, env } of withEnv) {
    t.same(loadConfig([], { [env!]: SAMPLES[name] }), loadConfig([`-${name}=${SAMPLES[name]}`], {}), env!)
    t.same(
      loadConfig([`-${name}=${SAMPLES[name]}`], { [env!]: SAMPLES[name] === 'true' ? 'false' : '/other' }),
      loadConfig([`-${name}=${SAMPLES[name]}`], {}),
      `-${name} beats ${env}`,
    )
  }
})

t.test('a flag outside the table stops the daemon', async (t) => {
  for (const name of ['vault-token', 'vault-adr', 'openbao-address']) {
    t.ok(thrown(() => loadConfig([`-${name}=x`], {}), ConfigError).message.includes(name), name)
  }
})

// The default the docs and the CLI's help show (a lone code span) is what the daemon takes without the flag.
// -hmac-secret-name is the one exception: given, it names the Secret of both flavours (checked below).
const DOCUMENTED_DEFAULTS = FLAGS.filter((f) => /^`[^`]+`$/.test(f.default ?? '') && f.name !== 'hmac-secret-name')

t.test('the documented default of a flag is what the daemon takes without it', async (t) => {
  t.ok(DOCUMENTED_DEFAULTS.length >= 20, `${DOCUMENTED_DEFAULTS.length} flags with a documented value`)
  const defaults = loadConfig([], {})
  for (const { name, default: shown } of DOCUMENTED_DEFAULTS) {
    t.same(loadConfig([`-${name}=${shown!.slice(1, -1)}`], {}), defaults, `-${name}=${shown}`)
  }
  t.equal(defaults.hmacSecretName, flag('hmac-secret-name').default!.slice(1, -1))
})

t.test('the CLI leaves out only the flags that mean nothing in its own process', async (t) => {
  const daemonOnly = FLAGS.filter((f) => f.daemonOnly !== undefined).map((f) => f.name)
  t.same(daemonOnly, ['endpoint', 'log-level', 'debug', 'version', 'health-addr', 'state-handover'])
})

t.test('names are unique', async (t) => {
  const names = FLAGS.flatMap(flagNames)
  t.ok(names.length > FLAGS.length, 'the OpenBao names too')
  t.equal(new Set(names).size, names.length)
})

// openbao-csi-provider's names of the same settings (-openbao-addr, BAO_ADDR, …).
const OPENBAO = FLAGS.filter((f) => f.openbaoName !== undefined)

t.test('every OpenBao flag name sets what its vault-csi-provider name sets', async (t) => {
  t.same(
    OPENBAO.map((f) => f.openbaoName),
    [
      'openbao-addr',
      'openbao-mount',
      'openbao-namespace',
      'openbao-tls-ca-cert',
      'openbao-tls-ca-directory',
      'openbao-tls-server-name',
      'openbao-tls-client-cert',
      'openbao-tls-client-key',
      'openbao-tls-skip-verify',
    ],
  )
  for (const { name, openbaoName } of OPENBAO) {
    const sample = SAMPLES[name]
    t.same(loadConfig([`-${openbaoName}=${sample}`], {}), loadConfig([`-${name}=${sample}`], {}), `-${openbaoName}`)
    t.same(
      loadConfig([`-${openbaoName}=${sample}`, `-${name}=${sample}`], {}),
      loadConfig([`-${name}=${sample}`], {}),
      `-${openbaoName} and -${name} with the same value`,
    )
  }
  t.equal(loadConfig(['-openbao-tls-skip-verify'], {}).vault.tls.skipVerify, true, 'a bare boolean')
  t.equal(loadConfig(['-openbao-tls-skip-verify=1', '-vault-tls-skip-verify=true'], {}).vault.tls.skipVerify, true)
})

t.test('every BAO_* variable sets what its VAULT_* variable sets; a flag of either name wins', async (t) => {
  const withEnv = OPENBAO.filter((f) => f.openbaoEnv !== undefined)
  t.same(
    withEnv.map((f) => f.openbaoEnv),
    [
      'BAO_ADDR',
      'BAO_NAMESPACE',
      'BAO_CACERT',
      'BAO_CAPATH',
      'BAO_TLS_SERVER_NAME',
      'BAO_CLIENT_CERT',
      'BAO_CLIENT_KEY',
      'BAO_SKIP_VERIFY',
    ],
  )
  for (const { name, env, openbaoName, openbaoEnv } of withEnv) {
    const sample = SAMPLES[name]
    const other = sample === 'true' ? 'false' : 'https://other.example:8200'
    const expected = loadConfig([`-${name}=${sample}`], {})
    t.same(loadConfig([], { [openbaoEnv!]: sample }), expected, `${openbaoEnv} alone`)
    t.same(loadConfig([], { [openbaoEnv!]: sample, [env!]: sample }), expected, `${openbaoEnv} and ${env} agreeing`)
    t.same(loadConfig([`-${name}=${sample}`], { [openbaoEnv!]: other }), expected, `-${name} beats ${openbaoEnv}`)
    t.same(loadConfig([`-${openbaoName}=${sample}`], { [env!]: other }), expected, `-${openbaoName} beats ${env}`)
    t.same(loadConfig([], { [openbaoEnv!]: '', [env!]: sample }), expected, `an empty ${openbaoEnv} is unset`)
  }
})

t.test('two names of one setting with different values are refused, naming both', async (t) => {
  t.equal(
    thrown(
      () => loadConfig(['-vault-addr=https://a.example:8200', '-openbao-addr=https://b.example:8200'], {}),
      ConfigError,
    ).message,
    '-vault-addr and -openbao-addr set the same thing to different values: give one of them, or the same value to both',
  )
  t.equal(
    thrown(
      () => loadConfig([], { VAULT_ADDR: 'https://a.example:8200', BAO_ADDR: 'https://b.example:8200' }),
      ConfigError,
    ).message,
    'VAULT_ADDR and BAO_ADDR set the same thing to different values: unset one of them or set both to the same value (the flag -vault-addr or -openbao-addr overrides both)',
  )
  t.equal(
    thrown(() => loadConfig([], { VAULT_SKIP_VERIFY: 'true', BAO_SKIP_VERIFY: 'false' }), ConfigError).message,
    'VAULT_SKIP_VERIFY and BAO_SKIP_VERIFY set the same thing to different values: unset one of them or set both to the same value (the flag -vault-tls-skip-verify or -openbao-tls-skip-verify overrides both)',
  )
  t.match(
    thrown(() => loadConfig(['-vault-tls-skip-verify', '-openbao-tls-skip-verify=false'], {}), ConfigError).message,
    /^-vault-tls-skip-verify and -openbao-tls-skip-verify set the same thing to different values/,
  )
  for (const { name, openbaoName } of OPENBAO) {
    const sample = SAMPLES[name]
    const other = sample === 'true' ? 'false' : '/other'
    const err = thrown(() => loadConfig([`-${name}=${sample}`, `-${openbaoName}=${other}`], {}), ConfigError)
    t.match(err.message, `-${name} and -${openbaoName} set the same thing to different values`, name)
    t.notMatch(err.message, other, 'values are not repeated')
  }
  // A flag settles it: the two variables disagreeing do not matter then.
  t.equal(
    loadConfig(['-openbao-addr=https://c.example:8200'], {
      VAULT_ADDR: 'https://a.example:8200',
      BAO_ADDR: 'https://b.example:8200',
    }).vault.address,
    'https://c.example:8200',
  )
})

t.test('a bad value is blamed on the name it was given under', async (t) => {
  const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
    [
      ['-openbao-addr=vault:8200'],
      {},
      /^-openbao-addr "vault:8200" must start with https:\/\/, http:\/\/ or unix:\/\/$/,
    ],
    [[], { BAO_ADDR: 'vault.example' }, /^BAO_ADDR "vault\.example" is not a URL/],
    [['-openbao-mount=../x'], {}, /^-openbao-mount "\.\.\/x" is not a valid auth mount path/],
    [['-openbao-tls-skip-verify=maybe'], {}, /^-openbao-tls-skip-verify must be true or false, got "maybe"$/],
    [[], { BAO_SKIP_VERIFY: 'yes' }, /^BAO_SKIP_VERIFY must be true or false, got "yes"$/],
  ]
  for (const [argv, env, message] of cases) t.match(thrown(() => loadConfig(argv, env), ConfigError).message, message)
})

t.test('the object-version key Secret: each flavour’s reference default, or -hmac-secret-name for both', async (t) => {
  t.same(loadConfig([], {}).hmacSecretNames, {
    vault: 'vault-csi-provider-hmac-key',
    openbao: 'openbao-csi-provider-hmac-key',
  })
  t.equal(loadConfig([], {}).hmacSecretName, 'vault-csi-provider-hmac-key', 'the vault default is unchanged')
  t.same(loadConfig(['-hmac-secret-name=mine'], {}).hmacSecretNames, { vault: 'mine', openbao: 'mine' })
})

t.test('the OpenBao reference DaemonSet’s arguments start the daemon', async (t) => {
  const c = loadConfig(['-endpoint=/provider/openbao.sock', '-debug=false'], {})
  t.equal(c.endpoint, '/provider/openbao.sock')
  t.equal(c.logLevel, 'info')
})
