/**
 * The daemon's configuration: flags and environment, with the precedence
 * existing vault-csi-provider deployments rely on (environment < flags; the
 * SecretProviderClass then overrides both per Mount, see request/parse.ts).
 *
 * Flags are accepted Go-style (`-endpoint=/x`, `-endpoint /x`) as well as
 * GNU-style (`--endpoint=/x`), because existing DaemonSets pass the former.
 *
 * The one place flag values are checked: loadConfig throws a ConfigError
 * naming the flag and what is wrong for any bad value, before anything is
 * built or started (the daemon exits 2); the rest of the provider takes the
 * values as given.
 */
import { parseArgs } from 'node:util'
import { basename } from 'node:path'
import { flag, flagNames, FLAGS, type FlagName, type FlagSpec } from './flags.js'
import { FLAVOURS, type ProviderFlavour } from './flavour.js'
import { namespaceProblem, normaliseAuthMount, normaliseVaultAddress, serverNameProblem } from './vault-address.js'

export const DEFAULT_ENDPOINT = '/var/run/secrets-store-csi-providers/vault.sock'
export const DEFAULT_HMAC_SECRET_NAME = FLAVOURS.vault.defaultHmacSecretName
export const DEFAULT_AUTH_MOUNT = 'kubernetes'
export const DEFAULT_CACHE_SIZE = 1000
export const DEFAULT_HEALTH_ADDR = ':8080'
export const DEFAULT_MOUNT_TIMEOUT_MS = 100_000
export const DEFAULT_KUBE_SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'
/** The driver's default --max-call-recv-msg-size. */
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
export const IDENTITY_SCOPES = ['pod', 'serviceaccount'] as const
export type IdentityScopeName = (typeof IDENTITY_SCOPES)[number]
/**
 * -vault-read-consistency and a class's `vaultReadConsistency`: `strong`, every read sees every write
 * Vault acknowledged before it (a cluster's standbys forward it to the active node); `eventual`, a
 * standby may answer it from its own copy, a fraction of a second behind (vault/transport/consistency.ts).
 */
export const READ_CONSISTENCIES = ['strong', 'eventual'] as const
export type ReadConsistency = (typeof READ_CONSISTENCIES)[number]
/** What users of -static-freshness 0 expect: every acknowledged write. */
export const DEFAULT_READ_CONSISTENCY: ReadConsistency = 'strong'
/**
 * -mode: who calls the provider. `node`: the CSI driver on the node, for pods (the default).
 * `sync-controller`: the Secrets Store Sync Controller, whose sidecar the provider is, for
 * SecretSyncs (docs/sync-controller.md).
 */
export const PROVIDER_MODES = ['node', 'sync-controller'] as const
export type ProviderMode = (typeof PROVIDER_MODES)[number]
/** Longer than the driver's default rotation poll (2 m), so live pods are never taken for gone. */
export const DEFAULT_IDENTITY_IDLE_MS = 15 * 60_000
/** -mode=sync-controller: twice the controller's default --rotation-poll-interval (12 h), for the same reason. */
export const SYNC_CONTROLLER_IDENTITY_IDLE_MS = 24 * 3_600_000
/**
 * How long an idle connection to Vault is kept for the next call. Vault and OpenBao send no
 * Keep-Alive hint and close idle connections after 5 minutes (the listener's
 * http_idle_timeout), so without this undici's 4 s default would make every Mount that comes
 * more than 4 s after the last one open new TLS connections. 30 s stays under the idle
 * timeouts of common load balancers (60 s and more), which close a connection with a FIN
 * the pool sees; one closed just as a call goes out fails as a reset, which is retried.
 */
export const DEFAULT_VAULT_IDLE_CONNECTION_MS = 30_000
/** Longer than Vault's own 5-minute idle timeout would only race its closes. */
export const MAX_VAULT_IDLE_CONNECTION_MS = 5 * 60_000
export const MIN_VAULT_IDLE_CONNECTION_MS = 1000
/** Limits on what one pod can make the shared daemon do (docs/failure-behaviour.md, "Security"). */
export const DEFAULT_MAX_OBJECTS_BYTES = 256 * 1024
export const DEFAULT_MAX_VAULT_RESPONSE_BYTES = 4 * 1024 * 1024
export const DEFAULT_MAX_MOUNT_BYTES = 16 * 1024 * 1024
export const DEFAULT_NODE_MOUNT_BYTES = 96 * 1024 * 1024
export const DEFAULT_MAX_TLS_FILE_BYTES = 1024 * 1024
export const DEFAULT_TOKEN_REQUEST_AUDIENCES = ['vault'] as const
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'off'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** TLS settings towards Vault; every field may be overridden per SecretProviderClass. */
export interface VaultTlsConfig {
  caCertPath?: string
  caDirectory?: string
  serverName?: string
  clientCertPath?: string
  clientKeyPath?: string
  skipVerify: boolean
}

