/**
 * One identity's conversation with Vault: its token (token.ts) and its reads, through its own
 * node-vault client (identity-client.ts). A read asks what the identity has kept (secret-cache.ts,
 * which the session asks and which never asks back); else it takes the token first, then joins an
 * identical read in flight or starts one (shared-calls.ts), and keeps its answer. A 403 on a token
 * that was already held means it was revoked behind our back: one login again, one retry. Each
 * read states its consistency (transport/consistency.ts): strong, or eventual after the index of
 * the identity's own latest login or write (read-your-writes).
 */
import type { ProviderError } from '../../errors.js'
import type { VaultObserver } from '../../observability/vault-observer.js'
import type { Deadline } from '../../util/deadline.js'
import { deadlineError } from '../failure-to-error.js'
import { apiPath, describeRequest, type VaultRequest } from '../paths.js'
import { statusOf } from '../transport/call-errors.js'
import type { CallConsistency } from '../transport/consistency.js'
import type { VaultCaller } from '../transport/transport.js'
import { sendRequest, type CallOptions } from '../vault-client.js'
import type { ExportedSession, ImportedEntries } from './exported.js'
import { IdentityClient, inNamespace, type IdentityClientOptions, type VaultIdentity } from './identity-client.js'
import type { Lifetime } from './lifetime.js'
import { SecretCache, type DueLease, type FetchOutcome, type SecretCacheOptions } from './secret-cache.js'
import { SharedCalls } from './shared-calls.js'
import { IdentityToken, type HeldToken, type JwtSupplier } from './token.js'

export { VAULT_CALL_TIMEOUT_MS, type VaultIdentity } from './identity-client.js'
export type { JwtSupplier } from './token.js'

export interface SessionOptions extends SecretCacheOptions, IdentityClientOptions {
  /** Told about cache reuse (the transport itself reports every HTTP call). */
  observer?: VaultObserver
}

/** A read shared by identical reads in flight: Vault's answer, its kind, and the pod it was read for. */
interface SharedRead {
  body: unknown
  kind: Lifetime['kind']
  leaderPod: string
}

export class VaultSession {
  readonly identity: VaultIdentity
  private readonly client: IdentityClient
  private readonly token: IdentityToken
  private readonly cache: SecretCache
  /** Identical reads in flight, each shared by its waiters. */
  private readonly reads: SharedCalls<SharedRead>
  private readonly shareDynamic: boolean
  private readonly observer: VaultObserver | undefined
  lastUsedAt: number
  /**
   * The X-Vault-Index of this identity's own latest login or write: its eventual reads carry it, so
   * that a standby that has not applied it yet forwards them (read-your-writes).
   */
  private ownIndex: string | undefined
  private readonly noteOwnIndex = (index: string): void => {
    this.ownIndex = index
  }
  /** The consistency of a login, a renewal or a write: no header (standbys forward them), its index noted. */
  private readonly ownWrite: CallConsistency = { onIndex: this.noteOwnIndex }

  /** `transport` is the identity's Vault connection (shared with other identities; tokens never live there). */
  constructor(identity: VaultIdentity, transport: VaultCaller, opts: SessionOptions) {
    this.identity = identity
    this.client = new IdentityClient(identity, transport, opts)
    this.token = new IdentityToken(this.client, this.ownWrite)
    this.observer = opts.observer
    this.reads = new SharedCalls(opts.time)
    this.shareDynamic = opts.shareDynamic
    this.cache = new SecretCache(opts)
    this.lastUsedAt = opts.time.now()
  }

  /** The namespace a request reads in ('' the root namespace). */
  private readNamespace(req: VaultRequest): string {
    return req.namespace ?? this.identity.connection.namespace ?? ''
  }

  /** One request with the identity's token, taken first on the caller's own deadline. */
  async request(req: VaultRequest, getJwt: JwtSupplier, deadline: Deadline, label: string): Promise<unknown> {
    const token = await this.token.held(getJwt, deadline)
    return this.send(req, this.consistencyOf(req), token, getJwt, deadline, label)
  }

