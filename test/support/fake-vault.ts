// Stand-in for the Vault transport in unit tests of the session, the pool and the Mount runner:
// it records every call and answers from a script, so tests can hold an answer, fail it, or
// check what was sent. The real transport is tested against real HTTP servers and OpenBao.
import type { Logger } from '../../src/observability/logger.js'
import type { Time } from '../../src/util/time.js'
import { VaultCallAborted, VaultHttpError } from '../../src/vault/transport/call-errors.js'
import type { SessionPoolOptions } from '../../src/vault/sessions/pool.js'
import type { TransportSource } from '../../src/vault/transport/registry.js'
import type { VaultAnswer, VaultCall, VaultCaller } from '../../src/vault/transport/transport.js'

/** The breaker layer where a test is not about it: no address is ever failed fast. */
export const NO_BREAKER = { hooks: () => ({}), admit: () => undefined }

/** The allow-list where a test is not about it: every address (as with no -vault-addr-allowlist). */
export const ANY_ADDRESS = { check: () => undefined }

/**
 * SessionPool options for unit tests on fake Vaults: pod scope, nothing kept past a Mount, no idle
 * revocation, on the test's time (test/support/manual-time.ts); `more` sets what a test is about
 * (node-vault's loader, the scope…).
 */
export function fakePoolOptions(
  logger: Logger,
  transports: TransportSource,
  time: Time,
  more: Partial<SessionPoolOptions> = {},
): SessionPoolOptions {
  return {
    maxSessions: 10,
    scope: 'pod',
    staticFreshnessMs: 0,
    shareDynamic: false,
    idleRevokeMs: 0,
    logger,
    transports,
    breakers: NO_BREAKER,
    time,
    ...more,
  }
}

export type Handler = (call: VaultCall) => VaultAnswer | Promise<VaultAnswer>

/** A login answer for role `web` of service account shop/web (what kubernetes auth puts in metadata). */
export function loginAnswer(token: string, ttlSec = 60, renewable = true): VaultAnswer {
  return {
    status: 200,
    body: {
      auth: {
        client_token: token,
        lease_duration: ttlSec,
        renewable,
        metadata: { role: 'web', service_account_namespace: 'shop', service_account_name: 'web' },
      },
    },
  }
}

export const kvAnswer = (value: string): VaultAnswer => ({
  status: 200,
  body: { lease_id: '', lease_duration: 0, renewable: false, data: { data: { value } } },
})

export const denied = (): never => {
  throw new VaultHttpError(403, ['permission denied'])
}

export class FakeVault implements VaultCaller {
  readonly address: string
  readonly calls: VaultCall[] = []
  /** Calls whose answer has not been given yet (handlers that return a pending promise). */
  inFlight = 0
  private readonly handlers: Array<[RegExp, Handler]> = []

  constructor(address = 'https://vault.test:8200') {
    this.address = address
  }

  /** The first route whose pattern matches `METHOD path` answers. */
  on(pattern: RegExp, handler: Handler): this {
    this.handlers.unshift([pattern, handler])
    return this
  }

  count(pattern: RegExp): number {
    return this.calls.filter((c) => pattern.test(`${c.method} ${c.path}`)).length
  }

  async call(c: VaultCall): Promise<VaultAnswer> {
    // Like the transport: a caller already gone sends nothing.
    if (c.signal?.aborted === true) throw new VaultCallAborted()
    this.calls.push(c)
    const route = this.handlers.find(([p]) => p.test(`${c.method} ${c.path}`))
    if (!route) throw new VaultHttpError(404, [`no route for ${c.method} ${c.path}`])
    this.inFlight++
    try {
      const answer = route[1](c)
      if (!(answer instanceof Promise)) return answer
      // Like the transport: the caller's signal ends the call at once.
      return await new Promise<VaultAnswer>((resolve, reject) => {
        const gone = (): void => reject(new VaultCallAborted())
        c.signal?.addEventListener('abort', gone)
        answer.then(resolve, reject).finally(() => c.signal?.removeEventListener('abort', gone))
      })
    } finally {
      this.inFlight--
    }
  }
}

/** An answer that comes when the test says so. */
export function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void
  const wait = new Promise<void>((r) => (open = r))
  return { wait, open }
}
