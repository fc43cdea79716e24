/**
 * `vault-csi-provider doctor`: checks what a Mount depends on, in the order a
 * Mount meets it, and says how to fix each failure.
 *
 *   socket   exists, is a socket, owner-only, answers Version and gRPC Health
 *   vault    reachable, TLS chain, initialized/sealed/standby, version, clock skew
 *   auth     the auth mount and the role exist; with a pod token, the pod can log in
 *   hmac     the object-version key (Kubernetes Secret or key file)
 *   kube     the provider's RBAC: what it needs, nothing more
 */
import { lstat, readFile } from 'node:fs/promises'
import {
  DEFAULT_MAX_VAULT_RESPONSE_BYTES,
  loadConfig,
  ConfigError,
  type ProviderConfig,
  type VaultDefaults,
} from '../config/config.js'
import { ProviderError } from '../errors.js'
import { HMAC_KEY_BYTES, HMAC_SECRET_KEY } from '../hmac/hmac-key.js'
import { KubeClient } from '../kube/client.js'
import { isProviderError } from '../errors.js'
import { DEFAULT_FLAVOUR, flavourOfProvider, type ProviderFlavour } from '../config/flavour.js'
import { readParameter } from '../request/parameters.js'
import { parseVaultSettings, type VaultSettings } from '../request/parse-request.js'
import type { VaultConnection } from '../request/types.js'
import { checkGrpcHealth, checkSocket, probeVaultHealth, type VaultHealth } from '../server/health.js'
import { isTlsErrorCode, tlsFix } from '../vault/transport/call-errors.js'
import { describeFailure } from '../vault/failure-to-error.js'
import { defaultTransportOptions, MAX_TOKEN_ANSWER_BYTES, VaultTransport } from '../vault/transport/transport.js'
import { EXIT, ms, UsageError, withProgress, type Style } from './output.js'
import { readSecretProviderClass, readTokenFile, tokenFromKubectl } from './spc.js'

export type CheckStatus = 'pass' | 'fail' | 'warn' | 'skip'

export interface CheckResult {
  id: string
  title: string
  status: CheckStatus
  detail: string
  /** What to do about a failure or warning. */
  fix?: string
}

export interface DoctorOptions {
  socket: string
  spc?: string
  role?: string
  tokenFile?: string
  tokenFromKubectl?: boolean
  namespace?: string
  serviceAccount?: string
  audience?: string
  json?: boolean
  /** Daemon flags (-vault-addr, TLS, -vault-mount, -hmac-*, -kube-*), parsed by the daemon's own parser. */
  providerFlags: string[]
  /** Largest clock difference with Vault that passes (ms). */
  maxClockSkewMs?: number
}

export const WARN_CLOCK_SKEW_MS = 5_000
export const FAIL_CLOCK_SKEW_MS = 60_000