/** Defaults for the Vault connection of every Mount. */
export interface VaultDefaults {
  address?: string
  namespace?: string
  /** -vault-auth-namespace: the namespace of the login when it is not `namespace`. */
  authNamespace?: string
  authMount: string
  tls: VaultTlsConfig
  /** -vault-read-consistency; absent: DEFAULT_READ_CONSISTENCY. A class's parameter overrides it. */
  readConsistency?: ReadConsistency
}

/** A socket the daemon serves, and the provider flavour its name says the driver calls there. */
export interface ProviderEndpoint {
  path: string
  flavour: ProviderFlavour
}

export interface ProviderConfig {
  /** -mode: `node` (the CSI driver's provider) or `sync-controller` (the Sync Controller's sidecar). */
  mode: ProviderMode
  /** The first of `endpoints`. */
  endpoint: string
  endpoints: ProviderEndpoint[]
  logLevel: LogLevel
  healthAddr: string
  /** The Secret of the object-version key for vault.sock: hmacSecretNames.vault. */
  hmacSecretName: string
  /**
   * The Secret of the object-version key for each flavour: -hmac-secret-name when given, else the
   * name the flavour's reference provider uses (vault-csi-provider-hmac-key, openbao-csi-provider-hmac-key).
   */
  hmacSecretNames: Readonly<Record<ProviderFlavour, string>>
  /** Local key file for object versions, for running outside Kubernetes. */
  hmacKeyFile?: string
  cacheSize: number
  /** Economy: who shares a Vault token and coalesced reads (docs/vault-economy.md). */
  identityScope: IdentityScopeName
  /** Static (non-leased) answers are reused for this long; 0 reads Vault on every Mount. */
  staticFreshnessMs: number
  /** serviceaccount scope only: one dynamic credential for all pods of an identity. */
  shareDynamicSecrets: boolean
  /** Identities not seen for this long are revoked; 0 never revokes. */
  identityIdleMs: number
  /** -state-handover: take over a running predecessor's tokens and leases at start, and offer this process's to a successor. */
  stateHandover: boolean
  mountTimeoutMs: number
  /** Vault addresses a Mount may use (-vault-addr-allowlist); empty: any (the compatible default). */
  vaultAddrAllowlist: string[]
  /** -vault-idle-connection-timeout: an idle connection to Vault is closed after this long (or a shorter Keep-Alive hint). */
  vaultIdleConnectionMs: number
  /** Largest MountResponse the provider sends (-max-response-size); match the driver's --max-call-recv-msg-size. */
  maxResponseBytes: number
  vault: VaultDefaults
  /** Bounds on pod-controlled input and work; every one is a flag, shown in the error that enforces it. */
  limits: ProviderLimits
  /** Audiences the provider may request pod tokens for when the driver passed none (-token-request-audiences). */
  tokenRequestAudiences: string[]
  kube: {
    /** Overrides in-cluster discovery, e.g. http://127.0.0.1:8001 behind `kubectl proxy`. */
    apiUrl?: string
    serviceAccountDir: string
  }
  showVersion: boolean
}

