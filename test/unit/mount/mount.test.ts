// The Mount runner against a fake Vault transport: it reads every planned request as the pod,
// and a Mount whose caller leaves stops at once: in-flight Vault calls are aborted and no new
// one starts. Time is injected; nothing sleeps.
import { Writable } from 'node:stream'
import t from 'tap'
import type { ProviderError } from '../../../src/errors.js'
import { ephemeralKey } from '../../../src/hmac/hmac-key.js'
import { NodeBudget } from '../../../src/mount/budget.js'
import {
  MOUNT_FETCH_CONCURRENCY,
  runMount as runMountWith,
  type MountDeps,
  type MountResult,
} from '../../../src/mount/mount.js'
import { RenderTurns } from '../../../src/mount/render-turns.js'
import { createLogger } from '../../../src/observability/logger.js'
import type { MountSpec } from '../../../src/request/types.js'
import { Deadline } from '../../../src/util/deadline.js'
import { SecretNotStored } from '../../../src/vault/failure-to-error.js'
import { SessionPool } from '../../../src/vault/sessions/pool.js'
import {
  ANY_ADDRESS,
  FakeVault,
  NO_BREAKER,
  fakePoolOptions,
  gate,
  kvAnswer,
  loginAnswer,
} from '../../support/fake-vault.js'
import { errorBodyOf, VaultHttpError, vaultErrorsOf } from '../../../src/vault/transport/call-errors.js'
import { signServiceAccountJwt } from '../../support/jwt.js'
import { ManualTime } from '../../support/manual-time.js'

const logger = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }))
const pod = { name: 'web-0', namespace: 'shop', uid: '8f7c7a8e-0000-4000-8000-000000000001', serviceAccount: 'web' }

function spec(objects: number): MountSpec {
  const token = signServiceAccountJwt({
    namespace: pod.namespace,
    serviceAccount: pod.serviceAccount,
    podName: pod.name,
    podUid: pod.uid,
    audience: 'vault',
  })
  return {
    pod,
    secretProviderClass: 'web-secrets',
    roleName: 'web',
    authMount: 'kubernetes',
    audience: 'vault',
    vault: { address: 'https://vault.test:8200', tls: { skipVerify: false } },
    readConsistency: 'strong',
    objects: Array.from({ length: objects }, (_, i) => ({
      objectName: `o${i}`,
      secretPath: `secret/data/o${i}`,
      query: [],
      method: 'GET' as const,
      secretKey: 'value',
      encoding: 'utf-8' as const,
      config: {},
      configJson: '{}',
    })),
    defaultMode: 0o644,
    podTokens: new Map([['vault', { token }]]),
  }
}

function deps(vault: FakeVault, time: ManualTime): MountDeps {
  const pool = new SessionPool(fakePoolOptions(logger, { get: async () => vault }, time))
  return {
    pool,
    kube: undefined,
    hmacKey: ephemeralKey(),
    logger,
    allowlist: ANY_ADDRESS,
    breakers: NO_BREAKER,
    time,
    renderTurns: new RenderTurns(),
  }
}

/** A Mount with a budget of its own, roomy enough for these tests (budget.test.ts tests the budget). */
function runMount(s: MountSpec, d: MountDeps, deadline: Deadline): Promise<MountResult> {
  const budget = new NodeBudget({ mountBytes: 16 * 1024 * 1024, nodeBytes: 64 * 1024 * 1024 }).open(s.pod.namespace)
  return runMountWith(s, d, deadline, budget).finally(() => budget.release())
}

t.test('every planned request is read as the pod', async (t) => {
  const vault = new FakeVault()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret\/data\//, (c) => kvAnswer(c.path))
  const time = new ManualTime()
  const d = deps(vault, time)
  t.teardown(() => d.pool.close())
  const result = await runMount(spec(6), d, Deadline.in(30_000, undefined, time))
  t.equal(result.objects.length, 6)
  t.equal(result.vaultCalls, 6)
  t.equal(vault.count(/^GET/), 6)
  t.equal(vault.count(/login$/), 1)
})

t.test('a cancelled Mount aborts its Vault calls in flight and starts no new one', async (t) => {
  const vault = new FakeVault()
  const reads = gate()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret\/data\//, async (c) => {
    await reads.wait
    return kvAnswer(c.path)
  })
  const time = new ManualTime()
  const d = deps(vault, time)
  t.teardown(() => d.pool.close())
  const driver = new AbortController()
  const mount = runMount(spec(20), d, Deadline.in(30_000, driver.signal, time)).catch((e: ProviderError) => e)
  await time.advance(0)
  t.equal(vault.inFlight, MOUNT_FETCH_CONCURRENCY, 'the first reads are in flight')
  driver.abort()
  const err = (await mount) as ProviderError
  t.equal(err.code, 'CANCELLED')
  t.match(err.message, /cancelled the Mount/)
  t.equal(vault.inFlight, 0, 'the reads in flight were aborted')
  t.equal(vault.count(/^GET/), MOUNT_FETCH_CONCURRENCY, 'no read started after the driver cancelled')
  reads.open()
})

