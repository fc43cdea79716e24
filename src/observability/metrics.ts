/**
 * The provider's Prometheus metrics. One ProviderMetrics is built by the
 * composition root and handed to whoever reports (MountService, the Vault
 * layer); nothing imports a global registry.
 *
 * Labels are low-cardinality by construction: outcome, gRPC status name, the error
 * catalogue code, Vault operation and HTTP status. Never a pod, namespace,
 * object, path or role name.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { ErrorCode } from '../errors.js'
import type { CacheKind, VaultCallEvent, VaultObserver, VaultOperation } from './vault-observer.js'

/**
 * How often the event-loop delay behind `nodejs_eventloop_lag_*` is sampled. prom-client's default,
 * 10 ms, wakes an idle provider 100 times a second on every node (bench/NOTES.md). At 100 ms a stall
 * still shows in full (the next sample is late by as much), only fewer samples go into the percentiles.
 */
export const EVENT_LOOP_SAMPLE_MS = 100

export const METRIC_PREFIX = 'vault_csi_provider_'

/** Seconds; a Mount must answer within kubelet's 2 minutes. */
export const MOUNT_DURATION_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
/** Seconds; one Vault call is capped at 30 s. */
export const VAULT_DURATION_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

const OPERATIONS: readonly VaultOperation[] = ['login', 'read', 'write', 'renew', 'revoke', 'lookup', 'health']
const CACHES: readonly CacheKind[] = ['token', 'response']

/** What MountService reports: the catalogue code of a failure, never a transport status. */
export interface MountObserver {
  mountStarted(): void
  /** `errorCode`: the catalogue code of a failure, undefined for a success. */
  mountFinished(outcome: 'success' | 'failure', errorCode: ErrorCode | undefined, durationMs: number): void
  /** Optional objects a successful Mount left out because Vault does not have their secret. */
  optionalSkipped?(count: number): void
}

/** HTTP statuses Vault answers with that mean something distinct to an operator; the rest go to their class. */
const DISTINCT_STATUSES = new Set([400, 401, 403, 404, 412, 429, 500, 502, 503, 504])

/** Every value the `status` label can take: a fixed set, whatever a (pod-chosen) server answers. */
export const STATUS_LABELS = [
  '2xx',
  '3xx',
  '400',
  '401',
  '403',
  '404',
  '412',
  '429',
  '4xx',
  '500',
  '502',
  '503',
  '504',
  '5xx',
  'none',
] as const

/**
 * HTTP status label: `2xx` for a success (Vault's client hides 200 vs 204),
 * the code for the statuses Vault documents, the class (`3xx`, `4xx`, `5xx`)
 * for any other, or `none` without an answer. A Mount may name any server as
 * its Vault, so an unbucketed label would let it mint series at will.
 */
export function statusLabel(event: Pick<VaultCallEvent, 'ok' | 'status'>): string {
  if (event.ok) return '2xx'
  const s = event.status
  if (s === undefined || !Number.isInteger(s) || s < 200 || s > 599) return 'none'
  if (DISTINCT_STATUSES.has(s)) return String(s)
  return `${Math.floor(s / 100)}xx`
}

export interface ProviderMetricsOptions {
  /** Process and Node.js metrics (RSS, fds, event-loop lag, GC…) in the same registry. Default true. */
  processMetrics?: boolean
  /**
   * The `grpc_code` label of a Mount: the name of the status the driver got
   * (`OK` for a success). The gRPC adapter owns that mapping; the composition
   * root passes it in (server/grpc-status.ts mountStatusName), so this module
   * stays free of gRPC. Without it the label is empty.
   */
  grpcCodeOf?: (errorCode: ErrorCode | undefined) => string
}

export class ProviderMetrics implements VaultObserver, MountObserver {
  readonly registry: Registry
  /** Counts every change of the provider's own series: a rendering made since none is still true. */
  changes = 0
  private readonly mounts: Counter<'outcome' | 'grpc_code' | 'error_code'>
  private readonly mountDuration: Histogram<'outcome'>
  private readonly mountsInFlight: Gauge
  private readonly vaultRequests: Counter<'operation' | 'status'>
  private readonly vaultDuration: Histogram<'operation' | 'status'>
  private readonly logins: Counter<'outcome'>
  private readonly renewals: Counter<'outcome'>
  private readonly cache: Counter<'cache' | 'result'>
  private readonly leaseReuses: Counter<'result'>
  private readonly optionalObjectsSkipped: Counter
  private readonly handovers: Counter<'item' | 'outcome'>
  private readonly grpcCodeOf: (errorCode: ErrorCode | undefined) => string

