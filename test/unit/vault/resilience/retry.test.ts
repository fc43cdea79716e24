import t, { type Test } from 'tap'
import { Cancellation } from '../../../../src/util/cancellation.js'
import { Deadline } from '../../../../src/util/deadline.js'
import {
  VaultCallAborted,
  VaultConnectionError,
  VaultHttpError,
  parseRetryAfter,
  type ConnectionFailureKind,
} from '../../../../src/vault/transport/call-errors.js'
import {
  DEFAULT_RETRY_POLICY,
  abortableSleep,
  backoffMs,
  delayFor,
  retryDecision,
  withRetry,
  type RetryDecision,
  type RetryPolicy,
  type Sleep,
} from '../../../../src/vault/resilience/retry.js'

const answered = (status: number, retryAfter?: string): VaultHttpError =>
  new VaultHttpError(status, [], parseRetryAfter(retryAfter))
const socketError = (kind: ConnectionFailureKind, code = 'ECONNRESET'): VaultConnectionError =>
  new VaultConnectionError(kind, code, code)

/** The decision, which must be to retry: a failed assertion otherwise, never a skipped one. */
function mustRetry(t: Test, d: RetryDecision): Extract<RetryDecision, { retry: true }> {
  t.equal(d.retry, true, 'retried')
  if (!d.retry) throw new Error('expected a retry decision')
  return d
}

t.test('what is retried', async (t) => {
  for (const kind of ['refused', 'reset', 'truncated', 'timeout', 'dns', 'unreachable'] as const) {
    t.equal(retryDecision(socketError(kind)).retry, true, kind)
  }
  for (const s of [500, 502, 503, 504, 412, 429]) t.equal(retryDecision(answered(s)).retry, true, String(s))
  for (const s of [400, 401, 403, 404, 405, 501]) t.equal(retryDecision(answered(s)).retry, false, String(s))
  t.equal(retryDecision(socketError('tls', 'DEPTH_ZERO_SELF_SIGNED_CERT')).retry, false, 'TLS problems are not blips')
  t.equal(retryDecision(socketError('other', 'EWHAT')).retry, false, 'nor is the unknown')
  t.equal(retryDecision(new VaultCallAborted()).retry, false, 'nobody waits for the answer')
  t.equal(retryDecision(new Error('socket hang up')).retry, false, 'untyped errors are bugs, not blips')
  t.equal(retryDecision({ response: { statusCode: 503 } }).retry, false, 'no library error shape is read')
})

t.test('Retry-After', async (t) => {
  t.equal(parseRetryAfter('3'), 3000)
  t.equal(parseRetryAfter(['2']), 2000)
  t.equal(parseRetryAfter(new Date(Date.now() + 5000).toUTCString(), Date.now())! > 3000, true)
  t.equal(parseRetryAfter('soon'), undefined)
  const d = mustRetry(t, retryDecision(answered(429, '2')))
  t.same(d, { retry: true, reason: 'rate limited (429)', rateLimited: true, retryAfterMs: 2000 })
  t.equal(
    delayFor(d, 0, DEFAULT_RETRY_POLICY, () => 0),
    2000,
    'waits what Vault asked',
  )
  const noHeader = mustRetry(t, retryDecision(answered(429)))
  t.ok(delayFor(noHeader, 0, DEFAULT_RETRY_POLICY, () => 0) >= DEFAULT_RETRY_POLICY.rateLimitFloorMs)
  const huge = mustRetry(t, retryDecision(answered(429, '3600')))
  t.equal(delayFor(huge, 0, DEFAULT_RETRY_POLICY), DEFAULT_RETRY_POLICY.maxDelayMs, 'capped')
})

t.test('exponential backoff with full jitter', async (t) => {
  const p = DEFAULT_RETRY_POLICY
  t.equal(
    backoffMs(0, p, () => 0.999),
    Math.floor(0.999 * p.baseDelayMs),
  )
  t.equal(
    backoffMs(3, p, () => 0.5),
    Math.floor(0.5 * p.baseDelayMs * 8),
  )
  t.equal(
    backoffMs(30, p, () => 0.999),
    Math.floor(0.999 * p.maxDelayMs),
    'capped',
  )
  t.equal(
    backoffMs(5, p, () => 0),
    0,
    'full jitter reaches zero',
  )
})