  /**
   * What a request asks of a cluster's nodes (transport/consistency.ts): its read consistency
   * (strong unless it says otherwise), after this identity's own latest login or write when
   * eventual; a request that is not a plain GET is a write whose answer's index is noted.
   */
  private consistencyOf(req: VaultRequest): CallConsistency {
    const mode = req.consistency ?? 'strong'
    const after = mode === 'eventual' ? this.ownIndex : undefined
    const write = !(req.method === 'GET' && req.body === undefined)
    return { mode, ...(after === undefined ? {} : { after }), ...(write ? { onIndex: this.noteOwnIndex } : {}) }
  }

  /** GET and POST through node-vault's read and write, the rest through its generic request. */
  private send(
    req: VaultRequest,
    consistency: CallConsistency,
    token: HeldToken,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
  ): Promise<unknown> {
    const path = apiPath(req)
    const namespace = this.readNamespace(req)
    const vault = this.client.vault
    const call = (options: CallOptions): Promise<unknown> => {
      if (req.method === 'GET' && req.body === undefined) return vault.read(path, options)
      if (req.method === 'POST') return vault.write(path, req.body, options)
      return sendRequest(vault, req.method, path, req.body, options)
    }
    const callName = describeRequest(req) + inNamespace(namespace)
    return this.withToken(call, callName, namespace, consistency, token, getJwt, deadline, label, 'read')
  }

  /**
   * Sends one call with `token`, retried (identity-client.ts). A 403 on a token that was already
   * held when the caller came means it was revoked or expired behind our back: log in again once
   * and retry once.
   */
  private async withToken<T>(
    send: (options: CallOptions) => Promise<T>,
    callName: string,
    namespace: string,
    consistency: CallConsistency,
    token: HeldToken,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
    kind: 'read' | 'other',
  ): Promise<T> {
    this.lastUsedAt = this.client.time.now()
    const what = (): string => `${label}: ${callName}`
    for (let again = false; ; again = true) {
      try {
        // Options made per attempt: the timeout is what is left of the Mount's deadline; after one
        // node's answer, a connection of the attempt's own (perhaps another node behind a Service).
        return await this.client.retried(
          ({ freshConnection }) =>
            send(this.client.options(deadline, what, namespace, undefined, { consistency, freshConnection })),
          deadline,
          callName,
        )
      } catch (err) {
        if (again || statusOf(err) !== 403 || !token.cached) {
          throw this.client.failure(err, `${label}: ${callName} (${this.client.where()})`, deadline, kind)
        }
        this.client.logger.debug({ role: this.identity.role }, 'cached Vault token refused; logging in again')
        this.token.invalidate(token.generation)
        await this.token.held(getJwt, deadline)
      }
    }
  }

  /**
   * Reads through the identity's cache: what it keeps for the pod (a due lease renewed), else the
   * token first, then Vault's answer, shared with identical reads in flight, and kept.
   */
  async fetch(
    req: VaultRequest,
    requestKey: string,
    podUid: string,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
  ): Promise<FetchOutcome> {
    const now = this.client.time.now()
    this.lastUsedAt = now
    const found = this.cache.lookup(requestKey, podUid, now, this.token.expiries)
    let outcome = found.kind === 'hit' ? found.outcome : undefined
    if (found.kind === 'renewDue')
      outcome = await this.renewed(found.lease, req, requestKey, podUid, getJwt, deadline, label)
    outcome ??= await this.read(req, requestKey, podUid, getJwt, deadline, label)
    this.report(outcome)
    return outcome
  }

  /** A due lease renewed and served again; undefined when it could not be (a new one is read). */
  private async renewed(
    lease: DueLease,
    req: VaultRequest,
    requestKey: string,
    podUid: string,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
  ): Promise<FetchOutcome | undefined> {
    // A lease lives in the namespace it was read in.
    const namespace = this.readNamespace(req)
    const time = this.client.time
    try {
      const token = await this.token.held(getJwt, deadline)
      const body = (await this.withToken(
        (options) => this.client.vault.renew({ lease_id: lease.leaseId, requestOptions: options }),
        'PUT sys/leases/renew',
        namespace,
        this.ownWrite,
        token,
        getJwt,
        deadline,
        `${label}: lease renewal`,
        'other',
      )) as { lease_duration?: unknown; renewable?: unknown } | null
      const granted = {
        ttlMs: typeof body?.lease_duration === 'number' ? body.lease_duration * 1000 : 0,
        renewable: body?.renewable === true,
      }
      if (this.cache.extend(lease, granted, time.now())) return { body: lease.body, source: 'renewed', kind: 'leased' }
    } catch {
      // Not renewable after all, revoked, or Vault refused: issue a new one.
    }
    this.cache.drop(lease)
    const found = this.cache.lookup(requestKey, podUid, time.now(), this.token.expiries)
    return found.kind === 'hit' ? found.outcome : undefined
  }

