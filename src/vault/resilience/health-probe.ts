/**
 * The one Vault health probe: GET /v1/sys/health, without a token, through a
 * Vault transport (same TLS, CA, SNI, unix socket and connection checks as
 * Mounts). Used by the breaker (is an address back?), /health/vault and
 * `doctor`, which used to disagree.
 *
 * What counts as healthy, and why:
 * - The query asks standbys to answer 200 (`standbyok`, `perfstandbyok`):
 *   a standby serves Mounts (it forwards to the active node, and the
 *   provider never follows redirects, so forwarding is the set-up that
 *   works), so for a provider it is as good as the active node. Without the
 *   query the same node answers 429 / 473, which also count as healthy, so
 *   a proxy that strips the query does not change the verdict.
 * - 472 (disaster-recovery secondary) does not serve client requests: not
 *   healthy. 503 is sealed; 501 not initialised.
 * - No X-Vault-Namespace header: sys/health belongs to the root namespace,
 *   and a Mount's namespace says nothing about whether the server is up.
 * - A TLS failure is reported as such (errorKind 'tls'): the server answered
 *   the connection, so the breaker does not treat it as down.
 */
import type { CancelSignal } from '../../util/cancellation.js'
import { VaultConnectionError, type ConnectionFailureKind } from '../transport/call-errors.js'
import { describeFailure } from '../failure-to-error.js'
import { MAX_ERROR_BODY_BYTES, type VaultTransport } from '../transport/transport.js'

export const HEALTH_PATH = 'sys/health?standbyok=true&perfstandbyok=true'
const HEALTHY_STATUSES: ReadonlySet<number> = new Set([200, 429, 473])

/** What Vault's unauthenticated `sys/health` says, as seen from this process with the given TLS settings. */
export interface VaultHealth {
  /** An HTTP answer came back (whatever its status). */
  reachable: boolean
  /** Unsealed and serving requests: active, standby or performance standby (see above). */
  healthy: boolean
  status?: number
  initialized?: boolean
  sealed?: boolean
  standby?: boolean
  performanceStandby?: boolean
  version?: string
  /** Vault's clock minus ours, in ms (positive: Vault is ahead); from server_time_utc, else the Date header. */
  clockSkewMs?: number
  /** Why it was not reachable (connection, TLS or configuration problem), or a summary of the answer. */
  detail: string
  /** The socket/TLS error code when not reachable (e.g. SELF_SIGNED_CERT_IN_CHAIN, ECONNREFUSED). */
  errorCode?: string
  /** The kind of connection failure when not reachable. */
  errorKind?: ConnectionFailureKind
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

/** Never throws: every failure is a VaultHealth that says what went wrong. `now` is injected by tests. */
export async function probeVaultHealth(
  transport: VaultTransport,
  timeoutMs: number,
  cancel?: CancelSignal,
  now: () => number = Date.now,
): Promise<VaultHealth> {
  const started = now()
  try {
    const answer = await transport.call({
      method: 'GET',
      path: HEALTH_PATH,
      timeoutMs,
      cancel,
      anyStatus: true,
      maxResponseBytes: MAX_ERROR_BODY_BYTES,
      operation: 'health',
    })
    const localAt = now()
    const body: Record<string, unknown> =
      answer.body !== null && typeof answer.body === 'object' ? (answer.body as Record<string, unknown>) : {}
    const bool = (k: string): boolean | undefined => (typeof body[k] === 'boolean' ? (body[k] as boolean) : undefined)
    let clockSkewMs: number | undefined
    const serverTime = typeof body.server_time_utc === 'number' ? body.server_time_utc * 1000 : undefined
    if (serverTime !== undefined) clockSkewMs = serverTime - localAt
    else if (answer.date) clockSkewMs = Date.parse(answer.date) - localAt
    if (clockSkewMs !== undefined && !Number.isFinite(clockSkewMs)) clockSkewMs = undefined
    const standby = bool('standby')
    const performanceStandby = bool('performance_standby')
    // With standbyok the status of a standby is 200: the body says what the node is.
    const detail =
      answer.status === 200 && performanceStandby === true
        ? describeHealthStatus(473)
        : answer.status === 200 && standby === true
          ? describeHealthStatus(429)
          : describeHealthStatus(answer.status)
    return {
      reachable: true,
      healthy: HEALTHY_STATUSES.has(answer.status),
      status: answer.status,
      initialized: bool('initialized'),
      sealed: bool('sealed'),
      standby,
      performanceStandby,
      version: typeof body.version === 'string' ? body.version : undefined,
      clockSkewMs,
      detail,
      durationMs: now() - started,
    }
  } catch (err) {
    const failure = describeFailure(err)
    return {
      reachable: false,
      healthy: false,
      detail: err instanceof VaultConnectionError || !(err instanceof Error) ? failure.detail : err.message,
      errorCode: err instanceof VaultConnectionError ? err.code : undefined,
      errorKind: err instanceof VaultConnectionError ? err.kind : undefined,
      durationMs: now() - started,
    }
  }
}
