// A Node gRPC client of the provider's own proto copy, configured like the
// driver's (waitForReady, retry UNAVAILABLE 3 times from 1 s, authority
// localhost) but without a process per call. For suites that need many
// Mounts quickly (soak, fuzz sample, handover on a long-lived connection);
// integration tests of behaviour use the driver's own client
// (driver-client.ts), which also checks the response and writes files.
import * as grpc from '@grpc/grpc-js'
import { loadProviderService } from '../../src/server/grpc-server.js'

const DRIVER_SERVICE_CONFIG = {
  methodConfig: [
    {
      name: [{ service: 'v1alpha1.CSIDriverProvider' }],
      waitForReady: true,
      retryPolicy: {
        maxAttempts: 3,
        initialBackoff: '1s',
        maxBackoff: '10s',
        backoffMultiplier: 1.1,
        retryableStatusCodes: ['UNAVAILABLE'],
      },
    },
  ],
}

export interface GrpcMountResult {
  ok: boolean
  /** gRPC status code name, 'OK' on success. */
  grpcCode: string
  message: string
  files: Array<{ path: string; mode: number; contents: Buffer }>
  objectVersions: Array<{ id: string; version: string }>
}

export interface ProviderGrpcClient {
  mount(
    req: { attributes: string; secrets?: string; permission?: string; targetPath?: string },
    timeoutMs?: number,
  ): Promise<GrpcMountResult>
  /** The driver's Version call: resolves once the provider answered, with its status. */
  version(timeoutMs?: number): Promise<{ ok: boolean; grpcCode: string; runtimeName: string }>
  close(): void
}

const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k])) as Record<number, string>

/** PascalCase like Go's codes.Code.String(): 'INVALID_ARGUMENT' -> 'InvalidArgument'. */
export function codeName(code: number): string {
  const raw = CODE_NAMES[code] ?? String(code)
  return raw
    .toLowerCase()
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')
}

export function connectProvider(socketPath: string, maxReceiveBytes = 4 * 1024 * 1024): ProviderGrpcClient {
  const Client = grpc.makeGenericClientConstructor(loadProviderService(), 'CSIDriverProvider')
  const client = new Client(`unix:${socketPath}`, grpc.credentials.createInsecure(), {
    'grpc.default_authority': 'localhost',
    'grpc.service_config': JSON.stringify(DRIVER_SERVICE_CONFIG),
    'grpc.max_receive_message_length': maxReceiveBytes,
  }) as unknown as grpc.Client & {
    Mount(
      req: unknown,
      opts: grpc.CallOptions,
      cb: (err: grpc.ServiceError | null, res?: Record<string, unknown>) => void,
    ): void
    Version(
      req: unknown,
      opts: grpc.CallOptions,
      cb: (err: grpc.ServiceError | null, res?: Record<string, unknown>) => void,
    ): void
  }
  return {
    mount(req, timeoutMs = 30_000) {
      return new Promise((resolve) => {
        client.Mount(
          {
            attributes: req.attributes,
            secrets: req.secrets ?? 'null',
            permission: req.permission ?? '420',
            target_path: req.targetPath ?? '/tmp/unused',
          },
          { deadline: Date.now() + timeoutMs },
          (err, res) => {
            if (err) {
              resolve({ ok: false, grpcCode: codeName(err.code), message: err.details, files: [], objectVersions: [] })
              return
            }
            resolve({
              ok: true,
              grpcCode: 'OK',
              message: '',
              files: (res?.files as GrpcMountResult['files']) ?? [],
              objectVersions: (res?.object_version as GrpcMountResult['objectVersions']) ?? [],
            })
          },
        )
      })
    },
    version(timeoutMs = 30_000) {
      return new Promise((resolve) => {
        client.Version({ version: 'v1alpha1' }, { deadline: Date.now() + timeoutMs }, (err, res) => {
          resolve(
            err
              ? { ok: false, grpcCode: codeName(err.code), runtimeName: '' }
              : { ok: true, grpcCode: 'OK', runtimeName: String(res?.runtime_name ?? '') },
          )
        })
      })
    },
    close() {
      client.close()
    },
  }
}
