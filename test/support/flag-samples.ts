// A valid value for each daemon flag, for the tests that run every flag of the table through the
// daemon's parser (test/unit/config/flags.test.ts) and through the CLI (test/unit/cli/provider-flags.test.ts).
import type { FlagName } from '../../src/config/flags.js'

/** A valid value for each flag, other than its default. */
export const SAMPLES: Record<FlagName, string> = {
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
  'vault-auth-namespace': 'auth-ns',
  'vault-read-consistency': 'eventual',
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
  'state-handover': 'false',
  'share-dynamic-secrets': 'true',
  'identity-idle-timeout': '1m',
  'kube-api-url': 'http://127.0.0.1:8001',
  'kube-service-account-dir': '/sa',
  mode: 'sync-controller',
}

/** What a sample needs beside it to be a valid configuration (-mode=sync-controller needs its key file). */
export const NEEDS: Partial<Record<FlagName, string[]>> = { mode: ['-hmac-key-file=/keys/hmac'] }