t.test('a Mount whose caller has already left sends nothing to Vault', async (t) => {
  const vault = new FakeVault()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  const time = new ManualTime()
  const d = deps(vault, time)
  t.teardown(() => d.pool.close())
  const gone = new AbortController()
  gone.abort()
  const err = (await runMount(spec(3), d, Deadline.in(30_000, gone.signal, time)).catch((e) => e)) as ProviderError
  t.equal(err.code, 'CANCELLED')
  t.equal(vault.calls.length, 0)
})

t.test('two Mounts of one pod share a read; the one whose caller leaves does not fail the other', async (t) => {
  const vault = new FakeVault()
  const reads = gate()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret\/data\//, async (c) => {
    await reads.wait
    return kvAnswer(c.path)
  })
  const time = new ManualTime()
  const d = deps(vault, time)
  t.teardown(() => d.pool.close())
  const first = new AbortController()
  const leaving = runMount(spec(1), d, Deadline.in(30_000, first.signal, time)).catch((e: ProviderError) => e)
  const staying = runMount(spec(1), d, Deadline.in(30_000, undefined, time))
  await time.advance(0)
  first.abort()
  t.equal(((await leaving) as ProviderError).code, 'CANCELLED')
  reads.open()
  const result = await staying
  t.equal(result.objects.length, 1)
  t.equal(vault.count(/^GET/), 1, 'one read, shared')
})

/** What the transport throws for a 404 with this body. */
const answered404 = (body: unknown): never => {
  throw new VaultHttpError(404, vaultErrorsOf(body), undefined, errorBodyOf(body))
}
const KV_DELETED = {
  request_id: 'r',
  data: { data: null, metadata: { deletion_time: '2026-01-01T00:00:00Z', destroyed: false, version: 2 } },
}

/** A Mount of o0 (optional) and o1 (present) where o0's read, or the login, is answered 404 with `body`. */
function optionalMount(where: 'login' | 'read', body: unknown): { mount: Promise<MountResult>; close(): void } {
  const s = spec(2)
  s.objects[0]!.optional = true
  const vault = new FakeVault()
  vault.on(/login$/, () => (where === 'login' ? answered404(body) : loginAnswer('hvs.t')))
  vault.on(/^GET secret\/data\/o1$/, () => kvAnswer('present'))
  vault.on(/^GET secret\/data\/o0$/, () => answered404(body))
  const time = new ManualTime()
  const d = deps(vault, time)
  return { mount: runMount(s, d, Deadline.in(30_000, undefined, time)), close: () => d.pool.close() }
}

t.test('an optional object is skipped when Vault says nothing is stored at its own path', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['KV: no such secret or version', { errors: [] }],
    ['KV v2: the version is deleted', KV_DELETED],
  ]
  for (const [what, body] of cases) {
    const { mount, close } = optionalMount('read', body)
    const result = await mount
    close()
    t.same(result.skippedOptional, ['o0'], `${what}: the optional object is skipped`)
    t.same(
      result.objects.map((o) => o.id),
      ['o1'],
      `${what}: the other object is written`,
    )
  }
})

t.test('any other 404 fails a Mount of optional objects with its own code', async (t) => {
  const cases: Array<[string, 'login' | 'read', unknown]> = [
    ['a mount that is not there', 'read', { errors: ['no handler for route "nope/x". route entry not found.'] }],
    ['a namespace that is not there', 'read', { errors: ['namespace not found'] }],
    ['a web server that is not Vault', 'read', '<html><body>404 Not Found</body></html>'],
    ['JSON of another server', 'read', { message: 'Not Found' }],
    ['a login answered 404 with no error text', 'login', { errors: [] }],
    ['a login in a namespace that is not there', 'login', { errors: ['namespace not found'] }],
  ]
  for (const [what, where, body] of cases) {
    const { mount, close } = optionalMount(where, body)
    const err = await mount.then(
      () => undefined,
      (e: unknown) => e as ProviderError,
    )
    close()
    t.equal(err?.code, 'VAULT_NOT_FOUND', `${what}: the Mount fails with its own code`)
    t.notOk(err instanceof SecretNotStored, `${what}: not the answer optional skips`)
  }
})
