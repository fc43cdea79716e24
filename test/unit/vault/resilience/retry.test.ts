import t, { type Test } from 'tap'
import { Deadline } from '../../../../src/util/deadline.js'
import type { Time } from '../../../../src/util/time.js'
import { ProviderError } from '../../../../src/errors.js'
import {
  VaultCallAborted,
  VaultConnectionError,
  VaultHttpError,
  VaultRedirect,
  parseRetryAfter,
  type ConnectionFailureKind,
} from '../../../../src/vault/transport/call-errors.js'
import {
  DEFAULT_RETRY_POLICY,
  backoffMs,
  delayFor,
  isNodeAnswer,
  retryDecision,
  withRetry,
  type RetryDecision,
  type RetryPolicy,
} from '../../../../src/vault/resilience/retry.js'
import { ManualTime } from '../../../support/manual-time.js'

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

/** Waits are recorded, not slept; the clock stands still. */
const waits: number[] = []
const clock = new ManualTime()
const noSleep: Pick<Time, 'sleep'> = {
  sleep: async (ms) => {
    waits.push(ms)
  },
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
      Deadline.in(5000, undefined, clock),
      noSleep,
      fast,
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
      Deadline.in(5000, undefined, clock),
      noSleep,
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
      Deadline.in(5000, undefined, clock),
      noSleep,
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
      Deadline.in(5, undefined, clock),
      noSleep,
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
      Deadline.in(5000, undefined, clock),
      noSleep,
      fast,
      {
        beforeAttempt: (a) => {
          if (a > 1) throw refusal
        },
      },
    ),
    cause,
    'a hook can stop the retries (the breaker opening); the call ends with what went wrong',
  )
  t.equal(n, 1)
  await t.rejects(
    withRetry(async () => 'never', Deadline.in(5000, undefined, clock), noSleep, fast, {
      beforeAttempt: () => {
        throw refusal
      },
    }),
    refusal,
    "before a first attempt, the hook's refusal is the answer",
  )
})

t.test('the attempt count travels in the typed error', async (t) => {
  const err = (await withRetry(
    async () => {
      throw answered(503)
    },
    Deadline.in(60_000, undefined, clock),
    noSleep,
    fast,
  ).catch((e: unknown) => e)) as VaultHttpError
  t.equal(err.attempts, fast.maxAttempts)
  const once = (await withRetry(
    async () => {
      throw answered(404)
    },
    Deadline.in(60_000, undefined, clock),
    noSleep,
    fast,
  ).catch((e: unknown) => e)) as VaultHttpError
  t.equal(once.attempts, 1)
})

t.test('a caller leaving during a wait between attempts ends it at once', async (t) => {
  const time = new ManualTime()
  const controller = new AbortController()
  let n = 0
  const pending = withRetry(
    async () => {
      n++
      throw answered(503)
    },
    Deadline.in(60_000, controller.signal, time),
    time,
    { ...DEFAULT_RETRY_POLICY, baseDelayMs: 60_000, maxDelayMs: 60_000, minAttemptMs: 0 },
    {},
    () => 0.5,
  ).then(
    () => 'answered',
    (err: unknown) => err,
  )
  await time.advance(1_000)
  t.equal(time.timers, 1, 'waiting for the next attempt')
  controller.abort()
  t.ok((await pending) instanceof VaultCallAborted)
  t.equal(time.timers, 0, 'the wait is over, not left running')
  t.equal(n, 1, 'no attempt after the caller left')
})

/** What a node answers, as the transport throws it: Vault's JSON errors[]. */
const nodeAnswer = (status: number, errors: string[]): VaultHttpError =>
  new VaultHttpError(status, errors, undefined, { kind: 'errors', entries: errors.length })
const SEALED = (): VaultHttpError => nodeAnswer(503, ['Vault is sealed'])
const NO_ACTIVE_NODE = (): VaultHttpError =>
  nodeAnswer(500, ['local node not active but active cluster node not found'])
const BEHIND = (): VaultHttpError => nodeAnswer(429, [])
const TO_OLD_LEADER = (): VaultRedirect => new VaultRedirect(307, 'http://10.0.0.1:8200', '"http://10.0.0.1:8200"')

t.test("one node's answers: retried on another connection, whatever the attempt cap", async (t) => {
  for (const [name, err] of [
    ['sealed (503)', SEALED()],
    ['no active node (500)', NO_ACTIVE_NODE()],
    ['behind the index (429, no error text)', BEHIND()],
    ['a standby redirecting (307, same path)', TO_OLD_LEADER()],
  ] as const) {
    t.match(retryDecision(err), { retry: true, node: true }, name)
  }
  t.match(retryDecision(new VaultRedirect(308, 'http://x', '"http://x"')), { retry: false }, 'a 308 is not a standby')
  t.notOk(mustRetry(t, retryDecision(nodeAnswer(503, ['upstream connect error']))).node, 'a 503 of another kind')
  t.notOk(mustRetry(t, retryDecision(nodeAnswer(429, ['rate limit quota exceeded']))).node, 'a quota: rate limited')
  t.notOk(mustRetry(t, retryDecision(answered(503))).node, 'a 503 without Vault’s body')
  t.notOk(mustRetry(t, retryDecision(nodeAnswer(500, ['internal error']))).node)
  const d = mustRetry(t, retryDecision(SEALED()))
  for (let retry = 0; retry < 30; retry++) {
    t.ok(delayFor(d, retry, DEFAULT_RETRY_POLICY, () => 0.999) <= DEFAULT_RETRY_POLICY.nodeMaxDelayMs)
  }
  t.equal(DEFAULT_RETRY_POLICY.nodeMaxDelayMs, 1000, 'an election ends between two attempts at most 1 s apart')
})

