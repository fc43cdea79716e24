/**
 * The composition root: builds every piece from the configuration and wires
 * them by injection. The only module that knows all the others. Two builders:
 * buildMountService (the Mount use case and what it owns; the daemon, the
 * CLI's in-process mount and the soak test all use it) and buildProvider (the
 * daemon: that service behind the gRPC adapter and the HTTP server).
 */
import { stat } from 'node:fs/promises'
import { Counter, Gauge } from 'prom-client'
import type { ProviderConfig } from './config/config.js'
import type { VaultConnection } from './request/types.js'
import { normaliseAuthMount, normaliseVaultAddress } from './config/vault-address.js'
import { StateHandover } from './handover/handover.js'
import type { HandoverSettings } from './handover/wire.js'
import { ephemeralKey, fileKey, kubernetesSecretKey, mountedFileKey, type HmacKeySource } from './hmac/hmac-key.js'
import { KubeClient } from './kube/client.js'
import { NodeBudget } from './mount/budget.js'
import { RememberedRefusals } from './mount/refusals.js'
import { RenderTurns } from './mount/render-turns.js'
import { MountService } from './mount/service.js'
import type { Logger } from './observability/logger.js'
import { ProviderMetrics } from './observability/metrics.js'
import { combineObservers, type VaultObserver } from './observability/vault-observer.js'
import { ObjectsCache } from './request/objects-cache.js'
import { ProviderServer } from './server/grpc-server.js'
import { mountStatusName } from './server/grpc-status.js'
import { HealthCache } from './server/health-cache.js'
import { OpsHttpServer } from './server/http-server.js'
import { loadProtos } from './server/proto.js'
import { systemTime, type Time } from './util/time.js'
import { AddressAllowlist } from './vault/transport/address-allowlist.js'
import { BreakerRegistry } from './vault/resilience/breaker.js'
import { probeVaultHealth, providerProber } from './vault/resilience/health-probe.js'
import { SessionPool } from './vault/sessions/pool.js'
import { PROVIDER_TENANT, TransportRegistry, type TransportSource } from './vault/transport/registry.js'
import { anyProxy, describeProxySettings, readProxySettings, type ProxySettings } from './vault/transport/proxy.js'
import { SecureContexts } from './vault/transport/secure-contexts.js'
import { NO_OBSERVER } from './vault/transport/transport.js'

export interface Provider {
  mountService: MountService
  /** The server of the first socket (-endpoint). */
  server: ProviderServer
  /** One per socket -endpoint names, the first included. */
  servers: ProviderServer[]
  /** -health-addr: probes and /metrics; started by the caller (main.ts), stopped by close(). */
  http: OpsHttpServer
  metrics: ProviderMetrics | undefined
  hmacKey: HmacKeySource
  /** -state-handover: the predecessor's state at start, this process's for a successor; undefined when off. */
  handover: StateHandover | undefined
  close(graceMs: number): Promise<void>
}

export interface BuildOptions {
  /** Another listener for Vault calls besides the metrics (the CLI's per-call timings). */
  vaultObserver?: VaultObserver
  /** false: no Prometheus registry (the CLI's in-process mount). Default true. */
  metrics?: boolean
}

async function chooseHmacKey(
  config: ProviderConfig,
  kube: KubeClient | undefined,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  time: Time,
): Promise<HmacKeySource> {
  // Beside the Sync Controller the key is a mounted Secret file (config.ts requires it), read now: a
  // start without it fails instead of every sync.
  if (config.mode === 'sync-controller' && config.hmacKeyFile) {
    const key = mountedFileKey(config.hmacKeyFile, time)
    await key.get()
    return key
  }
  if (config.hmacKeyFile) return fileKey(config.hmacKeyFile, time)
  if (kube) return kubernetesSecretKey(kube, await kube.ownNamespace(env), config.hmacSecretName, time)
  logger.warn(
    'no Kubernetes API and no -hmac-key-file: object versions use a key that lives only as long as this process',
  )
  return ephemeralKey()
}

/**
 * The allow-list's state as metrics: a gauge (1 = -vault-addr-allowlist set)
 * and a counter of Mounts that went through only because none is set.
 * Returns the counter's increment for AddressAllowlist.
 */
function allowlistMetrics(metrics: ProviderMetrics, enabled: boolean): () => void {
  const gauge = new Gauge({
    name: 'vault_csi_provider_vault_address_allowlist_enabled',
    help: '1 when -vault-addr-allowlist restricts the Vault addresses Mounts may use, 0 when any address is allowed',
    registers: [metrics.registry],
  })
  gauge.set(enabled ? 1 : 0)
  const unrestricted = new Counter({
    name: 'vault_csi_provider_unrestricted_address_mounts_total',
    help: 'Mounts whose Vault address was not checked because -vault-addr-allowlist is not set',
    registers: [metrics.registry],
  })
  // Created now so that it reads 0 before the first Mount.
  unrestricted.inc(0)
  return () => unrestricted.inc()
}

