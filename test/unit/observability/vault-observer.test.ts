import t from 'tap'
import {
  combineObservers,
  instrumentClient,
  observeVaultCall,
  operationOfCall,
  type VaultCallEvent,
} from '../../../src/observability/vault-observer.js'

t.test('observeVaultCall reports success and failure and passes results through', async (t) => {
  const events: VaultCallEvent[] = []
  const obs = { vaultCall: (e: VaultCallEvent) => events.push(e) }
  t.equal(await observeVaultCall(obs, 'read', 'GET a', async () => 42), 42)
  const err = Object.assign(new Error('denied'), { response: { statusCode: 403 } })
  await t.rejects(
    observeVaultCall(obs, 'read', 'GET b', async () => {
      throw err
    }),
    err,
  )
  await t.rejects(
    observeVaultCall(obs, 'login', 'POST auth/x/login', async () => {
      throw Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })
    }),
  )
  t.match(events, [
    { operation: 'read', ok: true, status: undefined, description: 'GET a' },
    { operation: 'read', ok: false, status: 403 },
    { operation: 'login', ok: false, status: undefined },
  ])
  t.ok(events.every((e) => e.durationMs >= 0))
})

t.test('a failing observer never fails the call; no observer is a pass-through', async (t) => {
  const bad = {
    vaultCall: () => {
      throw new Error('boom')
    },
  }
  t.equal(await observeVaultCall(bad, 'read', 'GET a', async () => 'ok'), 'ok')
  t.equal(await observeVaultCall(undefined, 'read', 'GET a', async () => 'plain'), 'plain')
})

t.test('operations from method and path', async (t) => {
  t.equal(operationOfCall('POST', '/auth/kubernetes/login'), 'login')
  t.equal(operationOfCall('POST', '/auth/team/a/login'), 'login')
  t.equal(operationOfCall('POST', '/auth/token/renew-self'), 'renew')
  t.equal(operationOfCall('PUT', '/sys/leases/renew'), 'renew')
  t.equal(operationOfCall('POST', '/auth/token/revoke-self'), 'revoke')
  t.equal(operationOfCall('GET', '/auth/token/lookup-self'), 'lookup')
  t.equal(operationOfCall('GET', '/sys/health'), 'health')
  t.equal(operationOfCall('GET', '/secret/data/app?version=2'), 'read')
  t.equal(operationOfCall('PUT', '/pki/issue/web'), 'write')
  t.equal(operationOfCall('get', 'v1/secret/login'), 'read', 'a secret merely named login is a read')
})

t.test('instrumentClient wraps request once, keeping this and results', async (t) => {
  const events: VaultCallEvent[] = []
  const client = {
    calls: 0,
    async request(opts: { path: string; method: string }) {
      this.calls += 1
      return { path: opts.path }
    },
  }
  t.equal(instrumentClient(client, undefined), client)
  instrumentClient(client, { vaultCall: (e) => events.push(e) })
  t.same(await client.request({ path: '/auth/jwt/login', method: 'post' }), { path: '/auth/jwt/login' })
  await client.request({ path: '/secret/data/a', method: 'GET' })
  t.equal(client.calls, 2)
  t.match(events, [
    { operation: 'login', description: 'POST auth/jwt/login', ok: true },
    { operation: 'read', description: 'GET secret/data/a', ok: true },
  ])
})

t.test('combineObservers', async (t) => {
  t.equal(combineObservers(undefined, undefined), undefined)
  const one = { vaultCall: () => undefined }
  t.equal(combineObservers(undefined, one), one)
  const seen: string[] = []
  const both = combineObservers(
    { vaultCall: () => seen.push('a'), cacheLookup: () => seen.push('a-cache') },
    { vaultCall: () => seen.push('b') },
  )!
  both.vaultCall({ operation: 'read', ok: true, status: undefined, durationMs: 1, description: '' })
  both.cacheLookup?.('token', true)
  both.leaseReuse?.(true)
  t.same(seen, ['a', 'b', 'a-cache'])
})
