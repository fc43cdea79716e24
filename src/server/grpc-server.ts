/**
 * The gRPC adapter: serves v1alpha1.CSIDriverProvider (Version, Mount) on the
 * unix socket the driver dials, maps ProviderErrors to gRPC statuses, and
 * derives each Mount's deadline from the caller's.
 */
import { randomBytes } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import { rename } from 'node:fs/promises'
import * as grpc from '@grpc/grpc-js'
import type { ProviderFlavour } from '../config/flavour.js'
import { ProviderError, toProviderError } from '../errors.js'
import type { MountService } from '../mount/service.js'
import type { Logger } from '../observability/logger.js'
import { PACKAGE_VERSION, RUNTIME_NAME } from '../package-info.js'
import { Deadline } from '../util/deadline.js'
import type { Time } from '../util/time.js'
import { grpcStatusOf } from './grpc-status.js'
import { HealthState, healthHandlers } from './health.js'
import { loadProtos, loadProviderClient, type ProviderProtos } from './proto.js'
import {
  bindOwnerOnly,
  inspectSocketPath,
  prepareSocketPath,
  privateSocketPath,
  removeOwnSocket,
  socketInodeAt,
} from './socket.js'

export const API_VERSION = 'v1alpha1'
/** Answer this long before the caller's deadline, so the error reaches kubelet instead of a bare timeout. */
export const DEADLINE_MARGIN_MS = 2_000
/** Requests are small (attributes); anything larger is not from the driver. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024
/**
 * Listeners one Mount's signal may carry at once: each of its Vault reads in flight
 * (MOUNT_FETCH_CONCURRENCY) waits on a shared read and perhaps a login, each listening. Node warns
 * of a leak past 10 by default; the count here is bounded by the Mount's own concurrency.
 */
export const MOUNT_SIGNAL_LISTENERS = 64

interface MountRequestMessage {
  attributes: string
  secrets: string
  target_path: string
  permission: string
}

export function loadProviderService(): grpc.ServiceDefinition {
  return loadProviderClient().service
}

/**
 * The Mount's deadline: the provider's own -mount-timeout or the caller's
 * deadline less a margin, whichever comes first; and a signal aborted when the
 * driver cancels the call (its own deadline, kubelet gave up), so that every
 * Vault and Kubernetes request of that Mount stops instead of running on for nobody.
 *
 * `answered()` detaches the signal before the answer is sent: grpc-js (1.14)
 * emits 'cancelled' once every call has ended, answered or not, and aborting a
 * finished Mount would build an Error and run the signal's listeners for nobody
 * on every call.
 */
function callDeadline(
  call: grpc.ServerUnaryCall<unknown, unknown>,
  mountTimeoutMs: number,
  time: Time,
): { deadline: Deadline; answered(): void } {
  const controller = new AbortController()
  setMaxListeners(MOUNT_SIGNAL_LISTENERS, controller.signal)
  const onCancelled = (): void => controller.abort(new Error('the driver cancelled the Mount call'))
  call.once('cancelled', onCancelled)
  const answered = (): void => {
    call.removeListener('cancelled', onCancelled)
  }
  const d = call.getDeadline()
  const ms = d instanceof Date ? d.getTime() : d
  const own = time.now() + mountTimeoutMs
  const expiresAt = Number.isFinite(ms) ? Math.min(own, ms - DEADLINE_MARGIN_MS) : own
  return { deadline: new Deadline(expiresAt, controller.signal, time), answered }
}

/** The one place a ProviderError becomes a gRPC status (the mapping: grpc-status.ts). */
function toStatus(err: ProviderError): Partial<grpc.StatusObject> {
  return { code: grpcStatusOf(err.code), details: err.message }
}

export interface ProviderServerOptions {
  socketPath: string
  /** Which provider the driver calls on this socket (its name: `vault.sock`, `openbao.sock`). */
  flavour?: ProviderFlavour
  mountService: MountService
  mountTimeoutMs: number
  logger: Logger
  /** The clock the Mount's deadline is set by. */
  time: Time
  /**
   * Called once another instance has taken over the socket path and every
   * call this one was serving has finished: the owner exits.
   */
  onReplaced?: () => void
  /** The parsed services, shared with the HTTP server's readiness probe (parsed here when absent). */
  protos?: ProviderProtos
}

/**
 * How often the socket path is checked for a successor (or for its disappearance). Each check wakes
 * the idle process on every node. Within a second is soon enough: until the old instance notices a
 * successor, new dials already reach the successor and calls on the old connections still succeed.
 */
export const HANDOVER_POLL_MS = 1000

export class ProviderServer {
  private readonly opts: ProviderServerOptions
  private readonly server: grpc.Server
  private socketInode: number | undefined
  private stopping = false
  private replaced = false
  /** Listeners bound so far (the first at start, more if the socket file had to be recreated). */
  private binds = 0
  private readonly instanceTag = randomBytes(3).toString('hex')
  private watchTimer: NodeJS.Timeout | undefined
  private checking: Promise<void> | undefined
  /** Set when another instance took the path over: settles once this one has drained. */
  private handOverDone: Promise<void> | undefined
  /** grpc.health.v1.Health on the same socket: SERVING between start() and stop(). */
  readonly health = new HealthState()

