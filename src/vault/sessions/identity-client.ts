/**
 * How one identity's calls to Vault are made, for its token (token.ts) and its reads (session.ts):
 * through the identity's own node-vault client (vault-client.ts), which holds its token; each call
 * with what is left of the Mount's deadline (at most VAULT_CALL_TIMEOUT_MS) and its signal; under
 * the retry policy (resilience/retry.ts) with the address's breaker (resilience/breaker.ts) as a
 * layer around each attempt; and a failed call becomes the error a person reads.
 */
import { ProviderError, q, textOf, type ErrorFields, type LazyText } from '../../errors.js'
import type { Logger } from '../../observability/logger.js'
import { loginNamespace, type PodIdentity, type VaultConnection } from '../../request/types.js'
import type { Deadline } from '../../util/deadline.js'
import type { Time } from '../../util/time.js'
import { deadlineError, saysNothingStored, SecretNotStored, vaultError } from '../failure-to-error.js'
import type { BreakerRegistry } from '../resilience/breaker.js'
import { DEFAULT_RETRY_POLICY, withRetry, type AttemptOptions, type RetryPolicy } from '../resilience/retry.js'
import { isTimeout, VaultCallAborted } from '../transport/call-errors.js'
import type { VaultCaller } from '../transport/transport.js'
import {
  callOptions,
  createVaultClient,
  type CallOptions,
  type MoreCallOptions,
  type VaultClient,
} from '../vault-client.js'

/** No single Vault call may take longer than this, whatever the Mount's deadline. */
export const VAULT_CALL_TIMEOUT_MS = 30_000

export interface VaultIdentity {
  connection: VaultConnection
  authMount: string
  role: string
  audience: string
  pod: PodIdentity
}

export interface IdentityClientOptions {
  logger: Logger
  /** The layer that fails fast while the address is down and sees every call's outcome. */
  breakers: Pick<BreakerRegistry, 'hooks'>
  /** The clock and the waits between retries. */
  time: Time
  retryPolicy?: RetryPolicy
}

/** How a message names a namespace: nothing for the root one. */
export function inNamespace(namespace: string): string {
  return namespace === '' ? '' : ` in namespace ${q(namespace)}`
}

export class IdentityClient {
  readonly identity: VaultIdentity
  /** node-vault's client: it holds the identity's token (set by its login and renew-self methods). */
  readonly vault: VaultClient
  readonly logger: Logger
  readonly time: Time
  private readonly breakers: Pick<BreakerRegistry, 'hooks'>
  private readonly retryPolicy: RetryPolicy

  /** `transport` is the identity's Vault connection (shared with other identities; tokens never live there). */
  constructor(identity: VaultIdentity, transport: VaultCaller, opts: IdentityClientOptions) {
    this.identity = identity
    this.logger = opts.logger
    this.time = opts.time
    this.breakers = opts.breakers
    this.retryPolicy = opts.retryPolicy ?? DEFAULT_RETRY_POLICY
    // Its calls are held by the pods' namespace (the transport's tenant slots).
    this.vault = createVaultClient(transport, identity.pod.namespace)
  }

  /** How errors name the identity. */
  where(): string {
    return `role ${q(this.identity.role)}, auth mount ${q(this.identity.authMount)}`
  }

  /** The fields of an error about `call` (as people read it: the call and who made it). */
  about(call: string): ErrorFields {
    return { call, address: this.identity.connection.address }
  }

  /** Login, renew-self and revoke-self go to the token's namespace; reads name theirs. */
  get tokenNamespace(): string {
    return loginNamespace(this.identity.connection)
  }

  /**
   * The options of one call to `namespace`: what is left of the Mount's deadline (at most
   * VAULT_CALL_TIMEOUT_MS), its signal, and the deadline itself, which orders the call among its
   * namespace's waiting calls.
   */
  options(
    deadline: Deadline,
    what: LazyText,
    namespace: string,
    maxBytes?: number,
    more?: MoreCallOptions,
  ): CallOptions {
    const remaining = deadline.remainingMs()
    if (remaining <= 0) {
      throw new ProviderError(
        'DEADLINE_EXCEEDED',
        'the Mount ran out of time before this Vault call',
        this.about(textOf(what)),
      )
    }
    const timeoutMs = Math.max(1, Math.min(remaining, VAULT_CALL_TIMEOUT_MS))
    return callOptions(timeoutMs, deadline.signal, namespace, maxBytes, { ...more, dueAt: deadline.expiresAt })
  }

  /** `attempt` under the retry policy, with the address's breaker as a layer around each attempt. */
  retried<T>(attempt: (options: AttemptOptions) => Promise<T>, deadline: Deadline, callName: string): Promise<T> {
    const breaker = this.breakers.hooks(this.identity.connection, this.identity.pod.namespace)
    return withRetry((_n, options) => attempt(options), deadline, this.time, this.retryPolicy, {
      beforeAttempt: breaker.beforeAttempt,
      onFailure: breaker.onFailure,
      onRetry: (attempt, delayMs, reason) =>
        this.logger.debug({ call: callName, attempt, delayMs, reason }, 'retrying Vault call'),
    })
  }

  /**
   * A failed call's error (`call`: which, as people read it). `kind`: the auth call, the objects'
   * own read (whose "nothing stored here" `optional` may skip: SecretNotStored), or another call.
   */
  failure(err: unknown, call: string, deadline: Deadline, kind: 'login' | 'read' | 'other'): ProviderError {
    const fields = this.about(call)
    if (err instanceof VaultCallAborted || (isTimeout(err) && deadline.expired())) {
      return deadlineError(fields, err instanceof VaultCallAborted)
    }
    const failed = vaultError(err, fields, kind === 'login')
    return kind === 'read' && saysNothingStored(err) ? new SecretNotStored(failed.detail, failed.fields) : failed
  }
}
