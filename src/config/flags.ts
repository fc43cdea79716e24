/**
 * The daemon's flags: the one table the daemon's parser (config.ts), the CLI's options
 * (cli/provider-flags.ts) and the flag tables of the docs (flag-docs.ts, `npm run docs:flags`)
 * are made from. A flag not listed here is refused at start-up.
 *
 * Where OpenBao's openbao-csi-provider names a setting differently (`-openbao-addr`, `BAO_ADDR`),
 * the row carries that name too: both names are accepted, for the same setting (config.ts
 * refuses two different values for it).
 */
import type { ProviderFlavour } from './flavour.js'

export interface FlagSpec<Name extends string = string> {
  /** Without the leading dash. */
  readonly name: Name
  /** `string` flags take a value; `boolean` ones are true when bare and take Go's spellings. */
  readonly kind: 'string' | 'boolean'
  /** The default as the docs show it (Markdown); a lone code span is the value the flag means when not given. */
  readonly default?: string
  /** The environment variable read when the flag is not given. */
  readonly env?: string
  /** openbao-csi-provider's name for the same setting, when it differs; accepted too. */
  readonly openbaoName?: string
  /** The variable OpenBao's Go client reads for it (it falls back to `env` when this one is absent). */
  readonly openbaoEnv?: string
  /** Added by this provider; otherwise a flag of HashiCorp's vault-csi-provider, with its meaning. */
  readonly ours?: true
  /** One line (Markdown, no links): the CLI's help and the README's table. */
  readonly meaning: string
  /** What docs/configuration.md says after `meaning` (Markdown, links relative to docs/). */
  readonly detail?: string
  /** Why the CLI does not take it: it means nothing for one Mount run in the CLI's own process. */
  readonly daemonOnly?: string
}