export interface ProviderLimits {
  /** -max-objects-size: the `objects` YAML text of one SecretProviderClass. */
  maxObjectsBytes: number
  /** -max-vault-response-size: the body of one Vault answer; larger answers are cut off unread. */
  maxVaultResponseBytes: number
  /** -max-mount-bytes: everything one Mount fetches from Vault and renders, together. */
  maxMountBytes: number
  /** -max-node-mount-bytes: the same, summed over every Mount in flight on the node. */
  nodeMountBytes: number
  /** -max-tls-file-size: one TLS file (CA, client certificate or key) named by a Mount. */
  maxTlsFileBytes: number
  /** -tls-file-dirs: directories TLS files named by a SecretProviderClass must be under; empty: anywhere. */
  tlsFileDirs: string[]
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** parseArgs' options: every name of every string flag of the table (boolean ones are read before it runs). */
const STRING_FLAG_OPTIONS: Record<string, { type: 'string' }> = Object.fromEntries(
  FLAGS.filter((f) => f.kind === 'string').flatMap((f) => flagNames(f).map((name) => [name, { type: 'string' }])),
)

/**
 * Go's flag package takes `-name`, `--name`, `-name=value` and, for booleans,
 * `-name=false`. node:util parseArgs takes only `--name`; rewrite the rest.
 */
function normaliseGoFlags(argv: readonly string[]): string[] {
  return argv.map((arg) => {
    if (/^-[A-Za-z][\w-]+(=.*)?$/.test(arg)) return `-${arg}`
    return arg
  })
}

// Go bool flags: bare (`-debug`) means true, `-debug=false` is allowed, and
// the last occurrence wins. parseArgs knows none of that; resolve them here.
const BOOL_FLAGS: ReadonlySet<string> = new Set(FLAGS.filter((f) => f.kind === 'boolean').flatMap(flagNames))

function extractBoolFlags(argv: string[]): { argv: string[]; bools: Map<string, boolean> } {
  const bools = new Map<string, boolean>()
  const out: string[] = []
  for (const arg of argv) {
    const m = /^--([\w-]+)(?:=(.*))?$/.exec(arg)
    if (m && BOOL_FLAGS.has(m[1]!)) {
      bools.set(m[1]!, m[2] === undefined ? true : parseBool(m[2], `-${m[1]}`))
      continue
    }
    out.push(arg)
  }
  return { argv: out, bools }
}

/** Go's strconv.ParseBool spellings, which existing manifests use. */
export function parseBool(value: string, what: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false
  throw new ConfigError(`${what} must be true or false, got ${JSON.stringify(value)}`)
}

/** An integer (-cache-size ≤ 0 disables the cache, as in the reference provider). */
function parseInteger(value: string, what: string): number {
  if (!/^-?\d{1,15}$/.test(value)) throw new ConfigError(`${what} must be an integer, got ${JSON.stringify(value)}`)
  return Number.parseInt(value, 10)
}

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** Go-style durations as manifests write them: `90s`, `2m`, `1m30s`, `1500ms`; a bare number is seconds. */
export function parseDurationMs(value: string, what: string): number {
  const text = value.trim()
  const bad = new ConfigError(`${what} must be a duration such as 90s, 2m or 1m30s, got ${JSON.stringify(value)}`)
  if (/^\d+(?:\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000)
  if (!/^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(text)) throw bad
  let total = 0
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(m[1]) * DURATION_UNITS_MS[m[2]!]!
  return Math.round(total)
}

export const MIN_MOUNT_TIMEOUT_MS = 1000

function parseMountTimeout(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_MOUNT_TIMEOUT_MS
  const ms = parseDurationMs(raw, '-mount-timeout')
  if (ms < MIN_MOUNT_TIMEOUT_MS) throw new ConfigError(`-mount-timeout must be at least 1s, got ${JSON.stringify(raw)}`)
  return ms
}

function parseVaultIdleConnection(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_VAULT_IDLE_CONNECTION_MS
  const ms = parseDurationMs(raw, '-vault-idle-connection-timeout')
  if (ms < MIN_VAULT_IDLE_CONNECTION_MS || ms > MAX_VAULT_IDLE_CONNECTION_MS) {
    throw new ConfigError(`-vault-idle-connection-timeout must be between 1s and 5m, got ${JSON.stringify(raw)}`)
  }
  return ms
}

/**
 * -endpoint: one socket, or several separated by commas, served by this one process. Each socket's
 * name says which provider the driver calls there (`<provider>.sock` in its providers directory):
 * `openbao.sock` serves `provider: openbao` classes with openbao-csi-provider's names and defaults,
 * any other name `provider: vault` classes.
 */
export function parseEndpoints(raw: string): ProviderEndpoint[] {
  const paths = raw.split(',').map((p) => p.trim())
  if (paths.some((p) => p === '')) throw new ConfigError(`-endpoint ${JSON.stringify(raw)} names an empty socket path`)
  if (new Set(paths).size !== paths.length)
    throw new ConfigError(`-endpoint ${JSON.stringify(raw)} names a socket twice`)
  return paths.map((path) => ({
    path,
    flavour: basename(path) === FLAVOURS.openbao.socketName ? 'openbao' : 'vault',
  }))
}

/** `{ [key]: value }`, or nothing when the value is unset: a configuration without it stays as it was. */
function optionalField<K extends string>(key: K, value: string | undefined): { [k in K]?: string } {
  return value === undefined ? {} : ({ [key]: value } as { [k in K]?: string })
}

/** A setting's value when `problem` finds nothing wrong with it. */
function checked(given: Sourced<string> | undefined, problem: (raw: string) => string | undefined): string | undefined {
  if (given === undefined) return undefined
  const issue = problem(given.value)
  if (issue !== undefined) throw new ConfigError(`${given.from} ${JSON.stringify(given.value)} ${issue}`)
  return given.value
}

function parseAuthMountFlag(given: Sourced<string> | undefined): string {
  if (given === undefined) return DEFAULT_AUTH_MOUNT
  if (normaliseAuthMount(given.value) === undefined) {
    throw new ConfigError(
      `${given.from} ${JSON.stringify(given.value)} is not a valid auth mount path (e.g. "kubernetes" or "jwt")`,
    )
  }
  return given.value
}

function parseReadConsistency(raw: string | undefined): ReadConsistency {
  if (raw === undefined) return DEFAULT_READ_CONSISTENCY
  if (!(READ_CONSISTENCIES as readonly string[]).includes(raw)) {
    throw new ConfigError(
      `-vault-read-consistency must be one of ${READ_CONSISTENCIES.join(', ')}, got ${JSON.stringify(raw)}`,
    )
  }
  return raw as ReadConsistency
}

function parseIdentityScope(raw: string | undefined, mode: ProviderMode): IdentityScopeName {
  // Every Mount of the Sync Controller carries its own pod's UID: the identity is the SecretSync's service account.
  if (raw === undefined) return mode === 'sync-controller' ? 'serviceaccount' : 'pod'
  if (!(IDENTITY_SCOPES as readonly string[]).includes(raw)) {
    throw new ConfigError(`-identity-scope must be one of ${IDENTITY_SCOPES.join(', ')}, got ${JSON.stringify(raw)}`)
  }
  return raw as IdentityScopeName
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1000,
  kb: 1000,
  m: 1e6,
  mb: 1e6,
  ki: 1024,
  kib: 1024,
  mi: 1048576,
  mib: 1048576,
}

/** Bytes as `4194304`, `4MiB`, `512KiB` or `8Mi`. */
export function parseByteSize(value: string, what: string): number {
  const m = /^(\d+)\s*([A-Za-z]*)$/.exec(value.trim())
  const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined
  if (!m || unit === undefined) {
    throw new ConfigError(`${what} must be a size such as 4194304, 4MiB or 512KiB, got ${JSON.stringify(value)}`)
  }
  const bytes = Number(m[1]) * unit
  if (bytes < 1024) throw new ConfigError(`${what} must be at least 1KiB, got ${JSON.stringify(value)}`)
  return bytes
}

/** A comma-separated list, blanks dropped. */
function splitList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '')
}