async function socketChecks(socketPath: string): Promise<CheckResult[]> {
  const out: CheckResult[] = []
  const st = await lstat(socketPath).catch((err: NodeJS.ErrnoException) => err)
  if (st instanceof Error) {
    out.push({
      id: 'socket.exists',
      title: 'provider socket exists',
      status: 'fail',
      detail: `${socketPath}: ${(st as NodeJS.ErrnoException).code ?? st.message}`,
      fix: 'start the provider (its DaemonSet pod on this node) with -endpoint pointing at this path; the driver looks for <provider-volume>/vault.sock (default /var/run/secrets-store-csi-providers/vault.sock)',
    })
    for (const [id, title] of [
      ['socket.permissions', 'socket is owner-only'],
      ['socket.version', 'socket answers Version'],
      ['socket.health', 'gRPC health is SERVING'],
    ] as const) {
      out.push({ id, title, status: 'skip', detail: 'no socket' })
    }
    return out
  }
  if (!st.isSocket()) {
    out.push({
      id: 'socket.exists',
      title: 'provider socket exists',
      status: 'fail',
      detail: `${socketPath} exists but is not a socket`,
      fix: 'remove the file; the provider refuses to replace anything that is not a socket',
    })
    return out
  }
  out.push({ id: 'socket.exists', title: 'provider socket exists', status: 'pass', detail: socketPath })
  const mode = st.mode & 0o777
  out.push(
    (mode & 0o077) === 0
      ? {
          id: 'socket.permissions',
          title: 'socket is owner-only',
          status: 'pass',
          detail: `mode 0${mode.toString(8)}, uid ${st.uid}`,
        }
      : {
          id: 'socket.permissions',
          title: 'socket is owner-only',
          status: 'fail',
          detail: `mode 0${mode.toString(8)}: other users on the node can ask the provider for any pod's secrets`,
          fix: 'run a provider version that creates the socket 0600, and make sure nothing chmods the socket directory contents',
        },
  )
  const v = await checkSocket(socketPath)
  out.push(
    v.ok
      ? {
          id: 'socket.version',
          title: 'socket answers Version',
          status: 'pass',
          detail: `${v.detail} in ${ms(v.durationMs)}`,
        }
      : {
          id: 'socket.version',
          title: 'socket answers Version',
          status: 'fail',
          detail: v.detail,
          fix: "the socket file is left over or the provider hangs: check the provider pod's log and restart it (a new provider removes a stale socket)",
        },
  )
  const h = await checkGrpcHealth(socketPath)
  out.push(
    h.ok
      ? {
          id: 'socket.health',
          title: 'gRPC health is SERVING',
          status: 'pass',
          detail: 'grpc.health.v1.Health/Check: SERVING',
        }
      : {
          id: 'socket.health',
          title: 'gRPC health is SERVING',
          status: v.ok ? 'warn' : 'fail',
          detail: `grpc.health.v1.Health/Check: ${h.status}`,
          fix: v.ok
            ? 'the provider answers Version but not Health: it is older than this CLI or shutting down'
            : 'see socket.version',
        },
  )
  return out
}

