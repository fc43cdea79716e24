// The Mount runner against a fake Vault transport: it reads every planned request as the pod,
// and a Mount whose caller leaves stops at once: in-flight Vault calls are aborted and no new
// one starts. Time is injected; nothing sleeps.
import { Writable } from 'node:stream'
import t from 'tap'
import type { ProviderError } from '../../../src/errors.js'
import { ephemeralKey } from '../../../src/hmac/hmac-key.js'
import { MOUNT_FETCH_CONCURRENCY, runMount, type MountDeps } from '../../../src/mount/mount.js'
import { createLogger } from '../../../src/observability/logger.js'
import type { MountSpec } from '../../../src/request/types.js'
import { Deadline } from '../../../src/util/deadline.js'
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
  const pool = new SessionPool(
    fakePoolOptions(
      logger,
      { get: async () => vault },
      {
        clock: time.clock,
        timers: time,
        sleep: async () => undefined,
      },
    ),
  )
  return { pool, kube: undefined, hmacKey: ephemeralKey(), logger, allowlist: ANY_ADDRESS, breakers: NO_BREAKER }
}

t.test('every planned request is read as the pod', async (t) => {
  const vault = new FakeVault()
  vault.on(/login$/, () => loginAnswer('hvs.t'))
  vault.on(/^GET secret\/data\//, (c) => kvAnswer(c.path))
  const time = new ManualTime()
  const d = deps(vault, time)
  t.teardown(() => d.pool.close())
  const result = await runMount(spec(6), d, Deadline.in(30_000, undefined, time.clock))
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
  const mount = runMount(spec(20), d, Deadline.in(30_000, driver.signal, time.clock)).catch((e: ProviderError) => e)
  await time.advance(0)
  t.equal(vault.inFlight, MOUNT_FETCH_CONCURRENCY, 'the first reads are in flight')
  driver.abort()
  const err = (await mount) as ProviderError
  t.equal(err.code, 'DEADLINE_EXCEEDED')
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
  const err = (await runMount(spec(3), d, Deadline.in(30_000, gone.signal, time.clock)).catch(
    (e) => e,
  )) as ProviderError
  t.equal(err.code, 'DEADLINE_EXCEEDED')
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
  const leaving = runMount(spec(1), d, Deadline.in(30_000, first.signal, time.clock)).catch((e: ProviderError) => e)
  const staying = runMount(spec(1), d, Deadline.in(30_000, undefined, time.clock))
  await time.advance(0)
  first.abort()
  t.equal(((await leaving) as ProviderError).code, 'DEADLINE_EXCEEDED')
  reads.open()
  const result = await staying
  t.equal(result.objects.length, 1)
  t.equal(vault.count(/^GET/), 1, 'one read, shared')
})