/** -tls-file-dirs: absolute directories, each kept with one trailing slash so that `/a` never admits `/ab`. */
function parseDirList(value: string | undefined): string[] {
  return splitList(value).map((dir) => {
    if (!dir.startsWith('/')) throw new ConfigError(`-tls-file-dirs: ${JSON.stringify(dir)} must be an absolute path`)
    return dir.endsWith('/') ? dir : `${dir}/`
  })
}

export interface ListenAddress {
  /** undefined: every interface. */
  host?: string
  port: number
}

/** Go-style listen addresses: `:8080`, `0.0.0.0:8080`, `127.0.0.1:0`, `[::1]:9090`. */
export function parseListenAddress(raw: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(raw.trim())
  const port = m ? Number(m[3]) : NaN
  if (!m || port > 65535) {
    throw new ConfigError(`-health-addr must be host:port such as :8080 or 127.0.0.1:8080, got ${JSON.stringify(raw)}`)
  }
  const host = m[1] ?? m[2]
  return { host: host === '' || host === undefined ? undefined : host, port }
}

/** -health-addr: '' or `off` turns the HTTP server off; anything else must be a listen address. */
export function healthAddrEnabled(raw: string): boolean {
  const a = raw.trim()
  return a !== '' && a !== 'off'
}

function parseHealthAddr(raw: string | undefined): string {
  const addr = raw ?? DEFAULT_HEALTH_ADDR
  if (healthAddrEnabled(addr)) parseListenAddress(addr)
  return addr
}