/** Waits are recorded, not slept. */
const waits: number[] = []
const noSleep: Sleep = async (ms) => {
  waits.push(ms)
}

const fast: RetryPolicy = {
  ...DEFAULT_RETRY_POLICY,
  baseDelayMs: 5,
  maxDelayMs: 20,
  rateLimitFloorMs: 1,
  minAttemptMs: 10,
}

t.test('withRetry: bounded by attempts, deadline and retryability', async (t) => {
  let n = 0
  t.equal(
    await withRetry(
      async () => (++n < 3 ? Promise.reject(socketError('reset')) : 'ok'),
      Deadline.in(5000),
      fast,
      {},
      noSleep,
    ),
    'ok',
  )
  t.equal(n, 3)

  n = 0
  await t.rejects(
    withRetry(
      async () => {
        n++
        throw answered(404)
      },
      Deadline.in(5000),
      fast,
      {},
      noSleep,
    ),
  )
  t.equal(n, 1, '404 is not retried')

  n = 0
  await t.rejects(
    withRetry(
      async () => {
        n++
        throw answered(503)
      },
      Deadline.in(5000),
      fast,
      {},
      noSleep,
    ),
  )
  t.equal(n, fast.maxAttempts, 'stops after maxAttempts')

  n = 0
  await t.rejects(
    withRetry(
      async () => {
        n++
        throw answered(503)
      },
      Deadline.in(5),
      fast,
    ),
  )
  t.equal(n, 1, 'no retry without time left')

  n = 0
  const refusal = new Error('open')
  const cause = socketError('refused', 'ECONNREFUSED')
  await t.rejects(
    withRetry(
      async () => {
        n++
        throw cause
      },
      Deadline.in(5000),
      fast,
      {
        beforeAttempt: (a) => {
          if (a > 1) throw refusal
        },
      },
      noSleep,
    ),
    cause,
    'a hook can stop the retries (the breaker opening); the call ends with what went wrong',
  )
  t.equal(n, 1)
  await t.rejects(
    withRetry(
      async () => 'never',
      Deadline.in(5000),
      fast,
      {
        beforeAttempt: () => {
          throw refusal
        },
      },
      noSleep,
    ),
    refusal,
    "before a first attempt, the hook's refusal is the answer",
  )
})

t.test('the attempt count travels in the typed error', async (t) => {
  const err = (await withRetry(
    async () => {
      throw answered(503)
    },
    Deadline.in(60_000),
    fast,
    {},
    noSleep,
  ).catch((e: unknown) => e)) as VaultHttpError
  t.equal(err.attempts, fast.maxAttempts)
  const once = (await withRetry(
    async () => {
      throw answered(404)
    },
    Deadline.in(60_000),
    fast,
    {},
    noSleep,
  ).catch((e: unknown) => e)) as VaultHttpError
  t.equal(once.attempts, 1)
})

t.test('a wait between attempts ends when the caller leaves', async (t) => {
  const controller = new AbortController()
  let n = 0
  const pending = withRetry(
    async () => {
      n++
      throw answered(503)
    },
    Deadline.in(60_000, controller.signal),
    { ...DEFAULT_RETRY_POLICY, baseDelayMs: 60_000, maxDelayMs: 60_000, minAttemptMs: 0 },
    { onRetry: () => controller.abort() },
  )
  await t.rejects(pending, VaultCallAborted)
  t.equal(n, 1, 'no attempt after the caller left')
})

t.test(
  'abortableSleep ends at once when its cancellation aborts, and does not start for one already aborted',
  async (t) => {
    const cancel = new Cancellation()
    // Were its timer left running, this file would stay alive for a minute after its tests.
    const waiting = abortableSleep(60_000, cancel).then(
      () => 'slept',
      (err: unknown) => err,
    )
    cancel.abort()
    t.ok((await waiting) instanceof VaultCallAborted)
    const after = await abortableSleep(0, cancel).then(
      () => 'slept',
      (err: unknown) => err,
    )
    t.ok(after instanceof VaultCallAborted)
    t.equal(await abortableSleep(1, new Cancellation()).then(() => 'slept'), 'slept')
  },
)
