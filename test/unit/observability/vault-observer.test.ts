import t from 'tap'
// Who reports the calls (the Vault transport, one place for every call) is tested with the
// transport (test/unit/vault/transport-http.test.ts); here, the observer's own helpers.
import { combineObservers, operationByRule, operationOfCall } from '../../../src/observability/vault-observer.js'

t.test('operations from method and path', async (t) => {
  t.equal(operationByRule('POST', '/auth/kubernetes/login'), 'login', 'the rule alone')
  t.equal(operationByRule('GET', 'v1/sys/health?standby=1'), 'health')
  t.equal(operationByRule('PUT', '/secret/data/x'), 'write')
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

t.test('operationOfCall gives what the whole rule gives, for any leading slashes, v1/ and query', async (t) => {
  // operationOfCall decides most paths without the rule (a fast path); it must never disagree with it.
  const prefixes = ['', '/', '//', 'v1/', '/v1/', '//v1/', '/v1//', 'v1/v1/', '?', '/v1?', '/?/', 'v1', '/v1']
  const bodies = [
    'auth/kubernetes/login',
    'auth/a/b/login',
    'auth//login',
    'auth/token/renew-self',
    'auth/token/revoke-self',
    'auth/token/lookup-self',
    'sys/leases/renew',
    'sys/leases/revoke',
    'sys/leases/lookup',
    'sys/health',
    'sys/health?standby=1',
    'auth/x/login?y=1',
    'auth?/x/login',
    'sys?/health',
    'auth',
    'sys',
    'authx/y/login',
    'sysx/health',
    'secret/data/app',
    'secret/auth/x/login',
    '',
  ]
  let compared = 0
  for (const method of ['GET', 'get', 'POST', 'PUT', 'LIST', 'DELETE'])
    for (const prefix of prefixes)
      for (const body of bodies) {
        t.equal(
          operationOfCall(method, prefix + body),
          operationByRule(method, prefix + body),
          `${method} ${prefix}${body}`,
        )
        compared++
      }
  t.equal(compared, 6 * prefixes.length * bodies.length)
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
