/**
 * The daemon's configuration: flags and environment, with the precedence
 * existing vault-csi-provider deployments rely on (environment < flags; the
 * SecretProviderClass then overrides both per Mount, see request/parse.ts).
 *
 * Flags are accepted Go-style (`-endpoint=/x`, `-endpoint /x`) as well as
 * GNU-style (`--endpoint=/x`), because existing DaemonSets pass the former.
 */
import { parseArgs } from 'node:util'

export const DEFAULT_ENDPOINT = '/var/run/secrets-store-csi-providers/vault.sock'
export const DEFAULT_HMAC_SECRET_NAME = 'vault-csi-provider-hmac-key'
export const DEFAULT_AUTH_MOUNT = 'kubernetes'
export const DEFAULT_CACHE_SIZE = 1000
export const DEFAULT_HEALTH_ADDR = ':8080'
export const DEFAULT_MOUNT_TIMEOUT_MS = 100_000
export const DEFAULT_KUBE_SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'
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
  authMount: string
  tls: VaultTlsConfig
}

export interface ProviderConfig {
  endpoint: string
  logLevel: LogLevel
  healthAddr: string
  hmacSecretName: string
  /** Local key file for object versions, for running outside Kubernetes. */
  hmacKeyFile?: string
  cacheSize: number
  mountTimeoutMs: number
  vault: VaultDefaults
  kube: {
    /** Overrides in-cluster discovery, e.g. http://127.0.0.1:8001 behind `kubectl proxy`. */
    apiUrl?: string
    serviceAccountDir: string
  }
  showVersion: boolean
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

const FLAG_SPEC = {
  endpoint: { type: 'string' },
  'log-level': { type: 'string' },
  debug: { type: 'boolean' },
  version: { type: 'boolean' },
  'health-addr': { type: 'string' },
  'hmac-secret-name': { type: 'string' },
  'hmac-key-file': { type: 'string' },
  'cache-size': { type: 'string' },
  'mount-timeout': { type: 'string' },
  'vault-addr': { type: 'string' },
  'vault-mount': { type: 'string' },
  'vault-namespace': { type: 'string' },
  'vault-tls-ca-cert': { type: 'string' },
  'vault-tls-ca-directory': { type: 'string' },
  'vault-tls-server-name': { type: 'string' },
  'vault-tls-client-cert': { type: 'string' },
  'vault-tls-client-key': { type: 'string' },
  'vault-tls-skip-verify': { type: 'string' },
  'kube-api-url': { type: 'string' },
  'kube-service-account-dir': { type: 'string' },
} as const

type FlagName = keyof typeof FLAG_SPEC
export const FLAG_NAMES = Object.keys(FLAG_SPEC) as FlagName[]

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

// Boolean flags that Go users write as `-flag=true|false`.
const BOOL_FLAGS_WITH_VALUE = new Set(['debug', 'version'])

function splitBoolAssignments(argv: string[]): { argv: string[]; negated: Set<string> } {
  const negated = new Set<string>()
  const out: string[] = []
  for (const arg of argv) {
    const m = /^--([\w-]+)=(.*)$/.exec(arg)
    if (m && BOOL_FLAGS_WITH_VALUE.has(m[1]!)) {
      const value = parseBool(m[2]!, `-${m[1]}`)
      if (value) out.push(`--${m[1]}`)
      else negated.add(m[1]!)
      continue
    }
    out.push(arg)
  }
  return { argv: out, negated }
}

/** Go's strconv.ParseBool spellings, which existing manifests use. */
export function parseBool(value: string, what: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false
  throw new ConfigError(`${what} must be true or false, got ${JSON.stringify(value)}`)
}

function parseNonNegativeInt(value: string, what: string): number {
  if (!/^-?\d+$/.test(value)) throw new ConfigError(`${what} must be an integer, got ${JSON.stringify(value)}`)
  return Number.parseInt(value, 10)
}

/** Accepts Go-style durations used in manifests: `90s`, `2m`, `1500ms`, or plain seconds. */
export function parseDurationMs(value: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim())
  if (!m) throw new ConfigError(`${what} must be a duration such as 90s or 2m, got ${JSON.stringify(value)}`)
  const n = Number(m[1])
  const unit = m[2] ?? 's'
  const factor = unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000
  return Math.round(n * factor)
}

export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ProviderConfig {
  const { argv: args, negated } = splitBoolAssignments(normaliseGoFlags(argv))
  let values: Partial<Record<FlagName, string | boolean>>
  try {
    ;({ values } = parseArgs({ args, options: FLAG_SPEC, strict: true, allowPositionals: false }))
  } catch (err) {
    throw new ConfigError((err as Error).message)
  }
  const str = (name: FlagName): string | undefined => {
    const v = values[name]
    return typeof v === 'string' ? v : undefined
  }
  const envStr = (name: string): string | undefined => {
    const v = env[name]
    return v === undefined || v === '' ? undefined : v
  }

  const logLevelRaw = str('log-level') ?? (values.debug === true && !negated.has('debug') ? 'debug' : 'info')
  if (!(LOG_LEVELS as readonly string[]).includes(logLevelRaw)) {
    throw new ConfigError(`-log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevelRaw)}`)
  }

  const skipVerifyRaw = str('vault-tls-skip-verify') ?? envStr('VAULT_SKIP_VERIFY')
  const cacheSizeRaw = str('cache-size')

  return {
    endpoint: str('endpoint') ?? DEFAULT_ENDPOINT,
    logLevel: logLevelRaw as LogLevel,
    healthAddr: str('health-addr') ?? DEFAULT_HEALTH_ADDR,
    hmacSecretName: str('hmac-secret-name') ?? DEFAULT_HMAC_SECRET_NAME,
    hmacKeyFile: str('hmac-key-file'),
    cacheSize: cacheSizeRaw === undefined ? DEFAULT_CACHE_SIZE : parseNonNegativeInt(cacheSizeRaw, '-cache-size'),
    mountTimeoutMs:
      str('mount-timeout') === undefined
        ? DEFAULT_MOUNT_TIMEOUT_MS
        : parseDurationMs(str('mount-timeout')!, '-mount-timeout'),
    vault: {
      address: str('vault-addr') ?? envStr('VAULT_ADDR'),
      namespace: str('vault-namespace') ?? envStr('VAULT_NAMESPACE'),
      authMount: str('vault-mount') ?? DEFAULT_AUTH_MOUNT,
      tls: {
        caCertPath: str('vault-tls-ca-cert') ?? envStr('VAULT_CACERT'),
        caDirectory: str('vault-tls-ca-directory') ?? envStr('VAULT_CAPATH'),
        serverName: str('vault-tls-server-name') ?? envStr('VAULT_TLS_SERVER_NAME'),
        clientCertPath: str('vault-tls-client-cert') ?? envStr('VAULT_CLIENT_CERT'),
        clientKeyPath: str('vault-tls-client-key') ?? envStr('VAULT_CLIENT_KEY'),
        skipVerify:
          skipVerifyRaw === undefined ? false : parseBool(skipVerifyRaw, '-vault-tls-skip-verify / VAULT_SKIP_VERIFY'),
      },
    },
    kube: {
      apiUrl: str('kube-api-url'),
      serviceAccountDir: str('kube-service-account-dir') ?? DEFAULT_KUBE_SA_DIR,
    },
    showVersion: values.version === true && !negated.has('version'),
  }
}
