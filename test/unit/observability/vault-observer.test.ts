import t from 'tap'
// Who reports the calls (the Vault transport, one place for every call) is tested with the
// transport (test/unit/vault/transport-http.test.ts); here, the observer's own helpers.
import { combineObservers, operationOfCall } from '../../../src/observability/vault-observer.js'

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
