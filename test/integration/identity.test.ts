// Logging in as the pod: jwt auth, audiences, the auth-mount parameters, and
// refusals that show Vault's own reason. What needs Kubernetes itself (tokens
// from kube-apiserver, kubernetes auth with a real TokenReview, the TokenRequest
// fallback, the HMAC key Secret) is in test/e2e/ against a real API server.
import t from 'tap'
import { configureJwtAuth, createJwtRole } from '../support/jwt.js'
import { Fixture, JWT_MOUNT, DEFAULT_POLICY } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'

t.test('identity and login', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  await fx.kvPut('id', { value: 'identity-secret-Qw7' })
  const objects = [{ objectName: 'v', secretPath: 'secret/data/id', secretKey: 'value' }]

  t.test('jwt auth with the driver-supplied token', async (t) => {
    const { result, files } = await fx.mount({ params: { objects } })
    t.ok(result.ok, result.message)
    t.equal(files.get('v')?.bytes.toString(), 'identity-secret-Qw7')
  })

  t.test('a service account the role does not bind is denied with Vault’s message', async (t) => {
    const { result } = await fx.mount({ pod: { serviceAccount: 'intruder' }, params: { objects } })
    t.notOk(result.ok)
    t.equal(result.grpcCode, 'PermissionDenied')
    t.match(
      result.message,
      /login to Vault at http:\/\/127\.0\.0\.1:\d+ \(role "app", auth mount "jwt"\): Vault answered 40[03]: .*sub/,
    )
  })

  t.test('a policy that does not cover the path is PermissionDenied naming the path', async (t) => {
    await fx.bao.api('POST', '/v1/sys/mounts/other', { type: 'kv', options: { version: '2' } })
    await fx.bao.api('POST', '/v1/other/data/x', { data: { a: 'b' } })
    const { result } = await fx.mount({
      params: { objects: [{ objectName: 'o', secretPath: 'other/data/x', secretKey: 'a' }] },
    })
    t.notOk(result.ok)
    t.equal(result.grpcCode, 'PermissionDenied')
    t.match(
      result.message,
      /object "o": GET other\/data\/x \(role "app", auth mount "jwt"\): Vault answered 403: permission denied$/,
    )
  })

  t.test('custom audience', async (t) => {
    await createJwtRole(fx.bao, JWT_MOUNT, 'custom-aud', {
      policies: [DEFAULT_POLICY],
      boundAudiences: ['my-vault'],
      boundSubject: 'system:serviceaccount:default:app',
    })
    const ok = await fx.mount({
      pod: { tokenAudience: 'my-vault' },
      params: { objects, roleName: 'custom-aud', audience: 'my-vault' },
    })
    t.ok(ok.result.ok, ok.result.message)
    t.equal(ok.files.get('v')?.bytes.toString(), 'identity-secret-Qw7')

    const missing = await fx.mount({ params: { objects, roleName: 'custom-aud', audience: 'my-vault' } })
    t.notOk(missing.result.ok)
    t.equal(missing.result.grpcCode, 'FailedPrecondition')
    t.match(missing.result.message, /tokens for audiences "vault" but not for audience "my-vault"/)
  })

  t.test('a cached token is reused: no second login for the same pod', async (t) => {
    const audit = await fx.bao.enableFileAudit()
    const pod = { name: 'cache-pod', uid: 'uid-cache' }
    for (let i = 0; i < 3; i++) {
      const { result } = await fx.mount({ pod, params: { objects } })
      t.ok(result.ok, result.message)
    }
    const entries = await fx.bao.readAuditLog(audit)
    const logins = entries.filter((e) => e.type === 'response' && e.request?.path === 'auth/jwt/login')
    t.equal(logins.length, 1, 'one login for three Mounts of one pod')
  })

  t.test('the Vault token revoked behind the provider’s back: one re-login, Mount succeeds', async (t) => {
    const pod = { name: 'revoked-pod', uid: 'uid-revoked' }
    t.ok((await fx.mount({ pod, params: { objects } })).result.ok)
    // Revoke every token of the jwt mount.
    const rev = await fx.bao.api('PUT', '/v1/sys/leases/revoke-prefix/auth/jwt')
    t.equal(rev.status, 204)
    const { result } = await fx.mount({ pod, params: { objects } })
    t.ok(result.ok, result.message)
  })

  t.test('vaultKubernetesMountPath is an alias of vaultAuthMountPath', async (t) => {
    const alias = await fx.mount({
      params: { objects, vaultKubernetesMountPath: JWT_MOUNT, vaultAuthMountPath: '' },
    })
    t.ok(alias.result.ok, alias.result.message)
    t.equal(alias.files.get('v')?.bytes.toString(), 'identity-secret-Qw7')
    const both = await fx.mount({ params: { objects, vaultKubernetesMountPath: JWT_MOUNT } })
    t.notOk(both.result.ok, 'setting both is an error')
    t.equal(both.result.grpcCode, 'InvalidArgument')
  })

  t.test('no secret value, JWT or token in the provider log', async (t) => {
    t.same(findLeaks(await fx.provider.logs(), ['identity-secret-Qw7', ...fx.issuedJwts]), [])
  })
})

t.test('a second jwt mount with bound_claims on the pod', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  await configureJwtAuth(fx.bao, 'jwt-pods')
  await createJwtRole(fx.bao, 'jwt-pods', 'only-web', {
    policies: [DEFAULT_POLICY],
    boundAudiences: ['vault'],
    boundClaims: { '/kubernetes.io/pod/name': 'web-0' },
  })
  await fx.kvPut('claims', { k: 'claims-secret' })
  const objects = [{ objectName: 'k', secretPath: 'secret/data/claims', secretKey: 'k' }]
  const ok = await fx.mount({
    pod: { name: 'web-0' },
    params: { objects, roleName: 'only-web', vaultAuthMountPath: 'jwt-pods' },
  })
  t.ok(ok.result.ok, ok.result.message)
  const denied = await fx.mount({
    pod: { name: 'web-1' },
    params: { objects, roleName: 'only-web', vaultAuthMountPath: 'jwt-pods' },
  })
  t.notOk(denied.result.ok)
  t.equal(denied.result.grpcCode, 'PermissionDenied')
  t.match(denied.result.message, /bound_claims|claim/)
})

t.test('without tokens and without a Kubernetes API the error says how to fix it', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  const { result } = await fx.mount({
    pod: { tokenAudience: null },
    params: { objects: [{ objectName: 'x', secretPath: 'secret/data/x', secretKey: 'a' }] },
  })
  t.notOk(result.ok)
  t.equal(result.grpcCode, 'FailedPrecondition')
  t.match(result.message, /configure the driver with tokenRequests \(audience "vault"\)/)
})