// One row a flag, laid out by hand: prettier would give every field of every row a line of its own.
// prettier-ignore
const TABLE = [
  { name: 'endpoint', kind: 'string', default: '`/var/run/secrets-store-csi-providers/vault.sock`',
    meaning: 'the unix socket to serve, mode `0600` (a stale one is replaced); several may be named, comma-separated',
    detail: "The DaemonSet passes `/provider/vault.sock`. Each socket serves the provider its name says: `openbao.sock` `provider: openbao` classes, with openbao-csi-provider's names and defaults; any other name `provider: vault` classes",
    daemonOnly: 'the CLI serves no socket (`mount --socket` names the one it calls)' },
  { name: 'log-level', kind: 'string', default: '`info`', meaning: '`trace`, `debug`, `info`, `warn`, `error` or `off`',
    detail: 'JSON lines (pino), secrets redacted', daemonOnly: '`mount` has its own `--log-level`, default `off`' },
  { name: 'debug', kind: 'boolean', default: '`false`', meaning: 'deprecated alias of `-log-level=debug`',
    daemonOnly: 'an alias of `-log-level`' },
  { name: 'version', kind: 'boolean', meaning: 'print `vault-csi-provider-ts <version>` and exit',
    daemonOnly: 'the CLI has `vault-csi-provider version`' },
  { name: 'health-addr', kind: 'string', default: '`:8080`',
    meaning: 'HTTP address (`host:port` or `:port`) of `/health/live`, `/health/ready`, `/health/vault` and `/metrics`; `off` disables it',
    daemonOnly: 'the CLI serves no HTTP' },
  { name: 'hmac-secret-name', kind: 'string', default: '`vault-csi-provider-hmac-key`',
    meaning: "the Secret (provider's namespace, key `key`) holding the object-version key; created by the first node that needs it",
    detail: 'One key per process: when the first socket is `openbao.sock`, the default is `openbao-csi-provider-hmac-key`' },
  { name: 'cache-size', kind: 'string', default: '`1000`',
    meaning: 'pod identities whose Vault client and token are kept (LRU); `0` logs in on every Mount' },
  { name: 'vault-addr', kind: 'string', env: 'VAULT_ADDR', openbaoName: 'openbao-addr', openbaoEnv: 'BAO_ADDR',
    meaning: 'default Vault address: `https://`, `http://`, or `unix://` (a Vault Agent socket)' },
  { name: 'vault-mount', kind: 'string', openbaoName: 'openbao-mount', default: '`kubernetes`', meaning: 'default auth mount',
    detail: 'Of a `kubernetes` or `jwt` auth method: the login body is the same' },
  { name: 'vault-namespace', kind: 'string', env: 'VAULT_NAMESPACE', openbaoName: 'openbao-namespace',
    openbaoEnv: 'BAO_NAMESPACE', meaning: 'default `X-Vault-Namespace` (Vault Enterprise, OpenBao)' },
  { name: 'vault-auth-namespace', kind: 'string', ours: true,
    meaning: "default namespace of the login, when it is not the reads' (`vaultAuthNamespace`)",
    detail: "It is the namespace of the token's renewal and revocation too; unset: the login is in `-vault-namespace`" },
  { name: 'vault-read-consistency', kind: 'string', ours: true, default: '`strong`',
    meaning: "`strong`: reads see every acknowledged write; `eventual`: a cluster's standby may answer (a class: `vaultReadConsistency`)",
    detail: "`strong`: reads carry `X-Vault-Inconsistent: forward-active-node` and an `X-Vault-Index` no standby has reached, so an OpenBao 2.5+ standby forwards them to the active node (a Vault OSS standby forwards everything anyway). `eventual`: a standby may answer, measured 40–170 ms behind the active node; a read after the identity's own login or write still sees it. See [failure-behaviour.md](failure-behaviour.md#vault-clusters)" },
  { name: 'vault-tls-ca-cert', kind: 'string', env: 'VAULT_CACERT', openbaoName: 'openbao-tls-ca-cert',
    openbaoEnv: 'BAO_CACERT', meaning: 'PEM file of CAs to trust for Vault' },
  { name: 'vault-tls-ca-directory', kind: 'string', env: 'VAULT_CAPATH', openbaoName: 'openbao-tls-ca-directory',
    openbaoEnv: 'BAO_CAPATH', meaning: 'directory of PEM CA files' },
  { name: 'vault-tls-server-name', kind: 'string', env: 'VAULT_TLS_SERVER_NAME', openbaoName: 'openbao-tls-server-name',
    openbaoEnv: 'BAO_TLS_SERVER_NAME', meaning: 'TLS server name (SNI and verification)' },
  { name: 'vault-tls-client-cert', kind: 'string', env: 'VAULT_CLIENT_CERT', openbaoName: 'openbao-tls-client-cert',
    openbaoEnv: 'BAO_CLIENT_CERT', meaning: 'client certificate file; needs `-vault-tls-client-key`' },
  { name: 'vault-tls-client-key', kind: 'string', env: 'VAULT_CLIENT_KEY', openbaoName: 'openbao-tls-client-key',
    openbaoEnv: 'BAO_CLIENT_KEY', meaning: 'client key file; needs `-vault-tls-client-cert`' },
  { name: 'vault-tls-skip-verify', kind: 'boolean', env: 'VAULT_SKIP_VERIFY', openbaoName: 'openbao-tls-skip-verify',
    openbaoEnv: 'BAO_SKIP_VERIFY', default: '`false`', meaning: "do not verify Vault's certificate (never in production)" },
  { name: 'hmac-key-file', kind: 'string', ours: true,
    meaning: 'a local file for the object-version key instead of the Secret (created, mode `0600`, if missing): for running outside Kubernetes' },
  { name: 'mount-timeout', kind: 'string', ours: true, default: '`100s`', meaning: 'upper bound of one Mount (at least `1s`)',
    detail: "The caller's gRPC deadline minus 2 s applies too, so the error reaches the pod before kubelet's 2-minute limit" },
  { name: 'vault-addr-allowlist', kind: 'string', ours: true, default: '(any address)',
    meaning: 'comma-separated Vault addresses a Mount may use (a leading `*.` host wildcard allowed); others fail before the token is sent',
    detail: "Exact (`https://vault.example:8200`, `unix:///run/vault/agent.sock`) or with a host wildcard (`https://*.vault.svc:8200`). Any other address fails the Mount before the pod's token is obtained or sent" },
  { name: 'vault-idle-connection-timeout', kind: 'string', ours: true, default: '`30s`',
    meaning: "how long an idle connection to Vault is kept for the next Mount (`1s` to `5m`); keep it under your load balancer's idle timeout",
    detail: "A shorter `Keep-Alive` hint from a proxy in front of Vault wins. Vault sends no hint and closes idle connections after its listener's `http_idle_timeout` (5 minutes by default), so without this every Mount more than a few seconds after the last would open new TLS connections. Keep it under the idle timeout of any load balancer or NAT between the nodes and Vault, especially one that drops idle connections silently: a call sent on such a connection waits for its time limit before it is retried" },
  { name: 'max-response-size', kind: 'string', ours: true, default: '`4MiB`',
    meaning: "largest Mount answer sent to the driver: keep it equal to the driver's `--max-call-recv-msg-size`",
    detail: 'Sizes are written `4194304`, `4MiB`, `512KiB` or `8Mi` (at least `1KiB`). A larger answer fails with `RESPONSE_TOO_LARGE` naming the largest objects' },
  { name: 'max-objects-size', kind: 'string', ours: true, default: '`256KiB`', meaning: 'largest `objects` YAML of one Mount',
    detail: 'Larger texts, and texts nesting collections more than 32 levels deep or holding more than 25,000 YAML nodes, fail with `BAD_PARAMETER` before they are parsed; refusals are remembered' },
  { name: 'max-vault-response-size', kind: 'string', ours: true, default: '`4MiB`', meaning: 'largest Vault answer body read',
    detail: 'The stream is cut as soon as it passes the limit (or at once when `Content-Length` says so) and the Mount fails with `VAULT_RESPONSE_TOO_LARGE` naming the object' },
  { name: 'max-mount-bytes', kind: 'string', ours: true, default: '`16MiB`',
    meaning: 'all one Mount holds: the Vault answers it fetches and the files and template output it writes, counted as each is produced',
    detail: 'The object that crosses it fails the Mount with `MOUNT_BUDGET_EXCEEDED` naming it' },
  { name: 'max-node-mount-bytes', kind: 'string', ours: true, default: '`96MiB`',
    meaning: 'the same, summed over every Mount in flight on the node',
    detail: 'A Mount that finds it spent fails at once with `MOUNT_BUDGET_EXCEEDED` (the driver retries). Keep it well below the DaemonSet memory limit' },
  { name: 'max-tls-file-size', kind: 'string', ours: true, default: '`1MiB`',
    meaning: 'largest TLS file (CA, client certificate or key) or CA directory read',
    detail: 'The files of `vaultCACertPath`, `vaultTLSClientCertPath`, `vaultTLSClientKeyPath` and their `-vault-tls-*` flags, and the total read from a `vaultCADirectory` (its first 256 entries). Only regular files are read: a device, FIFO or directory fails with `BAD_PARAMETER` naming the parameter' },
  { name: 'tls-file-dirs', kind: 'string', ours: true, default: '(anywhere)',
    meaning: 'comma-separated absolute directories the TLS paths a SecretProviderClass names must resolve under',
    detail: "Symlinks are resolved; e.g. `/etc/vault-tls`. Others fail with `BAD_PARAMETER`. The operator's own `-vault-tls-*` files are not restricted. Set it to the directories you mount certificates into" },
  { name: 'token-request-audiences', kind: 'string', ours: true, default: '`vault`',
    meaning: 'comma-separated audiences the provider may request pod tokens for when the driver passes none',
    detail: 'Any other `audience` fails with `AUDIENCE_NOT_ALLOWED` before the Kubernetes API is asked. The default is the audience of each socket\'s provider: `vault`, and `openbao` for `openbao.sock`' },
  { name: 'identity-scope', kind: 'string', ours: true, default: '`pod`',
    meaning: '`pod` (the reference provider\'s semantics) or `serviceaccount`: who shares a Vault token and coalesced reads',
    detail: 'See [vault-economy.md](vault-economy.md) before changing it. Under `-mode=sync-controller` the default is `serviceaccount`' },
  { name: 'static-freshness', kind: 'string', ours: true, default: '`0s`',
    meaning: 'how long a static (non-leased) Vault answer is reused within one identity; `0s` reads Vault on every Mount',
    detail: 'On a cluster, from the active node unless the read is `eventual` (`-vault-read-consistency`)' },
  { name: 'share-dynamic-secrets', kind: 'boolean', ours: true, default: '`false`',
    meaning: 'with `-identity-scope=serviceaccount` only: one dynamic credential for all pods of an identity' },
  { name: 'identity-idle-timeout', kind: 'string', ours: true, default: '`15m` (`24h` with `-mode=sync-controller`)',
    meaning: 'an identity not seen for this long has its Vault token revoked (and with it its leases); `0` never revokes',
    detail: "Longer than the driver's rotation poll, so live pods are never taken for gone; beside the Sync Controller, at least twice its `--rotation-poll-interval` (`24h`: twice its default `12h`; [sync-controller.md](sync-controller.md#polls-tokens-and-leases))" },
  { name: 'kube-api-url', kind: 'string', ours: true, default: '(in-cluster)',
    meaning: 'Kubernetes API URL, e.g. `http://127.0.0.1:8001` behind `kubectl proxy`',
    detail: 'With `https://` the token and `ca.crt` of `-kube-service-account-dir` are used, as in-cluster' },
  { name: 'kube-service-account-dir', kind: 'string', ours: true, default: '`/var/run/secrets/kubernetes.io/serviceaccount`',
    meaning: "the provider's own service-account token, `ca.crt` and `namespace`" },
  { name: 'mode', kind: 'string', ours: true, default: '`node`',
    meaning: "`node` (the CSI driver's provider on every node) or `sync-controller` (the Secrets Store Sync Controller's sidecar)",
    detail: "`sync-controller` serves SecretSyncs: it requires `-hmac-key-file` (a file mounted from a Secret, never created), identities are the SecretSync's namespace and service account, only the controller's tokens are used (no TokenRequest, no Kubernetes API), there is no state handover, and answers over 1 MiB are refused ([sync-controller.md](sync-controller.md))" },
  { name: 'state-handover', kind: 'boolean', ours: true, default: '`true`',
    meaning: 'at start, take over the Vault tokens and leases of the provider this one replaces on the node; offer its own to its successor',
    detail: 'Certificates too, over `<endpoint>.handover` (mode 0600), in a DaemonSet rolling update; refused, with a log line saying why, for another HMAC key, Vault address, namespace, auth mount, identity scope or `-share-dynamic-secrets` ([failure-behaviour.md](failure-behaviour.md#state-handover)). `false`: every start is cold',
    daemonOnly: 'a handover is between daemons on one socket: the CLI has no predecessor or successor' },
] as const satisfies readonly FlagSpec[]

export type FlagName = (typeof TABLE)[number]['name']

export const FLAGS: readonly FlagSpec<FlagName>[] = TABLE

/** The table's row for a flag. */
export function flag(name: FlagName): FlagSpec<FlagName> {
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
