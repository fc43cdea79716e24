// The flag table is what the config loader reads: every flag of it is accepted and changes the
// configuration, its environment variable (when it has one) does the same when the flag is not
// given, and a flag outside the table stops the daemon.
import t from 'tap'
import { ConfigError, loadConfig } from '../../../src/config/config.js'
import { FLAGS, type FlagName } from '../../../src/config/flags.js'
import { thrown } from '../../support/thrown.js'

/** A valid value for each flag, other than its default. */
const SAMPLES: Record<FlagName, string> = {
  endpoint: '/e.sock',
  'log-level': 'warn',
  debug: 'true',
  version: 'true',
  'health-addr': ':9090',
  'hmac-secret-name': 'h',
  'cache-size': '5',
  'vault-addr': 'https://v.example:8200',
  'vault-mount': 'jwt',
  'vault-namespace': 'ns',
  'vault-tls-ca-cert': '/tls/ca.pem',
  'vault-tls-ca-directory': '/tls/cas',
  'vault-tls-server-name': 'v.local',
  'vault-tls-client-cert': '/tls/c.pem',
  'vault-tls-client-key': '/tls/k.pem',
  'vault-tls-skip-verify': 'true',
  'hmac-key-file': '/keys/hmac',
  'mount-timeout': '30s',
  'vault-addr-allowlist': 'https://v.example:8200',
  'vault-idle-connection-timeout': '10s',
  'max-response-size': '8KiB',
  'max-objects-size': '8KiB',
  'max-vault-response-size': '8KiB',
  'max-mount-bytes': '8KiB',
  'max-node-mount-bytes': '8KiB',
  'max-tls-file-size': '8KiB',
  'tls-file-dirs': '/etc/tls',
  'token-request-audiences': 'other',
  'identity-scope': 'serviceaccount',
  'static-freshness': '5s',
  'share-dynamic-secrets': 'true',
  'identity-idle-timeout': '1m',
  'kube-api-url': 'http://127.0.0.1:8001',
  'kube-service-account-dir': '/sa',
}

t.test('every flag of the table is accepted and changes the configuration', async (t) => {
  const defaults = loadConfig([], {})
  t.ok(FLAGS.length >= 30, `${FLAGS.length} flags`)
  for (const { name } of FLAGS) {
    t.notSame(loadConfig([`-${name}=${SAMPLES[name]}`], {}), defaults, `-${name}=${SAMPLES[name]}`)
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
    t.same(loadConfig([], { [env!]: SAMPLES[name] }), loadConfig([`-${name}=${SAMPLES[name]}`], {}), env)
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

t.test('names are unique', async (t) => {
  const names = FLAGS.map((f) => f.name)
  t.equal(new Set(names).size, names.length)
})