/** The provider's own connection to the default Vault (-vault-addr with the operator's TLS), for its probes. */
export function providerConnection(config: ProviderConfig): VaultConnection {
  return { address: config.vault.address ?? '', tls: config.vault.tls }
}

/**
 * The egress proxy variables (src/vault/transport/proxy.ts), with one log line saying which are in
 * force (proxies as scheme://host:port, never their credentials). A value that is not a usable proxy
 * URL stops the start: every Mount through it would fail.
 */
function readEgressProxy(env: NodeJS.ProcessEnv, logger: Logger): ProxySettings {
  const proxy = readProxySettings(env)
  if (anyProxy(proxy)) {
    logger.info(
      { proxy: describeProxySettings(proxy) },
      'Vault addresses are reached through an egress proxy where the environment says so',
    )
  }
  if (proxy.cgi && proxy.http && !proxy.vaultApi) {
    logger.warn(
      { variable: proxy.http.variable },
      'REQUEST_METHOD is set: HTTP_PROXY is refused for http:// Vault addresses, as Go does for CGI processes; unset REQUEST_METHOD',
    )
  }
  return proxy
}

/** What every Vault transport of a process goes through and reports to. */
export interface VaultReach {
  /** The egress proxy environment, read once (readProxySettings). */
  proxy: ProxySettings
  /** -vault-addr-allowlist, checked on every connection. */
  allowlist: AddressAllowlist
  /** Told about every Vault call (NO_OBSERVER where nobody listens). */
  observer: VaultObserver
  /** Where a transport's one warning goes (an index format strong reads cannot use); none: not logged. */
  logger?: Logger
}

/**
 * The Vault transports of a process: one registry of connection pools with the flags' limits and
 * `reach`, and the TLS contexts they share. Every transport comes from here: the daemon's (Mounts,
 * the breaker's probes, /health/vault), the CLI's in-process Mounts and `doctor`'s.
 */
export function buildVaultTransports(config: ProviderConfig, reach: VaultReach): TransportRegistry {
  return new TransportRegistry(
    {
      maxTlsFileBytes: config.limits.maxTlsFileBytes,
      tlsFileDirs: config.limits.tlsFileDirs,
      operatorTls: config.vault.tls,
      allowlist: reach.allowlist,
      maxResponseBytes: config.limits.maxVaultResponseBytes,
      observer: reach.observer,
      idleConnectionMs: config.vaultIdleConnectionMs,
      proxy: reach.proxy,
      logger: reach.logger,
      // A standby's redirect is followed only where the operator named the addresses a token may go.
      redirectTargets: reach.allowlist.allowsAny ? undefined : reach.allowlist,
    },
    new SecureContexts(),
  )
}

/** How often a replaced instance checks that its successor still holds the socket. */
export const STANDBY_POLL_MS = 1000

/**
 * After a handover: serve nothing, wait for SIGTERM. If the successor's socket
 * disappears (it was stopped, e.g. a rollback), exit non-zero so that kubelet
 * restarts this container and the fresh process binds the path again.
 */
function standBy(socketPath: string, logger: Logger): void {
  logger.info({ socket: socketPath }, 'standing by until this pod is stopped')
  const timer = setInterval(() => {
    stat(socketPath).catch(() => {
      logger.warn({ socket: socketPath }, 'the socket of the instance that replaced this one is gone; restarting')
      process.exit(1)
    })
  }, STANDBY_POLL_MS)
  // Keeps the process alive: nothing else may, once the gRPC server is shut down.
  void timer
}

/** The Mount use case and everything it owns, as the daemon, the CLI and the soak test build it. */
export interface MountServiceParts {
  mountService: MountService
  /** undefined with `metrics: false`. */
  metrics: ProviderMetrics | undefined
  hmacKey: HmacKeySource
  kube: KubeClient | undefined
  pool: SessionPool
  breakers: BreakerRegistry
  /** The Vault connection pools, shared by the sessions and the provider's own probes. */
  transports: TransportRegistry
  /** The egress proxy environment the Vault transports use (read once, here). */
  proxy: ProxySettings
  allowlist: AddressAllowlist
  /** The clock and timers every part was given. */
  time: Time
  /** Stops the breakers' probes, drops the sessions, closes the Vault transports and the Kubernetes client. */
  close(): void
}

