import t from 'tap'
import { Deadline } from '../../../src/util/deadline.js'
import {
  DEFAULT_RETRY_POLICY,
  backoffMs,
  delayFor,
  parseRetryAfter,
  retryDecision,
  withRetry,
  type RetryPolicy,
} from '../../../src/vault/retry.js'

const answered = (statusCode: number, headers: Record<string, string> = {}): unknown => ({
  response: { statusCode, body: {}, headers },
})
const socketError = (code: string): unknown => Object.assign(new Error(code), { code })

t.test('what is retried', async (t) => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ECONNABORTED', 'EAI_AGAIN']) {
    t.equal(retryDecision(socketError(code)).retry, true, code)
  }
  t.equal(retryDecision(new Error('socket hang up')).retry, true, 'hang-up')
  for (const s of [500, 502, 503, 504, 412, 429]) t.equal(retryDecision(answered(s)).retry, true, String(s))
  for (const s of [400, 401, 403, 404, 405, 501]) t.equal(retryDecision(answered(s)).retry, false, String(s))
  t.equal(retryDecision(socketError('DEPTH_ZERO_SELF_SIGNED_CERT')).retry, false, 'TLS problems are not blips')
  t.equal(retryDecision(new Error('boom')).retry, false)
})

t.test('Retry-After', async (t) => {
  t.equal(parseRetryAfter('3'), 3000)
  t.equal(parseRetryAfter(['2']), 2000)
  t.equal(parseRetryAfter(new Date(Date.now() + 5000).toUTCString(), Date.now())! > 3000, true)
  t.equal(parseRetryAfter('soon'), undefined)
  const d = retryDecision(answered(429, { 'retry-after': '2' }))
  t.same(d, { retry: true, reason: 'rate limited (429)', rateLimited: true, retryAfterMs: 2000 })
  if (d.retry)
    t.equal(
      delayFor(d, 0, DEFAULT_RETRY_POLICY, () => 0),
      2000,
      'waits what Vault asked',
    )
  const noHeader = retryDecision(answered(429))
  if (noHeader.retry)
    t.ok(delayFor(noHeader, 0, DEFAULT_RETRY_POLICY, () => 0) >= DEFAULT_RETRY_POLICY.rateLimitFloorMs)
  const huge = retryDecision(answered(429, { 'retry-after': '3600' }))
  if (huge.retry) t.equal(delayFor(huge, 0, DEFAULT_RETRY_POLICY), DEFAULT_RETRY_POLICY.maxDelayMs, 'capped')
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
    await withRetry(async () => (++n < 3 ? Promise.reject(socketError('ECONNRESET')) : 'ok'), Deadline.in(5000), fast),
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
  await t.rejects(
    withRetry(
      async () => {
        n++
        throw socketError('ECONNREFUSED')
      },
      Deadline.in(5000),
      fast,
      {
        beforeAttempt: (a) => {
          if (a > 1) throw refusal
        },
      },
    ),
    refusal,
    'a hook can stop the retries (the breaker opening)',
  )
  t.equal(n, 1)
})