  constructor(opts: ProviderMetricsOptions = {}) {
    this.grpcCodeOf = opts.grpcCodeOf ?? (() => '')
    const registry = new Registry()
    this.registry = registry
    const registers = [registry]
    this.mounts = new Counter({
      name: `${METRIC_PREFIX}mounts_total`,
      help: 'Mount calls answered, by outcome, gRPC status code and error catalogue code ("" on success).',
      labelNames: ['outcome', 'grpc_code', 'error_code'],
      registers,
    })
    this.mountDuration = new Histogram({
      name: `${METRIC_PREFIX}mount_duration_seconds`,
      help: 'Time to answer one Mount call, by outcome.',
      labelNames: ['outcome'],
      buckets: MOUNT_DURATION_BUCKETS,
      registers,
    })
    this.mountsInFlight = new Gauge({
      name: `${METRIC_PREFIX}mounts_in_flight`,
      help: 'Mount calls being served right now.',
      registers,
    })
    this.vaultRequests = new Counter({
      name: `${METRIC_PREFIX}vault_requests_total`,
      help: 'HTTP calls to Vault, by operation and HTTP status ("2xx"; 400, 401, 403, 404, 412, 429, 500, 502, 503, 504; otherwise "3xx", "4xx" or "5xx"; "none" when Vault did not answer).',
      labelNames: ['operation', 'status'],
      registers,
    })
    this.vaultDuration = new Histogram({
      name: `${METRIC_PREFIX}vault_request_duration_seconds`,
      help: 'Duration of HTTP calls to Vault, by operation and HTTP status.',
      labelNames: ['operation', 'status'],
      buckets: VAULT_DURATION_BUCKETS,
      registers,
    })
    this.logins = new Counter({
      name: `${METRIC_PREFIX}vault_logins_total`,
      help: 'Logins to Vault as a pod, by outcome.',
      labelNames: ['outcome'],
      registers,
    })
    this.renewals = new Counter({
      name: `${METRIC_PREFIX}vault_token_renewals_total`,
      help: 'Vault token renewals, by outcome.',
      labelNames: ['outcome'],
      registers,
    })
    this.cache = new Counter({
      name: `${METRIC_PREFIX}cache_lookups_total`,
      help: 'Lookups in the provider caches (cache="token": a pod identity\'s Vault token; "response": a Vault answer), by result.',
      labelNames: ['cache', 'result'],
      registers,
    })
    this.leaseReuses = new Counter({
      name: `${METRIC_PREFIX}lease_reuse_total`,
      help: 'Dynamic secrets and certificates served from an existing lease (hit) or issued anew (miss).',
      labelNames: ['result'],
      registers,
    })

    this.optionalObjectsSkipped = new Counter({
      name: `${METRIC_PREFIX}optional_objects_skipped_total`,
      help: 'Objects marked optional that a successful Mount left out because Vault answered that their secret does not exist.',
      registers,
    })
    this.handovers = new Counter({
      name: `${METRIC_PREFIX}handover_total`,
      help: 'What this process took over from the provider it replaced at start (state handover), by item ("identity": a Vault token; "lease": a leased or issued secret) and outcome ("taken_over", "refused", "expired" in transit).',
      labelNames: ['item', 'outcome'],
      registers,
    })

    // Series that exist from the start, so dashboards and alerts see zeros rather than gaps.
    for (const outcome of ['success', 'failure']) {
      this.logins.inc({ outcome }, 0)
      this.renewals.inc({ outcome }, 0)
    }
    for (const cache of CACHES) for (const result of ['hit', 'miss']) this.cache.inc({ cache, result }, 0)
    for (const result of ['hit', 'miss']) this.leaseReuses.inc({ result }, 0)
    for (const item of ['identity', 'lease']) {
      for (const outcome of ['taken_over', 'refused', 'expired']) this.handovers.inc({ item, outcome }, 0)
    }
    this.mounts.inc({ outcome: 'success', grpc_code: this.grpcCodeOf(undefined), error_code: '' }, 0)

    if (opts.processMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })
    }
  }

  mountStarted(): void {
    this.changes += 1
    this.mountsInFlight.inc()
  }

  mountFinished(outcome: 'success' | 'failure', errorCode: ErrorCode | undefined, durationMs: number): void {
    this.changes += 1
    this.mountsInFlight.dec()
    this.mounts.inc({ outcome, grpc_code: this.grpcCodeOf(errorCode), error_code: errorCode ?? '' })
    this.mountDuration.observe({ outcome }, durationMs / 1000)
  }

  vaultCall(event: VaultCallEvent): void {
    this.changes += 1
    const operation = OPERATIONS.includes(event.operation) ? event.operation : 'read'
    const status = statusLabel(event)
    this.vaultRequests.inc({ operation, status })
    this.vaultDuration.observe({ operation, status }, event.durationMs / 1000)
    const outcome = event.ok ? 'success' : 'failure'
    if (operation === 'login') this.logins.inc({ outcome })
    // Token renewals are the renew-self calls; lease renewals (sys/leases/renew) count only as requests.
    if (operation === 'renew' && event.description.endsWith('auth/token/renew-self')) this.renewals.inc({ outcome })
  }

  optionalSkipped(count: number): void {
    this.changes += 1
    this.optionalObjectsSkipped.inc(count)
  }

  cacheLookup(cache: CacheKind, hit: boolean): void {
    this.changes += 1
    this.cache.inc({ cache, result: hit ? 'hit' : 'miss' })
  }

  leaseReuse(hit: boolean): void {
    this.changes += 1
    this.leaseReuses.inc({ result: hit ? 'hit' : 'miss' })
  }

  /** State handover (src/handover/): what was taken over from the predecessor, at start. */
  handover(item: 'identity' | 'lease', outcome: 'taken_over' | 'refused' | 'expired', count: number): void {
    this.changes += 1
    this.handovers.inc({ item, outcome }, count)
  }

  get contentType(): string {
    return this.registry.contentType
  }

  /** The Prometheus text exposition of every metric. */
  render(): Promise<string> {
    return this.registry.metrics()
  }
}
