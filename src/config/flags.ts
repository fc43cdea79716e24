/**
 * The daemon's flags: the one list the config loader (config.ts) and the docs test read. A flag
 * not listed here is refused at start-up; every one listed is documented in docs/configuration.md.
 *
 * Where OpenBao's openbao-csi-provider names a setting differently (`-openbao-addr`, `BAO_ADDR`),
 * the entry carries that name too: both names are accepted, for the same setting (config.ts
 * refuses two different values for it).
 */
import type { ProviderFlavour } from './flavour.js'

/** `string` flags take a value; `boolean` ones are true when bare and take Go's spellings. */
export type FlagKind = 'string' | 'boolean'

export interface FlagSpec {
  /** Without the leading dash. */
  readonly name: string
  readonly kind: FlagKind
  /** The environment variable read when the flag is not given; undefined: none. */
  readonly env: string | undefined
  /** openbao-csi-provider's name for the same setting, when it differs; accepted too. */
  readonly openbaoName: string | undefined
  /** The variable OpenBao's Go client reads for it (it falls back to `env` when this one is absent). */
  readonly openbaoEnv: string | undefined
  /** `vault`: a flag of HashiCorp's vault-csi-provider, with its meaning; `ours`: added by this provider. */
  readonly origin: 'vault' | 'ours'
  readonly meaning: string
}

