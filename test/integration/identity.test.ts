// Logging in as the pod: jwt and kubernetes auth, audiences, TokenRequest
// fallback, and refusals that show Vault's own reason.
import t from 'tap'
import { configureJwtAuth, createJwtRole, signServiceAccountJwt } from '../support/jwt.js'
import { Fixture, JWT_MOUNT, DEFAULT_POLICY } from '../support/fixture.js'
import { startKubeApi } from '../support/kube-api.js'
import { findLeaks } from '../support/leaks.js'
import { startProvider } from '../support/provider.js'
import { selfSignedCaPem } from '../support/tls.js'

t.test('identity and login', async (t) => {
  const kube = await startKubeApi()
  const fx = await Fixture.start({ args: [`-kube-api-url=${kube.url}`] })
  t.teardown(async () => {
    await fx.stop()
    await kube.close()
  })
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

  t.test('TokenRequest through the Kubernetes API when the driver passes no token', async (t) => {
    const before = kube.issued.length
    const { result, files } = await fx.mount({
      pod: { tokenAudience: null, name: 'tr-pod', uid: 'uid-tr' },
      params: { objects },
    })
    t.ok(result.ok, result.message)
    t.equal(files.get('v')?.bytes.toString(), 'identity-secret-Qw7')
    t.equal(kube.issued.length, before + 1, 'one token requested')
    const call = kube.calls.filter((c) => c.path.endsWith('/serviceaccounts/app/token'))
    t.equal(call.length, 1)
    t.equal(call[0]?.path, '/api/v1/namespaces/default/serviceaccounts/app/token')
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

  t.test('kubernetes auth (TokenReview)', async (t) => {
    await fx.bao.enableAuth('kubernetes', 'kubernetes')
    const cfg = await fx.bao.api('POST', '/v1/auth/kubernetes/config', {
      kubernetes_host: kube.url,
      token_reviewer_jwt: signServiceAccountJwt({
        namespace: 'kube-system',
        serviceAccount: 'reviewer',
        podName: 'x',
        podUid: 'x',
        audience: 'https://kubernetes.default.svc',
      }),
      disable_local_ca_jwt: true,
      // The stub speaks plain HTTP, but OpenBao insists on a CA once local CA discovery is off.
      kubernetes_ca_cert: selfSignedCaPem(),
    })
    t.ok(cfg.status < 300, JSON.stringify(cfg.body))
    const role = await fx.bao.api('POST', '/v1/auth/kubernetes/role/k8s-app', {
      bound_service_account_names: ['app'],
      bound_service_account_namespaces: ['default'],
      audience: 'vault',
      token_policies: [DEFAULT_POLICY],
    })
    t.ok(role.status < 300, JSON.stringify(role.body))
    const { result, files } = await fx.mount({
      params: { objects, roleName: 'k8s-app', vaultAuthMountPath: 'kubernetes' },
    })
    t.ok(result.ok, result.message)
    t.equal(files.get('v')?.bytes.toString(), 'identity-secret-Qw7')

    // The default auth mount is -vault-mount (kubernetes); vaultKubernetesMountPath is its alias.
    const alias = await fx.mount({
      params: { objects, roleName: 'k8s-app', vaultKubernetesMountPath: 'kubernetes', vaultAuthMountPath: '' },
    })
    t.ok(alias.result.ok, alias.result.message)
  })

  t.test('no secret value, JWT or token in the provider log', async (t) => {
    t.same(findLeaks(await fx.provider.logs(), ['identity-secret-Qw7', ...fx.issuedJwts, ...kube.issued]), [])
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

t.test('the HMAC key comes from a Kubernetes Secret shared by every node', async (t) => {
  const kube = await startKubeApi()
  const fx = await Fixture.start({ args: [`-kube-api-url=${kube.url}`] })
  const second = await startProvider({
    args: [`-kube-api-url=${kube.url}`, `-vault-addr=${fx.bao.addr}`],
    hmacKeyFile: '',
  })
  t.teardown(async () => {
    await second.stop()
    await fx.stop()
    await kube.close()
  })
  // The fixture's provider has a key file; restart it on the Kubernetes Secret instead.
  await fx.restartProvider('SIGTERM', { args: [`-kube-api-url=${kube.url}`], hmacKeyFile: '' })
  await fx.kvPut('shared', { a: 'b' })
  const objects = [{ objectName: 'a', secretPath: 'secret/data/shared', secretKey: 'a' }]
  const one = await fx.mount({ params: { objects } })
  t.ok(one.result.ok, one.result.message)
  const provider = fx.provider
  fx.provider = second
  const two = await fx.mount({ params: { objects } })
  fx.provider = provider
  t.ok(two.result.ok, two.result.message)
  t.equal(one.result.objectVersions.a, two.result.objectVersions.a, 'two nodes, one version')
  const stored = kube.secrets.get('default/vault-csi-provider-hmac-key')
  t.ok(stored?.key, 'the Secret was created')
  t.equal(Buffer.from(stored!.key!, 'base64').length, 32)
  const gets = kube.calls.filter((c) => c.method === 'GET' && c.path.endsWith('/secrets/vault-csi-provider-hmac-key'))
  // Three Mounts later, still one or two reads per process (get before create, get after): never one per Mount.
  await fx.mount({ params: { objects } })
  await fx.mount({ params: { objects } })
  const after = kube.calls.filter((c) => c.method === 'GET' && c.path.endsWith('/secrets/vault-csi-provider-hmac-key'))
  t.equal(after.length, gets.length, 'the key is kept in memory once read')
})