  /**
   * Vault's answer, read once for every identical read in flight: the token first, each caller on
   * its own deadline; then the read, shared (it runs under the latest deadline of its waiters).
   * An answer that turns out to be another pod's credential is not served: this pod reads its own.
   */
  private async read(
    req: VaultRequest,
    requestKey: string,
    podUid: string,
    getJwt: JwtSupplier,
    deadline: Deadline,
    label: string,
  ): Promise<FetchOutcome> {
    const token = await this.token.held(getJwt, deadline)
    const giveUp = (cancelled: boolean): ProviderError =>
      deadlineError(
        this.client.about(
          `${label}: ${describeRequest(req)}${inNamespace(this.readNamespace(req))} (${this.client.where()})`,
        ),
        cancelled,
      )
    // Taken once: a read joins only one that carries the same index (one started before this
    // identity's latest write does not answer a read made after it).
    const consistency = this.consistencyOf(req)
    const readKey = consistency.after === undefined ? requestKey : `${requestKey}\n${consistency.after}`
    const readAndKeep = async (shared: Deadline): Promise<SharedRead> => {
      const body = await this.send(req, consistency, token, getJwt, shared, label)
      const kind = this.cache.store(
        requestKey,
        podUid,
        body,
        req.method !== 'GET',
        this.token.current,
        this.client.time.now(),
      )
      return { body, kind, leaderPod: podUid }
    }
    const first = this.reads.join(`read|${readKey}`, deadline, giveUp, readAndKeep)
    const s = await first.result
    if (first.led || s.kind === 'static' || this.shareDynamic || s.leaderPod === podUid) {
      return { body: s.body, source: first.led ? 'vault' : 'coalesced', kind: s.kind }
    }
    // Someone else's credential: this pod gets its own, one read per pod.
    const own = this.reads.join(`own|${podUid}|${readKey}`, deadline, giveUp, readAndKeep)
    const o = await own.result
    return { body: o.body, source: own.led ? 'vault' : 'coalesced', kind: o.kind }
  }

  private report(o: FetchOutcome): void {
    const observer = this.observer
    if (!observer) return
    try {
      const reused = o.source !== 'vault'
      observer.cacheLookup?.('response', reused)
      if (o.kind !== 'static') observer.leaseReuse?.(reused)
    } catch {
      // Instrumentation never fails a Mount.
    }
  }

  /** Forgets the token and what was read with it, without telling Vault (pods may still use its leases). */
  close(): void {
    this.token.forget()
    this.cache.clear()
  }

  /**
   * Revokes the token (and with it, in Vault, the leases it created): for an
   * identity whose pods are gone. Best effort, bounded in time.
   */
  async revoke(): Promise<void> {
    await this.token.revoke()
    this.close()
  }

  /**
   * Handover (src/handover/): the token, its lifetime and what this identity has read, for a
   * successor process that goes on with them; undefined without a live token. From then on this
   * process never revokes the token: the successor owns it.
   */
  exportState(now = this.client.time.now()): ExportedSession | undefined {
    const token = this.token.export(now)
    if (!token) return undefined
    return { identity: this.identity, ...token, lastUsedAt: this.lastUsedAt, entries: this.cache.exportEntries() }
  }

  /**
   * Handover: goes on with a predecessor's token and reads as if it had made them (renews,
   * re-logs in and revokes as usual). Undefined when this session already has a token of its own.
   */
  importState(state: ExportedSession, now = this.client.time.now()): ImportedEntries | undefined {
    if (!this.token.import(state)) return undefined
    this.lastUsedAt = state.lastUsedAt
    return this.cache.importEntries(state.entries, now, this.token.expiries)
  }
}
