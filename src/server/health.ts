/**
 * Health, two ways:
 * - `grpc.health.v1.Health` on the provider socket, for gRPC probes and the
 *   CLI's `doctor` (Check only; Watch answers UNIMPLEMENTED);
 * - `checkSocket()`: a real `Version` call over the unix socket, which the
 *   HTTP `/health/ready` endpoint and the CLI use. It proves what the driver
 *   needs: the socket file exists, accepts a connection and answers the API.
 */
import http from 'node:http'
import https from 'node:https'
import * as grpc from '@grpc/grpc-js'
import type { VaultConnection } from '../request/types.js'
import { describeFailure } from '../vault/errors.js'
import { createTransport, destroyTransport, type Transport } from '../vault/transport.js'
import { grpcStatusName } from './grpc-status.js'
import { loadHealthClient, loadProtos, type ProviderProtos } from './proto.js'

export const HEALTH_SERVICE_NAME = 'grpc.health.v1.Health'
export const PROVIDER_SERVICE_NAME = 'v1alpha1.CSIDriverProvider'

export const SERVING_STATUS = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } as const
export type ServingStatusName = keyof typeof SERVING_STATUS

/** Whether the provider API is being served; flipped by the gRPC server on start and stop. */
export class HealthState {
  private serving = false

  set(serving: boolean): void {
    this.serving = serving
  }

  get isServing(): boolean {
    return this.serving
  }

  /** Status for a Check of `service` ("" = the server as a whole), or undefined for a service this server lacks. */
  statusOf(service: string): ServingStatusName | undefined {
    if (service !== '' && service !== PROVIDER_SERVICE_NAME && service !== HEALTH_SERVICE_NAME) return undefined
    return this.serving ? 'SERVING' : 'NOT_SERVING'
  }
}

export function loadHealthService(): grpc.ServiceDefinition {
  return loadHealthClient().service
}