  constructor(opts: ProviderServerOptions) {
    this.opts = opts
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
      // Nothing serves or reads channelz here; left on, grpc-js keeps its call counters and traces on every Mount.
      'grpc.enable_channelz': 0,
    })
    const protos = opts.protos ?? loadProtos()
    this.server.addService(protos.provider.service, {
      Version: this.version.bind(this),
      Mount: this.mount.bind(this),
    })
    this.server.addService(protos.health.service, healthHandlers(this.health))
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
    const { deadline, answered } = callDeadline(call, this.opts.mountTimeoutMs, this.opts.time)
    this.opts.mountService
      .mount(
        { attributes: req.attributes, secrets: req.secrets, permission: req.permission },
        deadline,
        this.opts.flavour,
      )
      .then(
        (result) => {
          answered()
          // The Mount has checked its size against -max-response-size (src/mount/service.ts).
          callback(null, {
            object_version: result.objects.map((o) => ({ id: o.id, version: o.version })),
            files: result.objects.flatMap((o) =>
              o.files.map((f) => ({ path: f.path, mode: f.mode, contents: f.contents })),
            ),
          })
        },
        (err: unknown) => {
          answered()
          callback(toStatus(toProviderError(err)))
        },
      )
  }

  /**
   * Binds the socket. A socket already at the path (a running instance during
   * an upgrade, or a stale file after kill -9) is replaced atomically: bind a
   * private path, then rename it over the public one, so the driver's next
   * dial reaches this instance and no dial ever finds the path missing. The
   * previous instance notices (watchSocket) and drains.
   */
  async start(): Promise<void> {
    const { socketPath, logger } = this.opts
    const previous = await inspectSocketPath(socketPath)
    await this.bindPublicPath()
    if (previous.state === 'stale')
      logger.info({ socket: socketPath, why: previous.why }, 'removed a stale socket file')
    if (previous.state === 'live') {
      logger.info(
        { socket: socketPath },
        'took over the socket from a running instance; it finishes its calls and exits',
      )
    }
    this.health.set(true)
    this.watchSocket()
    logger.info({ socket: socketPath, version: PACKAGE_VERSION }, 'serving the provider API')
  }

  /** Binds a private name and renames it over the public path (see start()). */
  private async bindPublicPath(): Promise<void> {
    const { socketPath } = this.opts
    const bind = (p: string) => () =>
      new Promise<void>((resolve, reject) => {
        this.server.bindAsync(`unix:${p}`, grpc.ServerCredentials.createInsecure(), (err) =>
          err ? reject(err) : resolve(),
        )
      })
    this.binds += 1
    // pid alone is not unique: two pods on a node may both run as pid 1 in their own namespaces.
    const privatePath = privateSocketPath(socketPath, `${process.pid}-${this.instanceTag}.${this.binds}`)
    if (privatePath === undefined) {
      // Too long for a sibling name: unlink and bind (a short gap without a socket).
      await prepareSocketPath(socketPath)
      this.socketInode = await bindOwnerOnly(socketPath, bind(socketPath))
    } else {
      await prepareSocketPath(privatePath)
      this.socketInode = await bindOwnerOnly(privatePath, bind(privatePath))
      await rename(privatePath, socketPath)
    }
  }

  /**
   * Polls the socket path: once it holds another instance's socket, hand
   * over. If the path is gone (removed by hand, or by an older instance's
   * shutdown: a listener bound directly at the path unlinks it on close), bind
   * it again, so the driver can still reach this instance.
   */
  private watchSocket(): void {
    this.watchTimer = setInterval(() => void this.checkSocket(), HANDOVER_POLL_MS)
    this.watchTimer.unref()
  }

  /** One check of the socket path (the poll's, or one a successor asked for); one at a time. */
  private checkSocket(): Promise<void> {
    this.checking ??= socketInodeAt(this.opts.socketPath)
      .then(async (ino) => {
        if (this.stopping || this.replaced || this.socketInode === undefined) return
        if (ino !== undefined && ino !== this.socketInode) {
          this.handOverDone = this.handOver()
          return
        }
        if (ino === undefined) {
          this.opts.logger.warn({ socket: this.opts.socketPath }, 'the socket file disappeared; binding it again')
          await this.bindPublicPath()
        }
      })
      .catch((err: unknown) => this.opts.logger.error({ err }, 'cannot bind the socket again'))
      .finally(() => {
        this.checking = undefined
      })
    return this.checking
  }

  /**
   * A successor says it has taken over the socket path (src/handover/): check now instead of at
   * the next poll. True once this instance has handed the socket over and finished its calls;
   * false while the path is still its own.
   */
  async checkReplaced(): Promise<boolean> {
    await this.checkSocket()
    if (this.handOverDone === undefined) return false
    await this.handOverDone
    return true
  }

  /**
   * Another instance owns the path now. Send GOAWAY on every connection (the
   * driver's client re-dials the path, reaching the new instance), keep
   * serving the calls already here, then tell the owner to exit.
   */
  private async handOver(): Promise<void> {
    this.replaced = true
    clearInterval(this.watchTimer)
    const { logger, mountService } = this.opts
    logger.info(
      { inFlight: mountService.mountsInFlight },
      'another instance took over the socket: finishing the calls in flight, then exiting',
    )
    this.health.set(false)
    await this.drain(this.opts.mountTimeoutMs + DEADLINE_MARGIN_MS)
    logger.info('handover complete')
    this.opts.onReplaced?.()
  }

  private async drain(graceMs: number): Promise<void> {
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
  }

  /** Stops accepting calls, lets those in flight finish within `graceMs`, then cuts the rest. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true
    clearInterval(this.watchTimer)
    this.health.set(false)
    await this.drain(graceMs)
    if (this.socketInode !== undefined) await removeOwnSocket(this.opts.socketPath, this.socketInode)
  }
}