/** What wireMountService puts together: the parts built by buildMountService (or a bench's stand-ins). */
export interface MountServiceWiring {
  logger: Logger
  observer: VaultObserver | undefined
  metrics: ProviderMetrics | undefined
  transports: TransportSource
  breakers: BreakerRegistry
  kube: KubeClient | undefined
  hmacKey: HmacKeySource
  allowlist: AddressAllowlist
  time: Time
}

/**
 * The session pool and the Mount service over given parts, with the flags' settings and bounds: one
 * place for this wiring, used by buildMountService and by bench/mount-path.ts (over a fake Vault).
 */
export function wireMountService(
  config: ProviderConfig,
  w: MountServiceWiring,
): { pool: SessionPool; mountService: MountService } {
  const pool = new SessionPool({
    maxSessions: config.cacheSize,
    scope: config.identityScope,
    staticFreshnessMs: config.staticFreshnessMs,
    shareDynamic: config.shareDynamicSecrets,
    idleRevokeMs: config.identityIdleMs,
    logger: w.logger,
    observer: w.observer,
    transports: w.transports,
    breakers: w.breakers,
    time: w.time,
  })
  const mountService = new MountService({
    pool,
    kube: w.kube,
    hmacKey: w.hmacKey,
    logger: w.logger,
    vaultDefaults: config.vault,
    mountObserver: w.metrics,
    allowlist: w.allowlist,
    breakers: w.breakers,
    tokenRequestAudiences: config.tokenRequestAudiences,
    mode: config.mode,
    time: w.time,
    // Bounds on what one Mount (and all Mounts together) may make the daemon hold (docs/failure-behaviour.md).
    objectsCache: new ObjectsCache({ limits: { maxBytes: config.limits.maxObjectsBytes } }),
    budget: new NodeBudget({ mountBytes: config.limits.maxMountBytes, nodeBytes: config.limits.nodeMountBytes }),
    // The node's CPU for rendering, in turns per namespace as the budget shares its bytes.
    renderTurns: new RenderTurns(),
    // Mounts that would only be refused again (their own budget, an oversized Vault answer), for a while.
    refusals: new RememberedRefusals(w.time),
    // -max-response-size: checked by the Mount, so the CLI's in-process mount refuses what the driver would.
    maxResponseBytes: config.maxResponseBytes,
  })
  return { pool, mountService }
}

/**
 * Builds the Mount service from the configuration: metrics, the Kubernetes
 * client, the HMAC key, the address allow-list, the Vault session pool and
 * breakers, the objects cache and the byte budgets. Everything but the
 * adapters (gRPC server, HTTP server), so that whoever drives Mounts
 * in-process (the CLI, the soak test) runs what the daemon runs.
 */
export async function buildMountService(
  config: ProviderConfig,
  logger: Logger,
  env: NodeJS.ProcessEnv,
  options: BuildOptions = {},
): Promise<MountServiceParts> {
  // The one clock and set of timers of the process, handed to every part that keeps time.
  const time = systemTime()
  // Egress proxy (HTTPS_PROXY, NO_PROXY, VAULT_PROXY_ADDR, ...): read once, here, for every transport;
  // a value that cannot be used stops the start before anything else is built.
  const proxy = readEgressProxy(env, logger)
  // The grpc_code label is the gRPC adapter's mapping, handed to the metrics here (they know no gRPC).
  const metrics = options.metrics === false ? undefined : new ProviderMetrics({ grpcCodeOf: mountStatusName })
  const vaultObserver = combineObservers(metrics, options.vaultObserver)
  // Beside the Sync Controller the provider calls no Kubernetes API: the controller passes the tokens,
  // the key is a mounted file, and its pod's own service-account token is never used.
  const kube =
    config.mode === 'sync-controller'
      ? undefined
      : await KubeClient.discover({
          apiUrl: config.kube.apiUrl,
          serviceAccountDir: config.kube.serviceAccountDir,
          env,
        })
  const hmacKey = await chooseHmacKey(config, kube, env, logger, time)
  // Failure behaviour (docs/failure-behaviour.md): the address allow-list, checked per Mount and on
  // every connection, and one breaker registry that both the Mount (before login) and every Vault
  // session report to.
  const allowlist = new AddressAllowlist(config.vaultAddrAllowlist, {
    onUnrestricted: metrics ? allowlistMetrics(metrics, config.vaultAddrAllowlist.length > 0) : undefined,
  })
  if (allowlist.allowsAny) {
    logger.warn(
      'no -vault-addr-allowlist: Mounts may send pod tokens to any Vault address their SecretProviderClass names; ' +
        'set -vault-addr-allowlist to the addresses of your Vault servers',
    )
  }
  // One transport per Vault connection, reporting every call (health probes included) to the observer.
  const transports = buildVaultTransports(config, {
    proxy,
    allowlist,
    observer: vaultObserver ?? NO_OBSERVER,
    logger,
  })
  // The breaker probes with the provider's own settings for an address, never a Mount's: the
  // operator's TLS for -vault-addr (through its shared pool), none for any other address; the egress
  // proxy the environment names for either.
  const breakers = new BreakerRegistry({}, providerProber(transports, providerConnection(config), time), time, logger)
  const { pool, mountService } = wireMountService(config, {
    logger,
    observer: vaultObserver,
    metrics,
    transports,
    breakers,
    kube,
    hmacKey,
    allowlist,
    time,
  })
  return {
    mountService,
    metrics,
    hmacKey,
    kube,
    pool,
    breakers,
    transports,
    proxy,
    allowlist,
    time,
    close() {
      breakers.close()
      pool.close()
      transports.close()
      kube?.close()
    },
  }
}

