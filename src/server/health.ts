/**
 * Health, two ways:
 * - `grpc.health.v1.Health` on the provider socket, for gRPC probes and the
 *   CLI's `doctor` (Check only; Watch answers UNIMPLEMENTED);
 * - `checkSocket()`: a real `Version` call over the unix socket, which the
 *   HTTP `/health/ready` endpoint and the CLI use. It proves what the driver
 *   needs: the socket file exists, accepts a connection and answers the API.
 */
import * as grpc from '@grpc/grpc-js'
import type { VaultConnection } from '../request/types.js'
import { DEFAULT_MAX_VAULT_RESPONSE_BYTES } from '../config/config.js'
import { probeVaultHealth as probe, type VaultHealth } from '../vault/resilience/health-probe.js'
import { defaultTransportOptions, VaultTransport } from '../vault/transport/transport.js'
import type { ProxySettings } from '../vault/transport/proxy.js'
import { grpcStatusName } from './grpc-status.js'
import { loadHealthClient, loadProtos, type ProviderProtos } from './proto.js'

export { describeHealthStatus, type VaultHealth } from '../vault/resilience/health-probe.js'

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
    // A client per check (the readiness probe's every few seconds): no channelz registration for each.
    'grpc.enable_channelz': 0,
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

/**
 * GET /v1/sys/health without a token through a Vault transport (TLS, CA,
 * SNI, unix socket, egress proxy), with the one probe the breaker and `doctor` use
 * (vault/health-probe.ts, where what counts as healthy is explained).
 * Never throws.
 */
export async function probeVaultHealth(
  conn: VaultConnection,
  timeoutMs = 5000,
  proxy?: ProxySettings,
): Promise<VaultHealth> {
  const started = Date.now()
  let transport: VaultTransport
  try {
    transport = await VaultTransport.create(conn, {
      ...defaultTransportOptions(DEFAULT_MAX_VAULT_RESPONSE_BYTES),
      proxy,
    })
  } catch (err) {
    return {
      reachable: false,
      healthy: false,
      detail: err instanceof Error ? err.message : String(err),
      durationMs: Date.now() - started,
    }
  }
  try {
    return await probe(transport, timeoutMs)
  } finally {
    await transport.close()
  }
}