const configError = (message: string): Error => new ConfigError(message)

function parseMode(raw: string | undefined): ProviderMode {
  if (raw === undefined) return 'node'
  if (!(PROVIDER_MODES as readonly string[]).includes(raw)) {
    throw new ConfigError(`-mode must be one of ${PROVIDER_MODES.join(', ')}, got ${JSON.stringify(raw)}`)
  }
  return raw as ProviderMode
}

/** Flags that would be ignored under the Sync Controller, and why: refused rather than silently dropped. */
const NOT_IN_SYNC_CONTROLLER: ReadonlyArray<[FlagName, string]> = [
  ['hmac-secret-name', "the controller's RBAC lets its pod read no Secret; the key comes from -hmac-key-file"],
  [
    'token-request-audiences',
    'the provider requests no tokens there: the controller passes them (its --token-request-audience)',
  ],
  ['kube-api-url', 'the provider calls no Kubernetes API there'],
  ['kube-service-account-dir', 'the provider calls no Kubernetes API there'],
]

/**
 * -mode=sync-controller: the settings that cannot work beside the Sync Controller are refused at
 * start, each with the reason (docs/sync-controller.md).
 */
function checkSyncControllerFlags(
  given: (name: FlagName) => string | undefined,
  bools: ReadonlyMap<string, boolean>,
): void {
  if (given('hmac-key-file') === undefined) {
    throw new ConfigError(
      '-mode=sync-controller needs -hmac-key-file: the object-version key as a file mounted from a Secret ' +
        "(the controller's RBAC lets its pod read no Secret; daemonset/sync-controller/values.yaml mounts one)",
    )
  }
  for (const [name, why] of NOT_IN_SYNC_CONTROLLER) {
    if (given(name) !== undefined) throw new ConfigError(`-${name} has no use with -mode=sync-controller: ${why}`)
  }
  if (bools.get('state-handover') === true) {
    throw new ConfigError(
      '-state-handover cannot be used with -mode=sync-controller: a Deployment pod has no predecessor on its node to take state from',
    )
  }
  if (given('identity-scope') === 'pod') {
    throw new ConfigError(
      "-identity-scope=pod cannot be used with -mode=sync-controller: every Mount names the controller's own pod; " +
        "identities are the SecretSync's namespace and service account",
    )
  }
}

/**
 * -vault-addr-allowlist: each entry a Vault address, or one with a leading
 * host wildcard (`https://*.vault.svc:8200`). Kept as written; the allow-list
 * normalises them the same way.
 */
function parseAllowlist(raw: string | undefined): string[] {
  const entries = splitList(raw)
  for (const entry of entries) {
    const normal = normaliseVaultAddress(entry, '-vault-addr-allowlist entry', configError)
    if (normal.includes('*') && !/^https?:\/\/\*\.[^/:]+/.test(normal)) {
      throw new ConfigError(
        `-vault-addr-allowlist entry ${JSON.stringify(entry)}: only a leading "*." host wildcard is allowed`,
      )
    }
  }
  return entries
}

function parseKubeApiUrl(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined
  let url: URL | undefined
  try {
    url = new URL(raw)
  } catch {
    url = undefined
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password) {
    throw new ConfigError(
      `-kube-api-url must be an http(s) URL without credentials such as https://10.0.0.1:443 or http://127.0.0.1:8001, got ${JSON.stringify(raw)}`,
    )
  }
  return raw
}

function nonEmpty(raw: string | undefined, what: string, fallback: string): string {
  if (raw === undefined) return fallback
  if (raw.trim() === '') throw new ConfigError(`${what} must not be empty`)
  return raw
}

/** A setting's value, and where it came from as messages name it (`-openbao-addr`, `VAULT_ADDR`). */
interface Sourced<T> {
  value: T
  from: string
}

/**
 * A setting given under this provider's name, openbao-csi-provider's, or both: two different
 * values are refused, naming both. The process may serve both flavours from this one setting,
 * so taking either value would send one flavour's Mounts where the operator did not mean them.
 */