function vaultChecks(conn: VaultConnection, h: VaultHealth, maxSkewMs: number): CheckResult[] {
  const out: CheckResult[] = []
  const isHttps = conn.address.startsWith('https://')
  const tlsFailed = h.errorCode !== undefined && isTlsErrorCode(h.errorCode)
  if (!h.reachable && !tlsFailed) {
    out.push({
      id: 'vault.reachable',
      title: 'Vault is reachable',
      status: 'fail',
      detail: `${conn.address}: ${h.detail}`,
      fix:
        h.errorCode === 'ENOTFOUND' || h.errorCode === 'EAI_AGAIN'
          ? "the host name does not resolve from this node: check -vault-addr / vaultAddress and the node's DNS"
          : 'check -vault-addr / vaultAddress (scheme, host, port), that Vault listens there, and network policies between this node and Vault',
    })
  } else {
    out.push({
      id: 'vault.reachable',
      title: 'Vault is reachable',
      status: 'pass',
      detail: tlsFailed
        ? `${conn.address}: connected (TLS failed, see vault.tls)`
        : `${conn.address} answered in ${ms(h.durationMs)}`,
    })
  }
  if (!isHttps) {
    out.push({
      id: 'vault.tls',
      title: 'TLS chain is trusted',
      status: conn.address.startsWith('unix://') ? 'skip' : 'warn',
      detail: conn.address.startsWith('unix://')
        ? 'unix socket (Vault Agent)'
        : 'plain HTTP: pod tokens and secrets cross the network unencrypted',
      ...(conn.address.startsWith('unix://') ? {} : { fix: 'use https:// with a trusted CA outside test clusters' }),
    })
  } else if (tlsFailed) {
    out.push({
      id: 'vault.tls',
      title: 'TLS chain is trusted',
      status: 'fail',
      detail: h.detail,
      fix: tlsFix(h.errorCode),
    })
  } else if (!h.reachable) {
    out.push({ id: 'vault.tls', title: 'TLS chain is trusted', status: 'skip', detail: 'Vault not reachable' })
  } else {
    out.push({
      id: 'vault.tls',
      title: 'TLS chain is trusted',
      status: conn.tls.skipVerify ? 'warn' : 'pass',
      detail: conn.tls.skipVerify ? 'verification is skipped (-vault-tls-skip-verify)' : 'certificate verified',
      ...(conn.tls.skipVerify ? { fix: 'set a CA (-vault-tls-ca-cert) instead of skipping verification' } : {}),
    })
  }
  if (!h.reachable) {
    for (const [id, title] of [
      ['vault.sealed', 'Vault is initialized and unsealed'],
      ['vault.standby', 'Vault node is active'],
      ['vault.version', 'Vault version'],
      ['vault.clock', 'clock agrees with Vault'],
    ] as const) {
      out.push({ id, title, status: 'skip', detail: 'Vault not reachable' })
    }
    return out
  }
  if (h.initialized === false || h.status === 501) {
    out.push({
      id: 'vault.sealed',
      title: 'Vault is initialized and unsealed',
      status: 'fail',
      detail: 'not initialized',
      fix: 'initialize Vault (vault operator init / bao operator init)',
    })
  } else if (h.sealed === true || h.status === 503) {
    out.push({
      id: 'vault.sealed',
      title: 'Vault is initialized and unsealed',
      status: 'fail',
      detail: `sealed (sys/health answered ${h.status})`,
      fix: 'unseal Vault (vault operator unseal / bao operator unseal, or check its auto-unseal); Mounts fail with VAULT_UNAVAILABLE until then',
    })
  } else {
    out.push({ id: 'vault.sealed', title: 'Vault is initialized and unsealed', status: 'pass', detail: 'unsealed' })
  }
  if (h.standby === true && h.sealed !== true) {
    out.push({
      id: 'vault.standby',
      title: 'Vault node is active',
      status: 'warn',
      detail: `${h.performanceStandby ? 'performance ' : ''}standby (sys/health answered ${h.status})`,
      fix: 'point -vault-addr at the active node or at a load balancer that prefers it; standbys forward or reject requests',
    })
  } else if (h.sealed === true) {
    out.push({ id: 'vault.standby', title: 'Vault node is active', status: 'skip', detail: 'sealed' })
  } else {
    out.push({ id: 'vault.standby', title: 'Vault node is active', status: 'pass', detail: 'active' })
  }
  out.push({
    id: 'vault.version',
    title: 'Vault version',
    status: h.version ? 'pass' : 'warn',
    detail: h.version ?? 'not reported',
  })
  if (h.clockSkewMs === undefined) {
    out.push({ id: 'vault.clock', title: 'clock agrees with Vault', status: 'skip', detail: 'Vault reported no time' })
  } else {
    const skew = Math.abs(h.clockSkewMs)
    // sys/health reports whole seconds: up to 1 s of difference is rounding.
    const status: CheckStatus = skew >= maxSkewMs ? 'fail' : skew >= WARN_CLOCK_SKEW_MS ? 'warn' : 'pass'
    out.push({
      id: 'vault.clock',
      title: 'clock agrees with Vault',
      status,
      detail: `${h.clockSkewMs >= 0 ? 'Vault is ahead by' : 'Vault is behind by'} ${(skew / 1000).toFixed(1)} s`,
      ...(status === 'pass'
        ? {}
        : {
            fix: 'synchronise the clocks (NTP/chrony) of this node and the Vault servers: token and JWT validity depend on them',
          }),
    })
  }
  return out
}

/** A Vault transport with the provider's default limits, for one doctor check. */
function doctorTransport(conn: VaultConnection): Promise<VaultTransport> {
  return VaultTransport.create(conn, defaultTransportOptions(DEFAULT_MAX_VAULT_RESPONSE_BYTES))
}

/** Raw POST auth/<mount>/login through the provider's transport: status and Vault's errors. */
async function tryLogin(
  conn: VaultConnection,
  mount: string,
  role: string,
  jwt: string,
): Promise<{ status?: number; errors: string[]; token?: string; detail?: string }> {
  let transport: VaultTransport
  try {
    transport = await doctorTransport(conn)
  } catch (err) {
    return { errors: [], detail: err instanceof Error ? err.message : String(err) }
  }
  try {
    const answer = await transport.call({
      method: 'POST',
      path: `auth/${mount.split('/').map(encodeURIComponent).join('/')}/login`,
      namespace: conn.namespace,
      body: { role, jwt },
      timeoutMs: 10_000,
      maxResponseBytes: MAX_TOKEN_ANSWER_BYTES,
      anyStatus: true,
      operation: 'login',
    })
    const parsed = (answer.body !== null && typeof answer.body === 'object' ? answer.body : {}) as {
      errors?: unknown
      auth?: { client_token?: unknown }
    }
    const errors = Array.isArray(parsed.errors) ? parsed.errors.filter((e): e is string => typeof e === 'string') : []
    const token = typeof parsed.auth?.client_token === 'string' ? parsed.auth.client_token : undefined
    return { status: answer.status, errors, token }
  } catch (err) {
    return { errors: [], detail: err instanceof ProviderError ? err.message : describeFailure(err).detail }
  } finally {
    await transport.close()
  }
}

