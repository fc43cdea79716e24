/**
 * The retry policy for one Vault call: which failures are worth another
 * attempt, how long to wait (exponential backoff with full jitter, or Vault's
 * own Retry-After), and when to stop (attempt cap, or the Mount's deadline).
 *
 * Retried: no answer at all (refused, reset, timed out, DNS), 5xx except 501,
 * 412 (a performance standby that has not caught up yet) and 429 (rate-limit
 * quota). Never retried: 400, 403, 404 and every other 4xx (the answer would
 * be the same), TLS failures (a configuration problem, not a blip), a
 * redirect that is not a standby's.
 *
 * One node's answer — sealed (503), a standby that knows no active node (500,
 * or a 307 to the old leader's address during an election), a standby behind
 * the request's index (429 with no error text) — says nothing of the cluster:
 * it is retried on a connection of its own (behind a Service, perhaps another
 * node) until the Mount's deadline, whatever the attempt cap, each wait at most
 * `nodeMaxDelayMs`. An election lasts seconds (8–28 s measured on OpenBao 2.7).
 */
import type { Deadline } from '../../util/deadline.js'
import type { Time } from '../../util/time.js'
import { ProviderError } from '../../errors.js'
import {
  VaultCallAborted,
  VaultConnectionError,
  VaultHttpError,
  VaultRedirect,
  isTimeout,
  type ConnectionFailureKind,
} from '../transport/call-errors.js'

export interface RetryPolicy {
  /** Total attempts, the first included. */
  maxAttempts: number
  /** Backoff ceiling of the first retry; doubles with every retry. */
  baseDelayMs: number
  /** No single wait is longer than this (Retry-After included). */
  maxDelayMs: number
  /** Waiting for a 429 never goes below this (a quota's interval is usually 1 s). */
  rateLimitFloorMs: number
  /** Do not start an attempt with less than this left before the deadline. */
  minAttemptMs: number
  /** No wait after one node's answer is longer than this: an election ends between two attempts. */
  nodeMaxDelayMs: number
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  rateLimitFloorMs: 250,
  minAttemptMs: 250,
  nodeMaxDelayMs: 1_000,
}

/** Connection failures that say nothing about the request itself: try again. TLS and the unknown are not blips. */
const RETRYABLE_KINDS: ReadonlySet<ConnectionFailureKind> = new Set([
  'timeout',
  'refused',
  'reset',
  'truncated',
  'dns',
  'unreachable',
])

/** True when no (complete) HTTP answer came back because the connection failed (not TLS, not a bug). */
export function isConnectionFailure(err: unknown): boolean {
  return err instanceof VaultConnectionError && RETRYABLE_KINDS.has(err.kind)
}

export type RetryDecision =
  | { retry: false }
  | {
      retry: true
      reason: string
      rateLimited?: boolean
      retryAfterMs?: number
      /** One node's answer: retried on another connection until the deadline (isNodeAnswer). */
      node?: true
    }

/** One node's answer, not the cluster's: a sealed node, a standby with no active node, behind, or redirecting. */
export function isNodeAnswer(err: unknown): err is VaultHttpError | VaultRedirect {
  return (
    (err instanceof VaultHttpError && err.node !== undefined) || (err instanceof VaultRedirect && err.status === 307)
  )
}

export function retryDecision(err: unknown): RetryDecision {
  if (err instanceof VaultConnectionError) {
    return RETRYABLE_KINDS.has(err.kind) ? { retry: true, reason: `connection failed (${err.code})` } : { retry: false }
  }
  if (err instanceof VaultRedirect) {
    return isNodeAnswer(err)
      ? { retry: true, reason: `a standby redirected (307 to ${err.shown})`, node: true }
      : { retry: false }
  }
  if (!(err instanceof VaultHttpError)) return { retry: false }
  if (err.node !== undefined)
    return { retry: true, reason: `one node's answer (${err.status}, ${err.node})`, node: true }
  const status = err.status
  if (status === 429)
    return { retry: true, reason: 'rate limited (429)', rateLimited: true, retryAfterMs: err.retryAfterMs }
  if (status === 412) return { retry: true, reason: 'standby not caught up (412)' }
  if (status >= 500 && status !== 501) return { retry: true, reason: `Vault answered ${status}` }
  return { retry: false }
}

