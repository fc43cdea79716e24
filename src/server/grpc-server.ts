/**
 * The gRPC adapter: serves v1alpha1.CSIDriverProvider (Version, Mount) on the
 * unix socket the driver dials, maps ProviderErrors to gRPC statuses, and
 * derives each Mount's deadline from the caller's.
 */
import path from 'node:path'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { ProviderError, toProviderError } from '../errors.js'
import type { MountService } from '../mount/service.js'
import type { Logger } from '../observability/logger.js'
import { PACKAGE_VERSION, PROTO_DIR, RUNTIME_NAME } from '../package-info.js'
import { Deadline } from '../util/deadline.js'
import { bindOwnerOnly, prepareSocketPath, removeOwnSocket } from './socket.js'

export const API_VERSION = 'v1alpha1'
/** Answer this long before the caller's deadline, so the error reaches kubelet instead of a bare timeout. */
export const DEADLINE_MARGIN_MS = 2_000
/** Requests are small (attributes); anything larger is not from the driver. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024

interface MountRequestMessage {
  attributes: string
  secrets: string
  target_path: string
  permission: string
}

export function loadProviderService(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync(path.join(PROTO_DIR, 'v1alpha1', 'service.proto'), {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  })
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    v1alpha1: { CSIDriverProvider: grpc.ServiceClientConstructor }
  }
  return pkg.v1alpha1.CSIDriverProvider.service
}

function callDeadline(call: grpc.ServerUnaryCall<unknown, unknown>, mountTimeoutMs: number): Deadline {
  const own = Deadline.in(mountTimeoutMs)
  const d = call.getDeadline()
  const ms = d instanceof Date ? d.getTime() : d
  if (!Number.isFinite(ms)) return own
  return new Deadline(Math.min(own.expiresAt, ms - DEADLINE_MARGIN_MS))
}

function toStatus(err: ProviderError): Partial<grpc.StatusObject> {
  return { code: err.grpcStatus, details: err.message }
}

export interface ProviderServerOptions {
  socketPath: string
  mountService: MountService
  mountTimeoutMs: number
  logger: Logger
}

export class ProviderServer {
  private readonly opts: ProviderServerOptions
  private readonly server: grpc.Server
  private socketInode: number | undefined
  private stopping = false

  constructor(opts: ProviderServerOptions) {
    this.opts = opts
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    })
    this.server.addService(loadProviderService(), {
      Version: this.version.bind(this),
      Mount: this.mount.bind(this),
    })
  }

  private version(
    _call: grpc.ServerUnaryCall<unknown, unknown>,
    callback: grpc.sendUnaryData<Record<string, string>>,
  ): void {
    callback(null, { version: API_VERSION, runtime_name: RUNTIME_NAME, runtime_version: PACKAGE_VERSION })
  }

  private mount(call: grpc.ServerUnaryCall<MountRequestMessage, unknown>, callback: grpc.sendUnaryData<unknown>): void {
    if (this.stopping) {
      callback(toStatus(new ProviderError('SHUTTING_DOWN', 'the provider is shutting down; the driver will retry')))
      return
    }
    const req = call.request
    const deadline = callDeadline(call, this.opts.mountTimeoutMs)
    this.opts.mountService
      .mount({ attributes: req.attributes, secrets: req.secrets, permission: req.permission }, deadline)
      .then(
        (result) => {
          callback(null, {
            object_version: result.objects.map((o) => ({ id: o.id, version: o.version })),
            files: result.objects.flatMap((o) =>
              o.files.map((f) => ({ path: f.path, mode: f.mode, contents: f.contents })),
            ),
          })
        },
        (err: unknown) => callback(toStatus(toProviderError(err))),
      )
  }

  async start(): Promise<void> {
    const { socketPath, logger } = this.opts
    const { removedStale } = await prepareSocketPath(socketPath)
    if (removedStale) logger.info({ socket: socketPath }, 'removed a stale socket file')
    this.socketInode = await bindOwnerOnly(
      socketPath,
      () =>
        new Promise<void>((resolve, reject) => {
          this.server.bindAsync(`unix:${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
            err ? reject(err) : resolve(),
          )
        }),
    )
    logger.info({ socket: socketPath, version: PACKAGE_VERSION }, 'serving the provider API')
  }

  /** Stops accepting calls, lets those in flight finish within `graceMs`, then cuts the rest. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true
    const graceful = new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()))
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), graceMs)
    })
    const outcome = await Promise.race([graceful.then(() => 'done' as const), timeout])
    clearTimeout(timer)
    if (outcome === 'timeout') {
      this.opts.logger.warn({ graceMs }, 'calls still in flight after the grace period; closing them')
      this.server.forceShutdown()
    }
    if (this.socketInode !== undefined) await removeOwnSocket(this.opts.socketPath, this.socketInode)
  }
}