/** Best effort: the doctor's test login must not leave a token behind. */
async function revokeSelf(conn: VaultConnection, token: string): Promise<void> {
  const transport = await doctorTransport(conn).catch(() => undefined)
  if (!transport) return
  try {
    await transport.call({
      method: 'POST',
      path: 'auth/token/revoke-self',
      token,
      namespace: conn.namespace,
      timeoutMs: 5_000,
      maxResponseBytes: MAX_TOKEN_ANSWER_BYTES,
      operation: 'revoke',
    })
  } catch {
    // Best effort.
  } finally {
    await transport.close()
  }
}

const ROLE_MISSING = /role .*(could not be found|not found)|invalid role name/i

async function authChecks(
  conn: VaultConnection,
  mount: string,
  role: string | undefined,
  jwt: string | undefined,
): Promise<CheckResult[]> {
  if (!role) {
    return [
      {
        id: 'auth.mount',
        title: `auth mount "${mount}" exists`,
        status: 'skip',
        detail: 'no role given (--role or a SecretProviderClass)',
      },
      { id: 'auth.role', title: 'role exists', status: 'skip', detail: 'no role given' },
    ]
  }
  // Without the pod's token, a login with a deliberately invalid JWT still tells an
  // unknown mount (403), an unknown role ("role … not found") and a known role (token rejected) apart.
  const probe = await tryLogin(conn, mount, role, jwt ?? 'doctor.invalid.jwt')
  const errors = probe.errors.join('; ')
  const out: CheckResult[] = []
  if (probe.status === undefined) {
    return [
      { id: 'auth.mount', title: `auth mount "${mount}" exists`, status: 'skip', detail: probe.detail ?? 'no answer' },
      { id: 'auth.role', title: `role "${role}" exists`, status: 'skip', detail: probe.detail ?? 'no answer' },
    ]
  }
  if (probe.status === 503) {
    return [
      {
        id: 'auth.mount',
        title: `auth mount "${mount}" exists`,
        status: 'skip',
        detail: `Vault answered 503: ${errors}`,
      },
      { id: 'auth.role', title: `role "${role}" exists`, status: 'skip', detail: 'Vault unavailable' },
    ]
  }
  if ((probe.status === 403 || probe.status === 404) && !ROLE_MISSING.test(errors)) {
    out.push({
      id: 'auth.mount',
      title: `auth mount "${mount}" exists`,
      status: 'fail',
      detail: `POST auth/${mount}/login answered ${probe.status}: ${errors || 'no error text'}`,
      fix: `enable the auth method at "${mount}" (vault auth enable -path=${mount} kubernetes), or set -vault-mount / vaultAuthMountPath to the mount that exists`,
    })
    out.push({ id: 'auth.role', title: `role "${role}" exists`, status: 'skip', detail: 'no auth mount' })
    return out
  }
  out.push({
    id: 'auth.mount',
    title: `auth mount "${mount}" exists`,
    status: 'pass',
    detail: `auth/${mount}/login answers`,
  })
  if (ROLE_MISSING.test(errors)) {
    out.push({
      id: 'auth.role',
      title: `role "${role}" exists`,
      status: 'fail',
      detail: errors,
      fix: `create the role (vault write auth/${mount}/role/${role} …) or fix roleName in the SecretProviderClass`,
    })
    return out
  }
  out.push({
    id: 'auth.role',
    title: `role "${role}" exists`,
    status: 'pass',
    detail: `auth/${mount}/role/${role} is known to Vault`,
  })
  if (jwt !== undefined) {
    if (probe.status === 200 && probe.token) {
      await revokeSelf(conn, probe.token)
      out.push({
        id: 'auth.login',
        title: 'the pod can log in',
        status: 'pass',
        detail: 'login succeeded (the test token was revoked)',
      })
    } else {
      out.push({
        id: 'auth.login',
        title: 'the pod can log in',
        status: 'fail',
        detail: `login answered ${probe.status}: ${errors || 'no error text'}`,
        fix: "compare the role's bound service accounts / namespaces / audience with the pod's; the token's audience must be one the role accepts (-audience, default \"vault\")",
      })
    }
  }
  return out
}

