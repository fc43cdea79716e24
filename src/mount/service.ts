/**
 * The Mount use case as the outside world sees it: a raw request in, files
 * and versions (or one ProviderError) out, and exactly one log line per
 * Mount. Shared by the gRPC adapter and the CLI's in-process mount.
 */
import type { ProviderMode, VaultDefaults } from '../config/config.js'
import { DEFAULT_FLAVOUR, type ProviderFlavour } from '../config/flavour.js'
import { isProviderError, toProviderError, type ProviderError } from '../errors.js'
import { logString } from '../observability/logger.js'
import type { MountObserver } from '../observability/metrics.js'
import type { ObjectsCache } from '../request/objects-cache.js'
import { ATTR, MAX_ATTRIBUTES_BYTES, parseMountRequest, type RawMountRequest } from '../request/parse-request.js'
import type { MountSpec } from '../request/types.js'
import type { Deadline } from '../util/deadline.js'
import type { MountBudget, NodeBudget } from './budget.js'
import { runMount, type MountDeps, type MountResult } from './mount.js'
import type { RememberedRefusals } from './refusals.js'
import { checkResponseSize } from './response-size.js'

/** Every collaborator is required: the composition root (src/app.ts) builds each one, tests pass their own. */
export interface MountServiceOptions extends MountDeps {
  vaultDefaults: VaultDefaults
  /** Metrics: outcome, duration and in-flight count of every Mount (none in the CLI's in-process mount). */
  mountObserver?: MountObserver
  /** Parses `objects` texts (bounded by -max-objects-size) and keeps the results. */
  objectsCache: ObjectsCache
  /** -max-mount-bytes and -max-node-mount-bytes. */
  budget: NodeBudget
  /** Mounts refused for their own budget or an oversized Vault answer, refused again at once for a while. */
  refusals: RememberedRefusals
  /** -max-response-size: the largest answer the driver accepts (its --max-call-recv-msg-size). */
  maxResponseBytes: number
}

/** The Mount's log line; the success fields are filled in after the Mount (undefined ones are not logged). */
interface MountLogLine {
  /** On a node; beside the Sync Controller there is no pod, only `namespace`. */
  pod: string | undefined
  namespace: string | undefined
  serviceAccount: string
  secretProviderClass: string
  role: string
  objects: number
  durationMs: number
  outcome: 'success' | undefined
  files: number | undefined
  vaultCalls: number | undefined
  podToken: string | undefined
  /** Optional objects left out because Vault does not have their secret (object names, bounded). */
  skippedOptional: string[] | undefined
}

/** Skipped optional objects named in one log line at most. */
const MAX_LOGGED_SKIPPED = 20

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
  /** `flavour`: which provider the driver called (the socket's name): how the class's parameters are read. */
  async mount(
    raw: RawMountRequest,
    deadline: Deadline,
    flavour: ProviderFlavour = DEFAULT_FLAVOUR,
  ): Promise<MountResult> {
    const started = process.hrtime.bigint()
    const log = this.opts.logger
    this.inFlight += 1
    this.opts.mountObserver?.mountStarted()
    let spec: MountSpec | undefined
    const { objectsCache, refusals } = this.opts
    let budget: MountBudget | undefined
    try {
      spec = parseMountRequest(
        raw,
        this.opts.vaultDefaults,
        (text, tenant) => objectsCache.parse(text, tenant),
        flavour,
        // The Sync Controller names its own pod in every Mount: who asks is the SecretSync's service account.
        this.opts.mode === 'sync-controller' ? 'serviceaccount' : 'pod',
      )
      const parsed = spec
      const refused = refusals.recall(parsed)
      if (refused) throw refused
      const own = this.opts.budget.open(parsed.pod.namespace)
      budget = own
      const result = await runMount(parsed, this.opts, deadline, own).catch((err: unknown) => {
        // Refusals that would only repeat: this pod's own budget, or a Vault answer over
        // -max-vault-response-size (reading it again costs the node as much, for the same answer).
        if (isProviderError(err) && (own.overOwnLimit || err.code === 'VAULT_RESPONSE_TOO_LARGE')) {
          refusals.remember(parsed, err)
        }
        throw err
      })
      // Sized before the adapter builds it: a refused answer is never assembled, and counts as a failure.
      const tooLarge = checkResponseSize(result.objects, this.opts.maxResponseBytes)
      if (tooLarge) throw tooLarge
      const line = this.summary(spec, started)
      line.outcome = 'success'
      line.files = result.objects.reduce((n, o) => n + o.files.length, 0)
      line.vaultCalls = result.vaultCalls
      // Which pod token a login used; none when the pod's cached Vault token served the Mount.
      line.podToken = result.tokenSource ?? 'not-needed'
      if (result.skippedOptional.length > 0) {
        line.skippedOptional = result.skippedOptional.slice(0, MAX_LOGGED_SKIPPED).map(logString)
        this.opts.mountObserver?.optionalSkipped?.(result.skippedOptional.length)
      }
      log.info(line, 'mount')
      this.opts.mountObserver?.mountFinished('success', undefined, elapsedMs(started))
      return result
    } catch (err) {
      const perr: ProviderError = toProviderError(err)
      if (perr !== err) log.error({ err }, 'unexpected error during mount')
      log.warn(
        {
          ...(spec
            ? this.summary(spec, started)
            : { ...rawSummary(raw, this.opts.mode), durationMs: elapsedMs(started) }),
          outcome: 'failure',
          code: perr.code,
          reason: perr.message,
        },
        'mount',
      )
      this.opts.mountObserver?.mountFinished('failure', perr.code, elapsedMs(started))
      throw perr
    } finally {
      budget?.release()
      this.inFlight -= 1
    }
  }

  /**
   * Every pod-supplied string bounded (logString): a log line never grows with what a pod sends.
   */
  private summary(spec: MountSpec, started: bigint): MountLogLine {
    const node = this.opts.mode !== 'sync-controller'
    return {
      pod: node ? logString(`${spec.pod.namespace}/${spec.pod.name}`) : undefined,
      namespace: node ? undefined : logString(spec.pod.namespace),
      serviceAccount: logString(spec.pod.serviceAccount),
      secretProviderClass: logString(spec.secretProviderClass),
      role: logString(spec.roleName),
      objects: spec.objects.length,
      durationMs: elapsedMs(started),
      outcome: undefined,
      files: undefined,
      vaultCalls: undefined,
      podToken: undefined,
      skippedOptional: undefined,
    }
  }
}

/** A pod-controlled attribute for the log line: a string, bounded (logString), or nothing. */
function bounded(value: unknown): string | undefined {
  return typeof value === 'string' ? logString(value) : undefined
}

/**
 * Who asked, for the log line of a request that did not parse: the pod and the
 * SecretProviderClass as the raw attributes name them, each bounded, nothing else.
 */
function rawSummary(raw: RawMountRequest, mode: ProviderMode | undefined): Record<string, string> {
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
  // Beside the Sync Controller the pod named is the controller's own: the namespace is the SecretSync's.
  if (mode === 'sync-controller') {
    if (namespace !== undefined) out.namespace = namespace
  } else if (namespace !== undefined || name !== undefined) out.pod = `${namespace ?? '?'}/${name ?? '?'}`
  const spc = bounded(a[ATTR.secretProviderClass])
  if (spc !== undefined) out.secretProviderClass = spc
  return out
}

function elapsedMs(started: bigint): number {
  return Number((process.hrtime.bigint() - started) / 1000n) / 1000
}
