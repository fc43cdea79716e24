/**
 * The one Vault health probe: node-vault's health() (GET /v1/sys/health,
 * without a token) through a Vault transport (same TLS, CA, SNI, unix socket
 * and connection checks as Mounts). Used by the breaker (is an address
 * back?), /health/vault and `doctor`, which used to disagree.
 *
 * What counts as healthy, and why:
 * - A standby serves Mounts: it forwards what it does not answer itself to
 *   the active node. Since OpenBao 2.5 it answers reads from its own copy,
 *   which may lag the active node by a fraction of a second, unless the read
 *   is strong (transport/consistency.ts). It says nothing of an election:
 *   a standby answers sys/health the same while its cluster has no leader.
 * - A disaster-recovery secondary does not serve client requests: not
 *   healthy. Neither does a sealed or uninitialised server.
 * - No X-Vault-Namespace header: sys/health belongs to the root namespace,
 *   and a Mount's namespace says nothing about whether the server is up.
 * - A TLS failure is reported as such (errorKind 'tls'): the server answered
 *   the connection, so the breaker does not treat it as down.
 *
 * node-vault's health() resolves with the answer's body whatever its status,
 * so the verdict is read from the body, which states the server's condition.
 */
import type { VaultConnection } from '../../request/types.js'
import type { Time } from '../../util/time.js'
import { VaultConnectionError, type ConnectionFailureKind } from '../transport/call-errors.js'
import { codeAtProxy, ProxyConnectionError } from '../transport/proxy-connection.js'
import { PROVIDER_TENANT, type TransportRegistry } from '../transport/registry.js'
import { MAX_ERROR_BODY_BYTES, type VaultCaller } from '../transport/transport.js'
import { describeFailure } from '../failure-to-error.js'
import { callOptions, createVaultClient } from '../vault-client.js'
import type { ProbeOutcome, Prober } from './breaker.js'

/** What Vault's unauthenticated `sys/health` says, as seen from this process with the given TLS settings. */
export interface VaultHealth {
  /** An HTTP answer came back (whatever its status). */
  reachable: boolean
  /** Unsealed and serving requests: active, standby or performance standby (see above). */
  healthy: boolean
  /**
   * The status sys/health gives this condition when standbys are asked to answer 200
   * (`standbyok`, `perfstandbyok`): 200, 472, 501 or 503; undefined when the answer is not
   * Vault's health status.
   */
  status?: number
  initialized?: boolean
  sealed?: boolean
  standby?: boolean
  performanceStandby?: boolean
  version?: string
  /** Vault's clock minus ours, in ms (positive: Vault is ahead), from server_time_utc. */
  clockSkewMs?: number
  /** Why it was not reachable (connection, TLS or configuration problem), or a summary of the answer. */
  detail: string
  /** The socket/TLS error code when not reachable (e.g. SELF_SIGNED_CERT_IN_CHAIN, ECONNREFUSED). */
  errorCode?: string
  /** The kind of connection failure when not reachable. */
  errorKind?: ConnectionFailureKind
  /** The egress proxy (scheme://host:port) when the failure was the proxy's own (proxy-failures.ts). */
  proxy?: string
  durationMs: number
}

/** The meaning of sys/health's status codes. */
export function describeHealthStatus(status: number): string {
  switch (status) {
    case 200:
      return 'initialized, unsealed and active'
    case 429:
      return 'unsealed standby node'
    case 472:
      return 'disaster-recovery secondary'
    case 473:
      return 'performance standby node'
    case 501:
      return 'not initialized'
    case 503:
      return 'sealed'
    default:
      return `unexpected HTTP status ${status}`
  }
}

/** The condition a health body states, as sys/health's status with standbys answering 200. */
function statusOfBody(body: Record<string, unknown>): number | undefined {
  if (typeof body.initialized !== 'boolean' || typeof body.sealed !== 'boolean') return undefined
  if (!body.initialized) return 501
  if (body.sealed) return 503
  if (body.replication_dr_mode === 'secondary') return 472
  return 200
}

/**
 * Never throws: every failure is a VaultHealth that says what went wrong. `freshConnection`: over a
 * connection of its own (a breaker's probe, fresh-connection.ts).
 */
