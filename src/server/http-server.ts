/**
 * The operations port (-health-addr, default :8080): probes and metrics.
 *
 *   GET /health/live   200 while the process (its event loop) answers at all
 *   GET /health/ready  200 when a real Version call over the provider socket
 *                      succeeds, 503 otherwise (socket gone, gRPC server stopped)
 *   GET /health/vault  Vault reachability (sys/health of -vault-addr) for people
 *                      and monitoring; never part of readiness, because a
 *                      provider made unready by a Vault outage would only hide
 *                      the real error from the pods' FailedMount events
 *   GET /metrics       Prometheus text format
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { healthAddrEnabled, parseListenAddress, type VaultDefaults } from '../config/config.js'
import type { ProviderMetrics } from '../observability/metrics.js'
import type { Logger } from '../observability/logger.js'
import { checkSocket, probeVaultHealth, type SocketCheck } from './health.js'
import type { ProxySettings } from '../vault/transport/proxy.js'
import { loadProviderClient, type ProviderProtos } from './proto.js'

export interface OpsHttpServerOptions {
  /** `host:port` as loadConfig checked it (-health-addr); '' or `off` disables the server. */
  address: string
  socketPath: string
  metrics?: ProviderMetrics
  logger: Logger
  /** The default Vault connection, for /health/vault (absent: the endpoint says so). */
  vault?: VaultDefaults
  /** The egress proxy environment (read at start), which /health/vault goes through like Mounts. */
  proxy?: ProxySettings
  /** Time limit of the readiness Version call. */
  readyTimeoutMs?: number
  /** The parsed services, shared with the gRPC server (parsed here when absent). */
  protos?: Pick<ProviderProtos, 'provider'>
}

export class OpsHttpServer {
  private readonly opts: OpsHttpServerOptions
  private server: http.Server | undefined
  private readyInFlight: Promise<SocketCheck> | undefined
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

  /** Concurrent probes share one Version call. */
  private ready(): Promise<SocketCheck> {
    if (!this.readyInFlight) {
      this.readyInFlight = checkSocket(this.opts.socketPath, this.opts.readyTimeoutMs ?? 3000, this.protos).finally(
        () => {
          this.readyInFlight = undefined
        },
      )
    }
    return this.readyInFlight
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const send = (status: number, type: string, body: string): void => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' })
      res.end(req.method === 'HEAD' ? undefined : body)
    }
    const json = (status: number, body: unknown): void =>
      send(status, 'application/json; charset=utf-8', JSON.stringify(body) + '\n')
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      json(405, { error: 'only GET and HEAD are served' })
      return
    }
    switch (url.pathname) {
      case '/health/live':
      case '/healthz':
        json(200, { status: 'ok' })
        return
      case '/health/ready': {
        const check = await this.ready()
        json(check.ok ? 200 : 503, {
          status: check.ok ? 'ok' : 'unavailable',
          socket: this.opts.socketPath,
          detail: check.detail,
        })
        return
      }
      case '/health/vault': {
        const address = this.opts.vault?.address
        if (!address || !this.opts.vault) {
          json(200, {
            status: 'unknown',
            detail: 'no default Vault address (-vault-addr); each SecretProviderClass names its own',
          })
          return
        }
        const h = await probeVaultHealth(
          { address, namespace: this.opts.vault.namespace, tls: this.opts.vault.tls },
          undefined,
          this.opts.proxy,
        )
        json(h.healthy ? 200 : 503, {
          status: h.healthy ? 'ok' : h.reachable ? 'degraded' : 'unreachable',
          address,
          detail: h.detail,
          httpStatus: h.status,
          sealed: h.sealed,
          standby: h.standby,
          version: h.version,
        })
        return
      }
      case '/metrics': {
        if (!this.opts.metrics) {
          json(404, { error: 'metrics are not enabled' })
          return
        }
        send(200, this.opts.metrics.contentType, await this.opts.metrics.render())
        return
      }
      default:
        json(404, { error: 'not found', endpoints: ['/health/live', '/health/ready', '/health/vault', '/metrics'] })
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