/** A deadline on a clock the injected sleep moves: nothing waits. */
function manualDeadline(ms: number): { deadline: Deadline; time: Pick<Time, 'now' | 'sleep'> } {
  let now = 0
  const time: Pick<Time, 'now' | 'sleep'> = {
    now: () => now,
    sleep: async (wait) => {
      now += wait
    },
  }
  return { deadline: new Deadline(ms, undefined, time), time }
}

t.test('an election: retried until the deadline on fresh connections, then the node answer says why', async (t) => {
  const { deadline, time } = manualDeadline(18_000)
  const fresh: boolean[] = []
  const err = (await withRetry(
    async (_n, { freshConnection }) => {
      fresh.push(freshConnection)
      throw fresh.length % 2 === 0 ? TO_OLD_LEADER() : NO_ACTIVE_NODE()
    },
    deadline,
    time,
    DEFAULT_RETRY_POLICY,
    {},
    () => 0.5,
  ).catch((e: unknown) => e)) as VaultHttpError | VaultRedirect
  t.ok(
    fresh.length > DEFAULT_RETRY_POLICY.maxAttempts * 3,
    `${fresh.length} attempts, not ${DEFAULT_RETRY_POLICY.maxAttempts}`,
  )
  t.ok(
    time.now() > 18_000 - DEFAULT_RETRY_POLICY.nodeMaxDelayMs - DEFAULT_RETRY_POLICY.minAttemptMs,
    'until the deadline',
  )
  t.same(fresh.slice(0, 3), [false, true, true], 'the first on the pool, every retry on a connection of its own')
  t.ok(isNodeAnswer(err), 'the last node answer is the failure')
  t.equal(err.attempts, fresh.length)
})

t.test('the new leader answers: the call succeeds on the next attempt', async (t) => {
  const { deadline, time } = manualDeadline(18_000)
  let n = 0
  const answer = await withRetry(
    async () => {
      n++
      if (n <= 12) throw n % 3 === 0 ? SEALED() : TO_OLD_LEADER()
      return 'served'
    },
    deadline,
    time,
    DEFAULT_RETRY_POLICY,
    {},
  )
  t.equal(answer, 'served')
  t.equal(n, 13)
})

t.test(
  'out of time on an attempt after node answers: the node answer, not how time ran out, is the failure',
  async (t) => {
    const timeout = (): Error => socketError('timeout', 'ETIMEDOUT')
    const refusal = (): Error =>
      new ProviderError('DEADLINE_EXCEEDED', 'the Mount ran out of time before this Vault call')
    for (const [name, sleepFor, failure] of [
      ['the attempt hangs until the deadline, then times out', (left: number) => left, timeout],
      // Timers are not exact: the call's timer fires just before the deadline's clock says so.
      ['the call times out a millisecond before the deadline', (left: number) => left - 1, timeout],
      // A wait overslept (a loaded node): the session's call options find the deadline passed.
      ['no time left to start the attempt', (left: number) => left + 20, refusal],
    ] as const) {
      const { deadline, time } = manualDeadline(5_000)
      let n = 0
      const err = await withRetry(
        async () => {
          n++
          if (n === 1) throw SEALED()
          await time.sleep(sleepFor(deadline.remainingMs()), deadline.signal)
          throw failure()
        },
        deadline,
        time,
        DEFAULT_RETRY_POLICY,
        {},
      ).catch((e: unknown) => e)
      t.ok(err instanceof VaultHttpError && err.node === 'sealed', `${name}: the sealed node says why`)
      t.equal((err as VaultHttpError).attempts, 2, name)
    }
  },
)

t.test('a deadline refusal with no node answer before it stays a deadline refusal', async (t) => {
  const { deadline, time } = manualDeadline(5_000)
  const refusal = new ProviderError('DEADLINE_EXCEEDED', 'the Mount ran out of time before this Vault call')
  const err = await withRetry(
    async () => {
      await time.sleep(6_000, deadline.signal)
      throw refusal
    },
    deadline,
    time,
    DEFAULT_RETRY_POLICY,
    {},
  ).catch((e: unknown) => e)
  t.equal(err, refusal)
})

t.test(
  'other failures after node answers still count against the attempt cap, and need no fresh connection',
  async (t) => {
    const { deadline, time } = manualDeadline(60_000)
    const fresh: boolean[] = []
    await withRetry(
      async (_n, { freshConnection }) => {
        fresh.push(freshConnection)
        throw fresh.length <= 10 ? SEALED() : socketError('reset')
      },
      deadline,
      time,
      DEFAULT_RETRY_POLICY,
      {},
    ).catch(() => undefined)
    t.equal(fresh.length, 10 + DEFAULT_RETRY_POLICY.maxAttempts)
    t.same(fresh.slice(10), [true, false, false, false, false])
  },
)