/** The settings a predecessor's state must have been made under (src/handover/), as this process has them. */
export function handoverSettings(config: ProviderConfig): HandoverSettings {
  const address = config.vault.address
  return {
    vaultAddress: address === undefined ? '' : normaliseVaultAddress(address, '-vault-addr', (m) => new Error(m)),
    vaultNamespace: config.vault.namespace ?? '',
    authMount: normaliseAuthMount(config.vault.authMount) ?? config.vault.authMount,
    identityScope: config.identityScope,
    shareDynamicSecrets: config.shareDynamicSecrets,
  }
}

/** The daemon: the Mount service behind the gRPC adapter, plus the operations HTTP server. */
export async function buildProvider(
  config: ProviderConfig,
  logger: Logger,
  env: NodeJS.ProcessEnv,
  options: BuildOptions = {},
): Promise<Provider> {
  const parts = await buildMountService(config, logger, env, options)
  const { mountService, metrics, hmacKey, time } = parts
  // Both services parsed once at start-up, for the gRPC server and the HTTP readiness probe.
  const protos = loadProtos()
  // One server per socket (-endpoint may name vault.sock and openbao.sock), all on the one Mount service.
  const servers = config.endpoints.map(
    (endpoint, i) =>
      new ProviderServer({
        protos,
        socketPath: endpoint.path,
        flavour: endpoint.flavour,
        mountService,
        mountTimeoutMs: config.mountTimeoutMs,
        logger,
        time,
        // A newer instance took over the socket and this one has finished its calls. Exiting would
        // make kubelet restart this container (DaemonSet pods always restart), and the restarted
        // process would take the socket back: stand by until the pod is deleted (SIGTERM). The
        // successor takes every socket; the first one's stands for all.
        // Its state, if not handed over, is stale from now on (the new instance serves): offer it to nobody.
        onReplaced:
          i === 0
            ? () => {
                handover?.close()
                standBy(endpoint.path, logger)
              }
            : undefined,
      }),
  )
  const server = servers[0]!
  const http = new OpsHttpServer({
    protos,
    address: config.healthAddr,
    socketPath: config.endpoint,
    moreSocketPaths: config.endpoints.slice(1).map((e) => e.path),
    metrics,
    logger,
    time,
    // Vault's health through the provider's own shared pool for -vault-addr, at most once per interval.
    vaultHealth:
      config.vault.address === undefined
        ? undefined
        : new HealthCache(
            async () =>
              probeVaultHealth(await parts.transports.get(providerConnection(config), PROVIDER_TENANT), 5_000, time),
            time,
          ),
    vaultAddress: config.vault.address,
  })
  // State handover (docs/failure-behaviour.md): an upgrade takes over the tokens and leases of the
  // process it replaces instead of logging in and issuing everything anew.
  const handover = config.stateHandover
    ? new StateHandover({
        endpoint: config.endpoint,
        pool: parts.pool,
        hmacKey,
        settings: handoverSettings(config),
        allowsAddress: (address) => parts.allowlist.allows(address),
        logger,
        time,
        observer: metrics,
        replaced: () => server.checkReplaced(),
      })
    : undefined
  const provider: Provider = {
    mountService,
    server,
    servers,
    http,
    metrics,
    hmacKey,
    handover,
    async close(graceMs: number) {
      handover?.close()
      await Promise.all(servers.map((s) => s.stop(graceMs)))
      await http.stop()
      parts.close()
    },
  }
  return provider
}
