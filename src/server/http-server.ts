/**
 * The operations port (-health-addr, default :8080): probes and metrics.
 *
 *   GET /health/live   200 while the process (its event loop) answers at all
 *   GET /health/ready  200 when a real Version call over the provider socket
 *                      succeeds, 503 otherwise (socket gone, gRPC server stopped)
 *   GET /health/vault  Vault reachability (sys/health of -vault-addr) for people
 *                      and monitoring, probed at most once per interval
 *                      (health-cache.ts); never part of readiness, because a
 *                      provider made unready by a Vault outage would only hide
 *                      the real error from the pods' FailedMount events
 *   GET /metrics       Prometheus text format
 *
 * Whoever reaches the port from elsewhere (a probe, a scraper, anything the
 * network lets through) gets the status alone; the socket path, the Vault
 * address and its version are shown only to a request on a loopback address
 * (a person on the node, `kubectl port-forward`).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { healthAddrEnabled, parseListenAddress } from '../config/config.js'
import type { ProviderMetrics } from '../observability/metrics.js'
import type { Logger } from '../observability/logger.js'
import type { Time } from '../util/time.js'
import type { VaultHealth } from '../vault/resilience/health-probe.js'
import { checkSocket, type SocketCheck } from './health.js'
import type { HealthCache } from './health-cache.js'
import { loadProviderClient, type ProviderProtos } from './proto.js'

export interface OpsHttpServerOptions {
  /** `host:port` as loadConfig checked it (-health-addr); '' or `off` disables the server. */
  address: string
  socketPath: string
  /** Other sockets the daemon serves (-endpoint may name several): ready only when each answers. */
  moreSocketPaths?: string[]
  metrics?: ProviderMetrics
  logger: Logger
  /** The default Vault's health (-vault-addr), probed at most once per interval; absent: no default address. */
  vaultHealth?: HealthCache
  /** The default Vault address, shown on loopback requests. */
  vaultAddress?: string
  /** Time limit of the readiness Version call. */
  readyTimeoutMs?: number
  /** The clock a /metrics rendering's age is measured by. */
  time: Pick<Time, 'now'>
  /** The parsed services, shared with the gRPC server (parsed here when absent). */
  protos?: Pick<ProviderProtos, 'provider'>
}

/** Whether a request came in on a loopback address: a person on the node, not the network. */
export function isLoopback(localAddress: string | undefined): boolean {
  if (localAddress === undefined) return false
  const v4 = localAddress.startsWith('::ffff:') ? localAddress.slice('::ffff:'.length) : localAddress
  return v4 === '::1' || v4.startsWith('127.')
}

function vaultStatus(h: VaultHealth): string {
  return h.healthy ? 'ok' : h.reachable ? 'degraded' : 'unreachable'
}

function vaultDetail(h: VaultHealth, address: string | undefined): Record<string, unknown> {
  return {
    status: vaultStatus(h),
    address,
    detail: h.detail,
    httpStatus: h.status,
    sealed: h.sealed,
    standby: h.standby,
    version: h.version,
  }
}

/** Prometheus scrapes every 15–60 s; a rendering this fresh serves every scrape in between. */
export const METRICS_RENDER_INTERVAL_MS = 1000
/** Renderings at most this often, changed series or not: a scrape shows Mounts this old at most. */
export const METRICS_MIN_RENDER_INTERVAL_MS = 100

export class OpsHttpServer {
  private readonly opts: OpsHttpServerOptions
  private server: http.Server | undefined
  private readyInFlight: Promise<SocketCheck> | undefined
  /** The last rendering of /metrics: scrapes within METRICS_RENDER_INTERVAL_MS of it get it again. */
  private lastMetrics: { at: number; changes: number; text: Promise<string> } | undefined
  /** Parsed once: the readiness probe calls every few seconds. */
  private readonly protos: Pick<ProviderProtos, 'provider'>

  constructor(opts: OpsHttpServerOptions) {
    this.opts = opts
    this.protos = opts.protos ?? { provider: loadProviderClient() }
  }

  get enabled(): boolean {
    return healthAddrEnabled(this.opts.address)
  }

  /** The bound port once started. */
  get port(): number | undefined {
    const addr = this.server?.address()
    return addr && typeof addr === 'object' ? (addr as AddressInfo).port : undefined
  }