export const FLAGS = [
  {
    name: 'endpoint',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'vault',
    meaning: 'the unix socket to serve',
  },
  {
    name: 'log-level',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'vault',
    meaning: 'trace, debug, info, warn, error or off',
  },
  {
    name: 'debug',
    kind: 'boolean',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'vault',
    meaning: 'deprecated alias of -log-level=debug',
  },
  {
    name: 'version',
    kind: 'boolean',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'vault',
    meaning: 'print the version and exit',
  },
  {
    name: 'health-addr',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'vault',
    meaning: 'the address of the health and metrics HTTP server; off disables it',
  },
  {
    name: 'hmac-secret-name',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'vault',
    meaning: 'the Kubernetes Secret holding the object-version key',
  },
  {
    name: 'cache-size',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'vault',
    meaning: 'pod identities whose Vault token is kept',
  },
  {
    name: 'vault-addr',
    kind: 'string',
    env: 'VAULT_ADDR',
    openbaoName: 'openbao-addr',
    openbaoEnv: 'BAO_ADDR',
    origin: 'vault',
    meaning: 'the default Vault address',
  },
  {
    name: 'vault-mount',
    kind: 'string',
    env: undefined,
    openbaoName: 'openbao-mount',
    openbaoEnv: undefined,
    origin: 'vault',
    meaning: 'the default auth mount path',
  },
  {
    name: 'vault-namespace',
    kind: 'string',
    env: 'VAULT_NAMESPACE',
    openbaoName: 'openbao-namespace',
    openbaoEnv: 'BAO_NAMESPACE',
    origin: 'vault',
    meaning: 'the default Vault namespace',
  },
  {
    name: 'vault-auth-namespace',
    kind: 'string',
    env: undefined,
    // openbao-csi-provider has no such flag: no name of its own to accept.
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the default namespace of the login, when it is not the namespace of the reads',
  },
  {
    name: 'vault-tls-ca-cert',
    kind: 'string',
    env: 'VAULT_CACERT',
    openbaoName: 'openbao-tls-ca-cert',
    openbaoEnv: 'BAO_CACERT',
    origin: 'vault',
    meaning: 'a PEM file of CAs to trust for Vault',
  },
  {
    name: 'vault-tls-ca-directory',
    kind: 'string',
    env: 'VAULT_CAPATH',
    openbaoName: 'openbao-tls-ca-directory',
    openbaoEnv: 'BAO_CAPATH',
    origin: 'vault',
    meaning: 'a directory of PEM CA files',
  },
  {
    name: 'vault-tls-server-name',
    kind: 'string',
    env: 'VAULT_TLS_SERVER_NAME',
    openbaoName: 'openbao-tls-server-name',
    openbaoEnv: 'BAO_TLS_SERVER_NAME',
    origin: 'vault',
    meaning: 'the TLS server name to send and verify',
  },
  {
    name: 'vault-tls-client-cert',
    kind: 'string',
    env: 'VAULT_CLIENT_CERT',
    openbaoName: 'openbao-tls-client-cert',
    openbaoEnv: 'BAO_CLIENT_CERT',
    origin: 'vault',
    meaning: 'a client certificate file (with the client key)',
  },
  {
    name: 'vault-tls-client-key',
    kind: 'string',
    env: 'VAULT_CLIENT_KEY',
    openbaoName: 'openbao-tls-client-key',
    openbaoEnv: 'BAO_CLIENT_KEY',
    origin: 'vault',
    meaning: 'a client key file (with the client certificate)',
  },
  {
    name: 'vault-tls-skip-verify',
    kind: 'boolean',
    env: 'VAULT_SKIP_VERIFY',
    openbaoName: 'openbao-tls-skip-verify',
    openbaoEnv: 'BAO_SKIP_VERIFY',
    origin: 'vault',
    meaning: "do not verify Vault's certificate",
  },
  {
    name: 'hmac-key-file',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'a local file for the object-version key, outside Kubernetes',
  },
  {
    name: 'mount-timeout',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the longest one Mount may take',
  },
  {
    name: 'vault-addr-allowlist',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the Vault addresses a Mount may use',
  },
  {
    name: 'vault-idle-connection-timeout',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'how long an idle connection to Vault is kept',
  },
  {
    name: 'max-response-size',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the largest Mount response sent to the driver',
  },
  {
    name: 'max-objects-size',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the largest objects YAML of one Mount',
  },
  {
    name: 'max-vault-response-size',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the largest Vault answer read',
  },
  {
    name: 'max-mount-bytes',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'all one Mount may fetch and write',
  },
  {
    name: 'max-node-mount-bytes',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'all the Mounts in flight on the node may fetch and write',
  },
  {
    name: 'max-tls-file-size',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the largest TLS file or CA directory read',
  },
  {
    name: 'tls-file-dirs',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the directories TLS paths named by a SecretProviderClass must be under',
  },
  {
    name: 'token-request-audiences',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the audiences the provider may request pod tokens for',
  },
  {
    name: 'identity-scope',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'pod or serviceaccount: who shares a Vault token',
  },
  {
    name: 'static-freshness',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'how long a static Vault answer is reused',
  },
  {
    name: 'share-dynamic-secrets',
    kind: 'boolean',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'one dynamic credential for all pods of a service account',
  },
  {
    name: 'identity-idle-timeout',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'how long an identity not seen keeps its Vault token',
  },
  {
    name: 'kube-api-url',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: 'the Kubernetes API URL',
  },
  {
    name: 'kube-service-account-dir',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: "the provider's own service-account token, CA and namespace",
  },
  {
    name: 'mode',
    kind: 'string',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning:
      "node (the CSI driver's provider on every node) or sync-controller (the Secrets Store Sync Controller's sidecar)",
  },
  {
    name: 'state-handover',
    kind: 'boolean',
    env: undefined,
    openbaoName: undefined,
    openbaoEnv: undefined,
    origin: 'ours',
    meaning: "take over a running predecessor's tokens and leases at start, and offer this process's to a successor",
  },
] as const satisfies readonly FlagSpec[]

export type FlagName = (typeof FLAGS)[number]['name']

/** The table's entry for a flag. */
export function flag(name: FlagName): FlagSpec {
  return FLAGS.find((f) => f.name === name)!
}

/** Every name a flag is accepted under. */
export function flagNames(spec: FlagSpec): string[] {
  return spec.openbaoName === undefined ? [spec.name] : [spec.name, spec.openbaoName]
}

/** The flag as the flavour's reference provider spells it, with its dash: `-vault-addr`, `-openbao-addr`. */
export function flagAsIn(name: FlagName, flavour: ProviderFlavour): string {
  const spec = flag(name)
  return `-${flavour === 'openbao' && spec.openbaoName !== undefined ? spec.openbaoName : spec.name}`
}

/** The flag's environment variable as the flavour's reference provider reads it (`VAULT_ADDR`, `BAO_ADDR`). */
export function envAsIn(name: FlagName, flavour: ProviderFlavour): string | undefined {
  const spec = flag(name)
  return flavour === 'openbao' && spec.openbaoEnv !== undefined ? spec.openbaoEnv : spec.env
}
