/**
 * The Mount use case as the outside world sees it: a raw request in, files
 * and versions (or one ProviderError) out, and exactly one log line per
 * Mount. Shared by the gRPC adapter and the CLI's in-process mount.
 */
import type { VaultDefaults } from '../config/config.js'
import { toProviderError, type ProviderError } from '../errors.js'
import type { MountObserver } from '../observability/metrics.js'
import { ATTR, MAX_ATTRIBUTES_BYTES, parseMountRequest, type RawMountRequest } from '../request/parse-request.js'
import type { MountSpec } from '../request/types.js'
import type { Deadline } from '../util/deadline.js'
import { runMount, type MountDeps, type MountResult } from './mount.js'

export interface MountServiceOptions extends MountDeps {
  vaultDefaults: VaultDefaults
  /** Metrics: outcome, duration and in-flight count of every Mount. */
  mountObserver?: MountObserver
}

export class MountService {
  private readonly opts: MountServiceOptions
  private inFlight = 0

  constructor(opts: MountServiceOptions) {
    this.opts = opts
  }

  get mountsInFlight(): number {
    return this.inFlight
  }

  /** Throws a ProviderError; anything else thrown below is logged here and reported as INTERNAL. */
  async mount(raw: RawMountRequest, deadline: Deadline): Promise<MountResult> {
    const started = process.hrtime.bigint()
    const log = this.opts.logger
    this.inFlight += 1
    this.opts.mountObserver?.mountStarted()
    let spec: MountSpec | undefined
    try {
      spec = parseMountRequest(raw, this.opts.vaultDefaults)
      const result = await runMount(spec, this.opts, deadline)
      log.info(
        {
          ...this.summary(spec, started),
          outcome: 'success',
          files: result.objects.reduce((n, o) => n + o.files.length, 0),
          vaultCalls: result.vaultCalls,
          // Which pod token a login used; none when the pod's cached Vault token served the Mount.
          podToken: result.tokenSource ?? 'not-needed',
        },
        'mount',
      )
      this.opts.mountObserver?.mountFinished('success', 0, undefined, elapsedMs(started))
      return result
    } catch (err) {
      const perr: ProviderError = toProviderError(err)
      if (perr !== err) log.error({ err }, 'unexpected error during mount')
      log.warn(
        {
          ...(spec ? this.summary(spec, started) : { ...rawSummary(raw), durationMs: elapsedMs(started) }),
          outcome: 'failure',
          code: perr.code,
          grpcCode: perr.grpcStatus,
          reason: perr.message,
        },
        'mount',
      )
      this.opts.mountObserver?.mountFinished('failure', perr.grpcStatus, perr.code, elapsedMs(started))
      throw perr
    } finally {
      this.inFlight -= 1
    }
  }

  private summary(spec: MountSpec, started: bigint): Record<string, unknown> {
    return {
      pod: `${spec.pod.namespace}/${spec.pod.name}`,
      serviceAccount: spec.pod.serviceAccount,
      secretProviderClass: spec.secretProviderClass,
      role: spec.roleName,
      objects: spec.objects.length,
      durationMs: elapsedMs(started),
    }
  }
}

/** A Kubernetes name is at most 253 characters; anything longer is cut (the attributes are pod-controlled). */
const MAX_LOGGED_NAME = 253

function bounded(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  return value.length > MAX_LOGGED_NAME ? `${value.slice(0, MAX_LOGGED_NAME)}…` : value
}

/**
 * Who asked, for the log line of a request that did not parse: the pod and the
 * SecretProviderClass as the raw attributes name them, each bounded, nothing else.
 */
function rawSummary(raw: RawMountRequest): Record<string, string> {
  if (typeof raw.attributes !== 'string' || raw.attributes.length > MAX_ATTRIBUTES_BYTES) return {}
  let attrs: unknown
  try {
    attrs = JSON.parse(raw.attributes)
  } catch {
    return {}
  }
  if (attrs === null || typeof attrs !== 'object' || Array.isArray(attrs)) return {}
  const a = attrs as Record<string, unknown>
  const out: Record<string, string> = {}
  const namespace = bounded(a[ATTR.podNamespace])
  const name = bounded(a[ATTR.podName])
  if (namespace !== undefined || name !== undefined) out.pod = `${namespace ?? '?'}/${name ?? '?'}`
  const spc = bounded(a[ATTR.secretProviderClass])
  if (spc !== undefined) out.secretProviderClass = spc
  return out
}

function elapsedMs(started: bigint): number {
  return Number((process.hrtime.bigint() - started) / 1000n) / 1000
}