  /**
   * The registry rendered at most once per METRICS_MIN_RENDER_INTERVAL_MS, and once per
   * METRICS_RENDER_INTERVAL_MS while the provider's own series stay the same, whatever the request
   * rate: each rendering holds the event loop that every namespace's Mounts share.
   */
  private renderMetrics(metrics: ProviderMetrics): Promise<string> {
    const now = this.opts.time.now()
    const last = this.lastMetrics
    const age = last === undefined ? Number.POSITIVE_INFINITY : now - last.at
    const changed = last === undefined || last.changes !== metrics.changes
    if (age >= METRICS_RENDER_INTERVAL_MS || (changed && age >= METRICS_MIN_RENDER_INTERVAL_MS)) {
      this.lastMetrics = { at: now, changes: metrics.changes, text: metrics.render() }
    }
    return this.lastMetrics!.text
  }

  /** Every socket answers Version (concurrent probes share one round of calls); the first failure says why. */
  private ready(): Promise<SocketCheck> {
    if (!this.readyInFlight) {
      const paths = [this.opts.socketPath, ...(this.opts.moreSocketPaths ?? [])]
      const timeoutMs = this.opts.readyTimeoutMs ?? 3000
      this.readyInFlight = Promise.all(paths.map((p) => checkSocket(p, timeoutMs, this.protos)))
        .then((checks) => checks.find((c) => !c.ok) ?? checks[0]!)
        .finally(() => {
          this.readyInFlight = undefined
        })
    }
    return this.readyInFlight
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const answer = await this.answer(req.method ?? 'GET', url.pathname, isLoopback(req.socket.localAddress))
    res.writeHead(answer.status, { 'content-type': answer.type, 'cache-control': 'no-store' })
    res.end(req.method === 'HEAD' ? undefined : answer.body)
  }

  /** The answer to `method path`; `local`: asked on a loopback address, where details are shown. */
  async answer(method: string, path: string, local: boolean): Promise<{ status: number; type: string; body: string }> {
    const json = (status: number, body: unknown): { status: number; type: string; body: string } => ({
      status,
      type: 'application/json; charset=utf-8',
      body: JSON.stringify(body) + '\n',
    })
    if (method !== 'GET' && method !== 'HEAD') return json(405, { error: 'only GET and HEAD are served' })
    switch (path) {
      case '/health/live':
      case '/healthz':
        return json(200, { status: 'ok' })
      case '/health/ready': {
        const check = await this.ready()
        const status = check.ok ? 'ok' : 'unavailable'
        return json(
          check.ok ? 200 : 503,
          local ? { status, socket: this.opts.socketPath, detail: check.detail } : { status },
        )
      }
      case '/health/vault': {
        if (!this.opts.vaultHealth) {
          return json(200, {
            status: 'unknown',
            detail: 'no default Vault address (-vault-addr); each SecretProviderClass names its own',
          })
        }
        const h = await this.opts.vaultHealth.get()
        return json(h.healthy ? 200 : 503, local ? vaultDetail(h, this.opts.vaultAddress) : { status: vaultStatus(h) })
      }
      case '/metrics':
        if (!this.opts.metrics) return json(404, { error: 'metrics are not enabled' })
        return { status: 200, type: this.opts.metrics.contentType, body: await this.renderMetrics(this.opts.metrics) }
      default:
        return json(404, {
          error: 'not found',
          endpoints: ['/health/live', '/health/ready', '/health/vault', '/metrics'],
        })
    }
  }

  /** Binds the port; resolves with it, or undefined when disabled. Rejects when the port cannot be bound. */
  async start(): Promise<number | undefined> {
    if (!this.enabled) return undefined
    const { host, port } = parseListenAddress(this.opts.address)
    const server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        this.opts.logger.error({ err }, 'health/metrics request failed')
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
    })
    // Probes must not keep idle connections that would delay shutdown.
    server.keepAliveTimeout = 5_000
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen({ host, port }, () => {
        server.off('error', reject)
        resolve()
      })
    })
    this.server = server
    this.opts.logger.info(
      { healthAddr: this.opts.address, port: this.port, metrics: this.opts.metrics !== undefined },
      'serving health and metrics over HTTP',
    )
    return this.port
  }

  async stop(): Promise<void> {
    const server = this.server
    if (!server) return
    this.server = undefined
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  }
}