/** Handlers for grpc.health.v1.Health over `state`. */
export function healthHandlers(state: HealthState): grpc.UntypedServiceImplementation {
  return {
    Check(
      call: grpc.ServerUnaryCall<{ service?: string }, unknown>,
      callback: grpc.sendUnaryData<{ status: ServingStatusName }>,
    ): void {
      const service = call.request.service ?? ''
      const status = state.statusOf(service)
      if (status === undefined) {
        callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${JSON.stringify(service.slice(0, 100))}` })
        return
      }
      callback(null, { status })
    },
    Watch(call: grpc.ServerWritableStream<unknown, unknown>): void {
      call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'Watch is not implemented; use Check' })
    },
  }
}

export interface SocketCheck {
  ok: boolean
  /** What was found, for people: the provider's version, or why the call failed. */
  detail: string
  runtimeName?: string
  runtimeVersion?: string
  durationMs: number
}

/** A client of `service` on the unix socket; the driver dials with :authority "localhost", so do the same. */
function socketClient(service: grpc.ServiceClientConstructor, socketPath: string): grpc.Client {
  return new service(`unix:${socketPath}`, grpc.credentials.createInsecure(), {
    'grpc.default_authority': 'localhost',
  })
}

/**
 * A real `Version` call over the unix socket, as the driver would make it. Never throws.
 * `protos`: the parsed services, for a caller that checks often (the readiness probe).
 */
export async function checkSocket(
  socketPath: string,
  timeoutMs = 3000,
  protos: Pick<ProviderProtos, 'provider'> = loadProtos(),
): Promise<SocketCheck> {
  const started = Date.now()
  const client = socketClient(protos.provider, socketPath)
  try {
    const res = await new Promise<{ version?: string; runtime_name?: string; runtime_version?: string }>(
      (resolve, reject) => {
        const version = (
          client as unknown as {
            Version(
              req: { version: string },
              options: grpc.CallOptions,
              cb: (err: grpc.ServiceError | null, res?: Record<string, string>) => void,
            ): void
          }
        ).Version.bind(client)
        version({ version: 'v1alpha1' }, { deadline: Date.now() + timeoutMs }, (err, r) =>
          err ? reject(err) : resolve(r ?? {}),
        )
      },
    )
    return {
      ok: true,
      detail: `answers Version: ${res.runtime_name ?? '?'} ${res.runtime_version ?? '?'} (API ${res.version ?? '?'})`,
      runtimeName: res.runtime_name,
      runtimeVersion: res.runtime_version,
      durationMs: Date.now() - started,
    }
  } catch (err) {
    const e = err as { code?: unknown; details?: unknown; message?: unknown }
    const code = typeof e.code === 'number' ? grpcStatusName(e.code) : 'error'
    const details = typeof e.details === 'string' && e.details !== '' ? e.details : String(e.message ?? err)
    return {
      ok: false,
      detail: `Version over ${socketPath} failed: ${code}: ${details}`,
      durationMs: Date.now() - started,
    }
  } finally {
    client.close()
  }
}

/** grpc.health.v1.Health/Check over the unix socket. Never throws. */
export async function checkGrpcHealth(
  socketPath: string,
  service = '',
  timeoutMs = 3000,
): Promise<{ ok: boolean; status: string }> {
  const client = socketClient(loadHealthClient(), socketPath)
  try {
    const status = await new Promise<string>((resolve, reject) => {
      const check = (
        client as unknown as {
          Check(
            req: { service: string },
            options: grpc.CallOptions,
            cb: (err: grpc.ServiceError | null, res?: { status?: string }) => void,
          ): void
        }
      ).Check.bind(client)
      check({ service }, { deadline: Date.now() + timeoutMs }, (err, r) =>
        err ? reject(err) : resolve(r?.status ?? 'UNKNOWN'),
      )
    })
    return { ok: status === 'SERVING', status }
  } catch (err) {
    const e = err as { code?: unknown; details?: unknown }
    const code = typeof e.code === 'number' ? grpcStatusName(e.code) : 'error'
    return { ok: false, status: `${code}${typeof e.details === 'string' ? `: ${e.details}` : ''}` }
  } finally {
    client.close()
  }
}

/** What Vault's unauthenticated `sys/health` says, as seen from this process with the given TLS settings. */
export interface VaultHealth {
  /** An HTTP answer came back (whatever its status). */
  reachable: boolean
  /** Active and unsealed (sys/health answered 200). */
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
  durationMs: number
}

/**
 * GET /v1/sys/health without a token through the same transport (TLS, CA,
 * SNI, unix socket) the provider uses for Mounts. Never throws.
 */
export async function probeVaultHealth(conn: VaultConnection, timeoutMs = 5000): Promise<VaultHealth> {
  const started = Date.now()
  let transport: Transport
  try {
    transport = await createTransport(conn)
  } catch (err) {
    return {
      reachable: false,
      healthy: false,
      detail: err instanceof Error ? err.message : String(err),
      durationMs: Date.now() - started,
    }
  }
  try {
    const url = new URL(`${transport.endpoint}/v1/sys/health`)
    const isHttps = url.protocol === 'https:'
    const requestFn = isHttps ? https.request : http.request
    const agent = isHttps ? transport.httpsAgent : transport.httpAgent
    const answer = await new Promise<{ status: number; body: string; date?: string; localAt: number }>(
      (resolve, reject) => {
        const req = requestFn(url, { method: 'GET', agent, timeout: timeoutMs }, (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: Buffer.concat(chunks)
                .toString('utf8')
                .slice(0, 64 * 1024),
              date: typeof res.headers.date === 'string' ? res.headers.date : undefined,
              localAt: Date.now(),
            }),
          )
          res.on('error', reject)
        })
        req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })))
        req.on('error', reject)
        req.end()
      },
    )
    let body: Record<string, unknown> = {}
    try {
      const parsed: unknown = JSON.parse(answer.body)
      if (parsed !== null && typeof parsed === 'object') body = parsed as Record<string, unknown>
    } catch {
      /* not JSON: keep the status only */
    }
    const bool = (k: string): boolean | undefined => (typeof body[k] === 'boolean' ? (body[k] as boolean) : undefined)
    let clockSkewMs: number | undefined
    const serverTime = typeof body.server_time_utc === 'number' ? body.server_time_utc * 1000 : undefined
    if (serverTime !== undefined) clockSkewMs = serverTime - answer.localAt
    else if (answer.date) clockSkewMs = Date.parse(answer.date) - answer.localAt
    if (clockSkewMs !== undefined && !Number.isFinite(clockSkewMs)) clockSkewMs = undefined
    const sealed = bool('sealed')
    const standby = bool('standby')
    return {
      reachable: true,
      healthy: answer.status === 200,
      status: answer.status,
      initialized: bool('initialized'),
      sealed,
      standby,
      performanceStandby: bool('performance_standby'),
      version: typeof body.version === 'string' ? body.version : undefined,
      clockSkewMs,
      detail: describeHealthStatus(answer.status),
      durationMs: Date.now() - started,
    }
  } catch (err) {
    const failure = describeFailure(err)
    const code = (err as { code?: unknown }).code
    return {
      reachable: false,
      healthy: false,
      detail: failure.detail,
      errorCode: typeof code === 'string' ? code : undefined,
      durationMs: Date.now() - started,
    }
  } finally {
    destroyTransport(transport)
  }
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