function oneOf<T>(ours: Sourced<T> | undefined, openbao: Sourced<T> | undefined, fix: string): Sourced<T> | undefined {
  if (ours !== undefined && openbao !== undefined && ours.value !== openbao.value) {
    throw new ConfigError(`${ours.from} and ${openbao.from} set the same thing to different values: ${fix}`)
  }
  return ours ?? openbao
}

const FLAGS_FIX = 'give one of them, or the same value to both'

function environmentFix(spec: FlagSpec): string {
  const flags = flagNames(spec)
    .map((name) => `-${name}`)
    .join(' or ')
  return `unset one of them or set both to the same value (the flag ${flags} overrides both)`
}

export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ProviderConfig {
  const { argv: args, bools } = extractBoolFlags(normaliseGoFlags(argv))
  let values: Partial<Record<string, unknown>>
  try {
    ;({ values } = parseArgs({ args, options: STRING_FLAG_OPTIONS, strict: true, allowPositionals: false }))
  } catch (err) {
    throw new ConfigError((err as Error).message)
  }
  const str = (name: FlagName): string | undefined => {
    const v = values[name]
    return typeof v === 'string' ? v : undefined
  }
  const givenFlag = (name: string | undefined): Sourced<string> | undefined => {
    if (name === undefined) return undefined
    const v = values[name]
    return typeof v === 'string' ? { value: v, from: `-${name}` } : undefined
  }
  const givenBool = (name: string | undefined): Sourced<boolean> | undefined => {
    if (name === undefined) return undefined
    const v = bools.get(name)
    return v === undefined ? undefined : { value: v, from: `-${name}` }
  }
  /** An environment variable; an empty one counts as unset. */
  const givenEnv = (variable: string | undefined): Sourced<string> | undefined => {
    if (variable === undefined) return undefined
    const v = env[variable]
    return v === undefined || v === '' ? undefined : { value: v, from: variable }
  }
  const givenEnvBool = (variable: string | undefined): Sourced<boolean> | undefined => {
    const raw = givenEnv(variable)
    return raw === undefined ? undefined : { value: parseBool(raw.value, raw.from), from: raw.from }
  }
  /** A setting from the flags (under either name), else from the environment (either variable). */
  const setting = (name: FlagName): Sourced<string> | undefined => {
    const spec = flag(name)
    const fromFlags = oneOf(givenFlag(spec.name), givenFlag(spec.openbaoName), FLAGS_FIX)
    return fromFlags ?? oneOf(givenEnv(spec.env), givenEnv(spec.openbaoEnv), environmentFix(spec))
  }
  const boolSetting = (name: FlagName): Sourced<boolean> | undefined => {
    const spec = flag(name)
    const fromFlags = oneOf(givenBool(spec.name), givenBool(spec.openbaoName), FLAGS_FIX)
    return fromFlags ?? oneOf(givenEnvBool(spec.env), givenEnvBool(spec.openbaoEnv), environmentFix(spec))
  }

  const logLevelRaw = str('log-level') ?? (bools.get('debug') === true ? 'debug' : 'info')
  if (!(LOG_LEVELS as readonly string[]).includes(logLevelRaw)) {
    throw new ConfigError(`-log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevelRaw)}`)
  }

  const sizeFlag = (name: FlagName, fallback: number): number => {
    const raw = str(name)
    return raw === undefined ? fallback : parseByteSize(raw, `-${name}`)
  }

  // Checked here so that a typo fails at start-up, not in every Mount; kept as written (Mounts normalise it).
  const vaultAddress = setting('vault-addr')
  if (vaultAddress !== undefined) normaliseVaultAddress(vaultAddress.value, vaultAddress.from, configError)
  const hmacSecretName = str('hmac-secret-name')
  const cacheSizeRaw = str('cache-size')

  const endpoints = parseEndpoints(nonEmpty(str('endpoint'), '-endpoint', DEFAULT_ENDPOINT))
  const served = [...new Set(endpoints.map((e) => e.flavour))]
  const mode = parseMode(str('mode'))
  if (mode === 'sync-controller') checkSyncControllerFlags(str, bools)
  return {
    mode,
    endpoint: endpoints[0]!.path,
    endpoints,
    logLevel: logLevelRaw as LogLevel,
    healthAddr: parseHealthAddr(str('health-addr')),
    // One key per process: the Secret of the first socket's provider, unless -hmac-secret-name names one.
    hmacSecretName: nonEmpty(
      hmacSecretName,
      '-hmac-secret-name',
      FLAVOURS[endpoints[0]!.flavour].defaultHmacSecretName,
    ),
    hmacSecretNames: {
      vault: nonEmpty(hmacSecretName, '-hmac-secret-name', FLAVOURS.vault.defaultHmacSecretName),
      openbao: nonEmpty(hmacSecretName, '-hmac-secret-name', FLAVOURS.openbao.defaultHmacSecretName),
    },
    hmacKeyFile: str('hmac-key-file'),
    cacheSize: cacheSizeRaw === undefined ? DEFAULT_CACHE_SIZE : parseInteger(cacheSizeRaw, '-cache-size'),
    mountTimeoutMs: parseMountTimeout(str('mount-timeout')),
    vaultAddrAllowlist: parseAllowlist(str('vault-addr-allowlist')),
    vaultIdleConnectionMs: parseVaultIdleConnection(str('vault-idle-connection-timeout')),
    maxResponseBytes:
      str('max-response-size') === undefined
        ? DEFAULT_MAX_RESPONSE_BYTES
        : parseByteSize(str('max-response-size')!, '-max-response-size'),
    identityScope: parseIdentityScope(str('identity-scope'), mode),
    staticFreshnessMs:
      str('static-freshness') === undefined ? 0 : parseDurationMs(str('static-freshness')!, '-static-freshness'),
    shareDynamicSecrets: bools.get('share-dynamic-secrets') === true,
    // No predecessor to hand over from beside the Sync Controller (checkSyncControllerFlags).
    stateHandover: bools.get('state-handover') ?? mode === 'node',
    identityIdleMs:
      str('identity-idle-timeout') === undefined
        ? mode === 'sync-controller'
          ? SYNC_CONTROLLER_IDENTITY_IDLE_MS
          : DEFAULT_IDENTITY_IDLE_MS
        : parseDurationMs(str('identity-idle-timeout')!, '-identity-idle-timeout'),
    limits: {
      maxObjectsBytes: sizeFlag('max-objects-size', DEFAULT_MAX_OBJECTS_BYTES),
      maxVaultResponseBytes: sizeFlag('max-vault-response-size', DEFAULT_MAX_VAULT_RESPONSE_BYTES),
      maxMountBytes: sizeFlag('max-mount-bytes', DEFAULT_MAX_MOUNT_BYTES),
      nodeMountBytes: sizeFlag('max-node-mount-bytes', DEFAULT_NODE_MOUNT_BYTES),
      maxTlsFileBytes: sizeFlag('max-tls-file-size', DEFAULT_MAX_TLS_FILE_BYTES),
      tlsFileDirs: parseDirList(str('tls-file-dirs')),
    },
    // Beside the Sync Controller no token is ever requested: the controller passes them all.
    tokenRequestAudiences:
      mode === 'sync-controller'
        ? []
        : str('token-request-audiences') === undefined
          ? served.map((f) => FLAVOURS[f].defaultAudience)
          : splitList(str('token-request-audiences')),
    vault: {
      address: vaultAddress?.value,
      namespace: checked(setting('vault-namespace'), namespaceProblem),
      ...optionalField('authNamespace', checked(setting('vault-auth-namespace'), namespaceProblem)),
      authMount: parseAuthMountFlag(setting('vault-mount')),
      readConsistency: parseReadConsistency(str('vault-read-consistency')),
      tls: {
        caCertPath: setting('vault-tls-ca-cert')?.value,
        caDirectory: setting('vault-tls-ca-directory')?.value,
        serverName: checked(setting('vault-tls-server-name'), serverNameProblem),
        clientCertPath: setting('vault-tls-client-cert')?.value,
        clientKeyPath: setting('vault-tls-client-key')?.value,
        skipVerify: boolSetting('vault-tls-skip-verify')?.value ?? false,
      },
    },
    kube: {
      apiUrl: parseKubeApiUrl(str('kube-api-url')),
      serviceAccountDir: str('kube-service-account-dir') ?? DEFAULT_KUBE_SA_DIR,
    },
    showVersion: bools.get('version') === true,
  }
}