async function hmacChecks(config: ProviderConfig, namespaceOverride: string | undefined): Promise<CheckResult[]> {
  const title = 'object-version HMAC key'
  if (config.hmacKeyFile) {
    const buf = await readFile(config.hmacKeyFile).catch((err: NodeJS.ErrnoException) => err)
    if (buf instanceof Error) {
      const code = (buf as NodeJS.ErrnoException).code
      return [
        {
          id: 'hmac.key',
          title,
          status: code === 'ENOENT' ? 'warn' : 'fail',
          detail: `key file ${config.hmacKeyFile}: ${code}`,
          fix:
            code === 'ENOENT'
              ? 'the provider creates it at the first Mount; make its directory writable and persistent'
              : 'make the key file readable by the provider',
        },
      ]
    }
    return buf.length >= HMAC_KEY_BYTES
      ? [
          {
            id: 'hmac.key',
            title,
            status: 'pass',
            detail: `key file ${config.hmacKeyFile} holds a ${buf.length}-byte key`,
          },
        ]
      : [
          {
            id: 'hmac.key',
            title,
            status: 'fail',
            detail: `key file ${config.hmacKeyFile} holds ${buf.length} bytes`,
            fix: `remove it; the provider writes a new ${HMAC_KEY_BYTES}-byte key (object versions change once)`,
          },
        ]
  }
  const kube = await KubeClient.discover({
    apiUrl: config.kube.apiUrl,
    serviceAccountDir: config.kube.serviceAccountDir,
    env: process.env,
  })
  if (!kube) {
    return [
      {
        id: 'hmac.key',
        title,
        status: 'skip',
        detail: 'no Kubernetes API (not in a cluster; use --kube-api-url, e.g. behind kubectl proxy)',
      },
    ]
  }
  try {
    const namespace = namespaceOverride ?? (await kube.ownNamespace(process.env))
    const where = `Secret ${namespace}/${config.hmacSecretName}`
    const data = await kube.getSecret(namespace, config.hmacSecretName)
    if (!data) {
      return [
        {
          id: 'hmac.key',
          title,
          status: 'warn',
          detail: `${where} does not exist yet`,
          fix: 'the first provider that mounts creates it; grant its ServiceAccount get and create on secrets in its namespace',
        },
      ]
    }
    const key = data.get(HMAC_SECRET_KEY)
    if (!key || key.length < HMAC_KEY_BYTES) {
      return [
        {
          id: 'hmac.key',
          title,
          status: 'fail',
          detail: `${where} has no ${HMAC_KEY_BYTES}-byte "${HMAC_SECRET_KEY}"`,
          fix: `delete the Secret; the provider recreates it (object versions change once)`,
        },
      ]
    }
    return [{ id: 'hmac.key', title, status: 'pass', detail: `${where} holds a ${key.length}-byte key` }]
  } catch (err) {
    return [
      {
        id: 'hmac.key',
        title,
        status: 'fail',
        detail: err instanceof Error ? err.message : String(err),
        fix: "grant the provider's ServiceAccount get (and create) on the HMAC Secret; check -hmac-secret-name",
      },
    ]
  } finally {
    kube.close()
  }
}

/**
 * The provider's RBAC, asked of the API server as the provider (SelfSubjectAccessReview):
 * what daemonset/base/rbac.yaml grants, and that it grants nothing more on Secrets.
 */