export async function probeVaultHealth(
  transport: VaultCaller,
  timeoutMs: number,
  time: Pick<Time, 'now'>,
  freshConnection = false,
): Promise<VaultHealth> {
  const started = time.now()
  const client = createVaultClient(transport, PROVIDER_TENANT, true)
  try {
    const answer: unknown = await client.health({
      standbyok: true,
      requestOptions: callOptions(timeoutMs, undefined, '', MAX_ERROR_BODY_BYTES, {
        freshConnection,
      }),
    })
    const localAt = time.now()
    const body: Record<string, unknown> =
      answer !== null && typeof answer === 'object' ? (answer as Record<string, unknown>) : {}
    const bool = (k: string): boolean | undefined => (typeof body[k] === 'boolean' ? (body[k] as boolean) : undefined)
    const serverTime = typeof body.server_time_utc === 'number' ? body.server_time_utc * 1000 : undefined
    const clockSkewMs = serverTime !== undefined && Number.isFinite(serverTime) ? serverTime - localAt : undefined
    const standby = bool('standby')
    const performanceStandby = bool('performance_standby')
    const status = statusOfBody(body)
    const detail =
      status === undefined
        ? "the answer is not Vault's health status"
        : status === 200 && performanceStandby === true
          ? describeHealthStatus(473)
          : status === 200 && standby === true
            ? describeHealthStatus(429)
            : describeHealthStatus(status)
    return {
      reachable: true,
      healthy: status === 200,
      status,
      initialized: bool('initialized'),
      sealed: bool('sealed'),
      standby,
      performanceStandby,
      version: typeof body.version === 'string' ? body.version : undefined,
      clockSkewMs,
      detail,
      durationMs: time.now() - started,
    }
  } catch (err) {
    const failure = describeFailure(err)
    return {
      reachable: false,
      healthy: false,
      detail: err instanceof VaultConnectionError || !(err instanceof Error) ? failure.detail : err.message,
      errorCode: err instanceof VaultConnectionError ? err.code : undefined,
      errorKind: err instanceof VaultConnectionError ? err.kind : undefined,
      proxy: err instanceof ProxyConnectionError && err.atProxy ? err.proxy : undefined,
      durationMs: time.now() - started,
    }
  }
}

/**
 * The breaker's prober (breaker.ts): the one health probe with the provider's own settings for an
 * address, never a Mount's, each over a new connection of its own (breaker.ts asks several at once:
 * behind a Service, each may reach another node). -vault-addr through its shared transport with
 * the operator's TLS (`own`), so that its probes are reported like any call; any other address over
 * a transport built for the occasion from the registry's options (its egress proxy, allow-list,
 * caps and observer) and no TLS files.
 */
export function providerProber(
  transports: Pick<TransportRegistry, 'get' | 'oneOff'>,
  own: VaultConnection,
  time: Pick<Time, 'now'>,
): Prober {
  return async (address, timeoutMs) => {
    if (address === own.address) {
      const transport = await transports.get(own, PROVIDER_TENANT)
      return probeOutcome(await probeVaultHealth(transport, timeoutMs, time, true))
    }
    let transport
    try {
      transport = await transports.oneOff({ address, tls: { skipVerify: false } })
    } catch {
      // Unreadable TLS files: a configuration problem, not an outage.
      return { healthy: true }
    }
    try {
      return probeOutcome(await probeVaultHealth(transport, timeoutMs, time))
    } finally {
      await transport.close()
    }
  }
}

/** The breaker's reading of a health answer. */
export function probeOutcome(h: VaultHealth): ProbeOutcome {
  if (h.healthy) return { healthy: true }
  if (h.reachable) {
    if (h.status === 503) return { healthy: false, sealed: true, cause: 'Vault is sealed (503)' }
    const answer = h.status === undefined ? h.detail : `answered ${h.status}`
    return { healthy: false, sealed: false, cause: `sys/health ${answer}` }
  }
  if (h.errorKind === 'timeout') return { healthy: false, sealed: false, cause: 'no answer in time' }
  // A TLS or other configuration error: Vault answered the connection, so it is not down.
  if (h.errorKind === undefined || h.errorKind === 'tls' || h.errorKind === 'other') return { healthy: true }
  const code = h.errorCode ?? 'error'
  return { healthy: false, sealed: false, cause: `connection failed (${h.proxy ? codeAtProxy(code, h.proxy) : code})` }
}