/** Full jitter: uniform in [0, min(max, base·2^retry)]; `retry` counts from 0. */
export function backoffMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(retry, 20))
  return Math.floor(random() * ceiling)
}

/** How long to wait before retry number `retry`, honouring Retry-After and the 429 floor. */
export function delayFor(
  decision: Extract<RetryDecision, { retry: true }>,
  retry: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  if (decision.node === true) return Math.min(policy.nodeMaxDelayMs, backoffMs(retry, policy, random))
  let delay = backoffMs(retry, policy, random)
  if (decision.retryAfterMs !== undefined) delay = Math.max(delay, decision.retryAfterMs)
  else if (decision.rateLimited === true) delay += policy.rateLimitFloorMs
  return Math.min(delay, policy.maxDelayMs)
}

export interface RetryHooks {
  /** Called before every attempt (e.g. to fail fast while Vault is known to be down). */
  beforeAttempt?(attempt: number): void
  /** Called after a failed attempt, whether or not it will be retried. */
  onFailure?(err: unknown, attempt: number, decision: RetryDecision): void
  /** Called before waiting; for logs. */
  onRetry?(attempt: number, delayMs: number, reason: string): void
}

/** An attempt refused to start: the Mount's deadline had passed (the session's call options). */
function isOutOfTime(err: unknown): boolean {
  return err instanceof ProviderError && err.code === 'DEADLINE_EXCEEDED'
}

/** What an attempt is told: `freshConnection` after one node's answer (another node behind a Service). */
export interface AttemptOptions {
  freshConnection: boolean
}

/**
 * Runs `attempt` until it succeeds, a failure is not retryable, the attempts
 * are used up (one node's answers do not count), or the next wait would leave
 * too little of the deadline. The last failure is thrown as it was, with the
 * number of attempts made recorded on it (typed errors' `attempts`); when the
 * deadline ran out on an attempt after one node's answers, that answer is what
 * is thrown (it says why). A wait ends at once when the deadline's caller
 * leaves (VaultCallAborted). `random` (the jitter) is injected by tests.
 */
export async function withRetry<T>(
  attempt: (n: number, options: AttemptOptions) => Promise<T>,
  deadline: Deadline,
  time: Pick<Time, 'sleep'>,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
  hooks: RetryHooks = {},
  random: () => number = Math.random,
): Promise<T> {
  let lastError: unknown
  let lastNodeAnswer: unknown
  /** Attempts that count against maxAttempts: all but those after one node's answer. */
  let counted = 0
  let freshConnection = false
  for (let n = 1; ; n++) {
    try {
      hooks.beforeAttempt?.(n)
    } catch (refused) {
      // The breaker opened while this call was retrying: the call ends with what actually went wrong.
      throw n > 1 ? lastError : refused
    }
    try {
      return await attempt(n, { freshConnection })
    } catch (err) {
      const decision = retryDecision(err)
      hooks.onFailure?.(err, n, decision)
      if (err instanceof VaultHttpError || err instanceof VaultConnectionError || err instanceof VaultRedirect) {
        err.attempts = n
      }
      const nodeAnswer = decision.retry && decision.node === true
      if (nodeAnswer) lastNodeAnswer = err
      else counted += 1
      freshConnection = nodeAnswer
      // Out of time after a node's answers (the attempt timed out, or found no time left to start):
      // that answer says why (no active node, sealed). Timers are not exact, so "out" is "too little for another".
      const outOfTime = (isTimeout(err) || isOutOfTime(err)) && deadline.remainingMs() < policy.minAttemptMs
      const failure =
        lastNodeAnswer !== undefined && outOfTime
          ? Object.assign(lastNodeAnswer as VaultHttpError | VaultRedirect, { attempts: n })
          : err
      lastError = failure
      if (!decision.retry || counted >= policy.maxAttempts) throw failure
      const delay = delayFor(decision, n - 1, policy, random)
      if (deadline.remainingMs() - delay < policy.minAttemptMs) throw failure
      hooks.onRetry?.(n, delay, decision.reason)
      await time.sleep(delay, deadline.signal).catch(() => {
        throw new VaultCallAborted()
      })
    }
  }
}