async function rbacChecks(config: ProviderConfig): Promise<CheckResult[]> {
  const id = 'kube.rbac'
  const title = "the provider's RBAC"
  if (config.hmacKeyFile) return []
  const kube = await KubeClient.discover({
    apiUrl: config.kube.apiUrl,
    serviceAccountDir: config.kube.serviceAccountDir,
    env: process.env,
  })
  if (!kube) return [{ id, title, status: 'skip', detail: 'no Kubernetes API' }]
  try {
    const ns = await kube.ownNamespace(process.env)
    const name = config.hmacSecretName
    const [get, create, list, anyGet, tokens] = await Promise.all([
      kube.canI(ns, 'get', 'secrets', { name }),
      kube.canI(ns, 'create', 'secrets'),
      kube.canI(ns, 'list', 'secrets'),
      kube.canI('', 'get', 'secrets'),
      kube.canI('', 'create', 'serviceaccounts', { subresource: 'token' }),
    ])
    const tokenNote = tokens
      ? 'may request pod tokens (TokenRequest, daemonset/overlays/token-request)'
      : 'no TokenRequest (fine when the CSIDriver passes tokens: tokenRequests audience "vault")'
    if (!get) {
      return [
        {
          id,
          title,
          status: 'fail',
          detail: `may not get Secret ${ns}/${name}; ${tokenNote}`,
          fix: `apply daemonset/ (base/rbac.yaml: get on secrets named ${name}, create on secrets in ${ns}); with -hmac-secret-name, rename resourceNames there too`,
        },
      ]
    }
    const extra = [list ? `list secrets in ${ns}` : '', anyGet ? 'get every Secret of the cluster' : ''].filter(
      (x) => x !== '',
    )
    if (extra.length > 0) {
      return [
        {
          id,
          title,
          status: 'warn',
          detail: `more than it needs: ${extra.join(', ')}; ${tokenNote}`,
          fix: 'bind the provider only to the Role of daemonset/base/rbac.yaml (get on its one Secret, create in its namespace)',
        },
      ]
    }
    if (!create) {
      return [
        {
          id,
          title,
          status: 'warn',
          detail: `may get Secret ${ns}/${name} but not create Secrets in ${ns}; ${tokenNote}`,
          fix: 'fine once the Secret exists; otherwise grant create on secrets in this namespace (daemonset/base/rbac.yaml)',
        },
      ]
    }
    return [
      {
        id,
        title,
        status: 'pass',
        detail: `get Secret ${ns}/${name}, create Secrets in ${ns}, no other Secret access; ${tokenNote}`,
      },
    ]
  } catch (err) {
    return [
      {
        id,
        title,
        status: 'fail',
        detail: err instanceof Error ? err.message : String(err),
        fix: 'check --kube-api-url and the service-account directory (token, ca.crt)',
      },
    ]
  } finally {
    kube.close()
  }
}

/** What doctor checks against: the Mount's Vault settings for the SPC's parameters, or why there are none. */
export type DoctorTarget =
  { kind: 'no-address' } | { kind: 'bad'; message: string } | { kind: 'ok'; settings: VaultSettings }

/**
 * The SecretProviderClass read through the Mount's own parser
 * (parseVaultSettings): the same parameters, precedence over the flags, TLS
 * client certificate and vaultSkipTLSVerify spelling as a Mount. --role and
 * --audience, when given, take the place of the SPC's.
 */
export function doctorTarget(
  parameters: Readonly<Record<string, string>>,
  defaults: VaultDefaults,
  opts: Pick<DoctorOptions, 'role' | 'audience'>,
  flavour: ProviderFlavour = DEFAULT_FLAVOUR,
): DoctorTarget {
  const address = readParameter(new Map(Object.entries(parameters)), 'address', flavour)
  if (address === undefined && !defaults.address) return { kind: 'no-address' }
  let settings: VaultSettings
  try {
    settings = parseVaultSettings(parameters, defaults, flavour)
  } catch (err) {
    if (!isProviderError(err)) throw err
    return { kind: 'bad', message: err.message }
  }
  return {
    kind: 'ok',
    settings: {
      ...settings,
      roleName: opts.role ?? settings.roleName,
      audience: opts.audience ?? settings.audience,
    },
  }
}

export async function runDoctor(opts: DoctorOptions): Promise<CheckResult[]> {
  let config: ProviderConfig
  try {
    config = loadConfig(opts.providerFlags, process.env)
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message)
    throw err
  }
  // The SecretProviderClass is read through the Mount's own parser (parseVaultSettings): the same
  // parameters, precedence over the flags, TLS client certificate and vaultSkipTLSVerify spelling.
  const spc = opts.spc ? await readSecretProviderClass(opts.spc) : undefined
  const parameters = spc?.parameters ?? {}
  const podNamespace = opts.namespace ?? spc?.namespace

  const results: CheckResult[] = []
  results.push(...(await socketChecks(opts.socket)))

  // A provider: openbao class is read with OpenBao's parameter names, as its Mounts are.
  const target = doctorTarget(parameters, config.vault, opts, flavourOfProvider(spc?.provider) ?? DEFAULT_FLAVOUR)
  if (target.kind === 'no-address') {
    results.push({
      id: 'vault.reachable',
      title: 'Vault is reachable',
      status: 'skip',
      detail: 'no Vault address: pass --vault-addr, set VAULT_ADDR, or --spc with vaultAddress',
    })
  } else if (target.kind === 'bad') {
    results.push({
      id: 'vault.reachable',
      title: 'Vault is reachable',
      status: 'fail',
      detail: target.message,
      fix: /address/i.test(target.message)
        ? 'use an address such as https://vault.example:8200'
        : 'fix the SecretProviderClass parameter (or provider flag) the message names',
    })
  } else {
    const settings = target.settings
    const conn = settings.vault
    const authMount = settings.authMount
    const role = settings.roleName
    const audience = settings.audience
    const health = await probeVaultHealth(conn)
    results.push(...vaultChecks(conn, health, opts.maxClockSkewMs ?? FAIL_CLOCK_SKEW_MS))
    if (health.reachable) {
      let jwt: string | undefined
      if (opts.tokenFile) jwt = await readTokenFile(opts.tokenFile)
      else if (opts.tokenFromKubectl) {
        if (!opts.serviceAccount) throw new UsageError('--token-from-kubectl needs --service-account')
        jwt = await tokenFromKubectl(podNamespace ?? 'default', opts.serviceAccount, audience)
      }
      results.push(...(await authChecks(conn, authMount, role, jwt)))
    } else {
      results.push({
        id: 'auth.mount',
        title: `auth mount "${authMount}" exists`,
        status: 'skip',
        detail: 'Vault not reachable',
      })
      results.push({ id: 'auth.role', title: 'role exists', status: 'skip', detail: 'Vault not reachable' })
    }
  }
  results.push(...(await hmacChecks(config, undefined)))
  results.push(...(await rbacChecks(config)))
  return results
}

export function doctorExitCode(results: CheckResult[]): number {
  return results.some((r) => r.status === 'fail') ? EXIT.FAILED : EXIT.OK
}

export function renderDoctor(results: CheckResult[], s: Style): string {
  const mark: Record<CheckStatus, string> = {
    pass: s.green('✓ pass'),
    fail: s.red('✗ FAIL'),
    warn: s.yellow('! warn'),
    skip: s.dim('- skip'),
  }
  const lines: string[] = []
  for (const r of results) {
    lines.push(`${mark[r.status]}  ${s.bold(r.title)}  ${s.dim(`[${r.id}]`)}`)
    lines.push(`        ${r.detail}`)
    if (r.fix && (r.status === 'fail' || r.status === 'warn')) lines.push(`        ${s.yellow('fix:')} ${r.fix}`)
  }
  const count = (st: CheckStatus): number => results.filter((r) => r.status === st).length
  lines.push('')
  lines.push(`checks: ${count('pass')} pass, ${count('fail')} fail, ${count('warn')} warn, ${count('skip')} skip`)
  return lines.join('\n') + '\n'
}

export async function runDoctorCommand(
  opts: DoctorOptions,
  style: Style,
): Promise<{ exitCode: number; stdout: string }> {
  const results = await withProgress('checking', runDoctor(opts))
  const exitCode = doctorExitCode(results)
  if (opts.json) {
    return { exitCode, stdout: JSON.stringify({ ok: exitCode === EXIT.OK, checks: results }, null, 2) + '\n' }
  }
  return { exitCode, stdout: renderDoctor(results, style) }
}
