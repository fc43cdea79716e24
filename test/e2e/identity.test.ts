// End to end: who the provider logs in as. Tokens issued by the real kube-apiserver (to
// kubelet, for the audience in the CSIDriver's tokenRequests), checked by OpenBao's
// `kubernetes` auth (a real TokenReview) and its `jwt` auth (the API server's JWKS); a
// deleted pod's token; the TokenRequest fallback with and without the token-request
// overlay's RBAC; bad input refused through the real driver with the provider's message.
import { readFile } from 'node:fs/promises'
import { existsSync, readdirSync } from 'node:fs'
import t from 'tap'
import { driverMount, readMountedFiles } from '../support/driver-client.js'
import { JWT_AUTH_MOUNT, KUBERNETES_AUTH_MOUNT, spcParameters, startE2e, type E2eWorld } from '../support/e2e.js'
import { jwtClaims, requestToken, waitUntil } from '../support/kube-cluster.js'
import { mountsUnder } from '../support/kube-node.js'
import { findLeaks } from '../support/leaks.js'
import { mustSucceed } from '../support/openbao.js'
import { startProvider } from '../support/provider.js'
import { tempDirFor } from '../support/tmp.js'

t.setTimeout(5 * 60_000)

let w: E2eWorld
let auditFile: string
const secretValues = ['identity-e2e-Xw9', 'jwt-e2e-Pp2', 'fallback-e2e-Lm4']

t.before(async () => {
  w = await startE2e()
  auditFile = await w.bao.enableFileAudit()
})
t.teardown(() => w?.stop())

type AuditEntry = { type?: string; request?: { path?: string }; auth?: { metadata?: Record<string, string> } }
async function audit(): Promise<AuditEntry[]> {
  return (await w.bao.readAuditLog(auditFile)) as AuditEntry[]
}

const kvObjects = (ns: string): unknown[] => [
  { objectName: 'value', secretPath: `secret/data/${ns}/app`, secretKey: 'value' },
]

/** A pod with a volume of SecretProviderClass `spc` in a fresh namespace, its secret in KV. */
async function podWith(prefix: string, value: string, params: (ns: string) => Record<string, string>) {
  const ns = await w.newNamespace(prefix)
  await w.kvPut(`${ns}/app`, { value })
  await w.createSpc(ns, 'spc', { parameters: params(ns) })
  const pod = await w.createPod(ns, 'app-0', { spc: 'spc' })
  return { ns, pod }
}

/** Nothing of the volume is left: no mount, and the target directory is gone or empty. */
function nothingWritten(target: string): boolean {
  return mountsUnder(target).length === 0 && (!existsSync(target) || readdirSync(target).length === 0)
}

t.test('kubernetes auth: the token kubelet got from the API server, reviewed by it for OpenBao', async (t) => {
  const { ns, pod } = await podWith('k8s-auth', secretValues[0]!, (ns) =>
    spcParameters(w.bao, 'k8s-app', kvObjects(ns)),
  )
  await w.kubernetesRole('k8s-app', [ns])
  const r = await w.node().publish(ns, pod.name)
  t.ok(r.ok, r.message)
  t.equal((await readMountedFiles(r.targetPath)).get('value')?.bytes.toString(), secretValues[0])
  const audited = (await audit()).find(
    (e) => e.type === 'response' && e.request?.path === `auth/${KUBERNETES_AUTH_MOUNT}/login` && e.auth?.metadata,
  )
  t.match(
    audited?.auth?.metadata,
    { role: 'k8s-app', service_account_name: 'app', service_account_namespace: ns },
    'OpenBao saw the pod’s service account, as the API server’s TokenReview reported it',
  )
  const line = (await w.provider().logLines()).find((l) => l.msg === 'mount' && l.pod === `${ns}/${pod.name}`)
  t.equal(line?.podToken, 'driver', 'the token came with the request, not from a TokenRequest of the provider')

  // What a role's `audience` buys: OpenBao 2.7 (role without audience) has the API server review
  // a token for whatever audience the token carries, so a token minted for another service logs in
  // too; with audience=vault the API server refuses it. (A TokenReview naming no audience at all
  // would be checked against the API server's own audiences and fail.)
  mustSucceed(
    'role without audience',
    await w.bao.api('POST', `/v1/auth/${KUBERNETES_AUTH_MOUNT}/role/no-audience`, {
      bound_service_account_names: ['app'],
      bound_service_account_namespaces: [ns],
      token_policies: ['app-read'],
    }),
  )
  const tokenFor = async (audience: string): Promise<string> =>
    (await requestToken(w.cluster.admin, ns, 'app', { audiences: [audience], pod: { name: pod.name, uid: pod.uid } }))
      .token
  const login = async (role: string, audience: string): Promise<number> =>
    (
      await w.bao.api(
        'POST',
        `/v1/auth/${KUBERNETES_AUTH_MOUNT}/login`,
        { jwt: await tokenFor(audience), role },
        { token: '' },
      )
    ).status
  t.equal(await login('k8s-app', 'vault'), 200, 'audience=vault: the pod’s token for vault logs in')
  t.equal(await login('k8s-app', 'some-other-service'), 403, 'audience=vault: a token for another service does not')
  t.equal(await login('no-audience', 'vault'), 200, 'no audience: the token for vault logs in')
  t.equal(
    await login('no-audience', 'some-other-service'),
    200,
    'no audience: so does a token minted for another service (set audience=vault)',
  )
})

t.test('jwt auth: OpenBao checks the same kind of token against the API server’s JWKS', async (t) => {
  const { ns, pod } = await podWith('jwt-auth', secretValues[1]!, (ns) =>
    spcParameters(w.bao, 'jwt-app', kvObjects(ns), { vaultAuthMountPath: JWT_AUTH_MOUNT }),
  )
  await w.jwtRole('jwt-app', ns)
  const r = await w.node().publish(ns, pod.name)
  t.ok(r.ok, r.message)
  t.equal((await readMountedFiles(r.targetPath)).get('value')?.bytes.toString(), secretValues[1])

  // The token kubelet passes: issued by the API server, for audience vault, bound to the pod.
  const { token } = await requestToken(w.cluster.admin, ns, 'app', {
    audiences: ['vault'],
    pod: { name: pod.name, uid: pod.uid },
  })
  const claims = jwtClaims(token)
  t.same(claims.aud, ['vault'])
  t.equal(claims.iss, w.cluster.issuer)
  t.equal(claims.sub, `system:serviceaccount:${ns}:app`)
  t.match(claims['kubernetes.io'], { namespace: ns, pod: { name: pod.name, uid: pod.uid } })
})

t.test('a deleted pod: its token stops working at Vault, and the provider says so', async (t) => {
  const { ns, pod } = await podWith('deleted', 'deleted-pod-value', (ns) =>
    spcParameters(w.bao, 'deleted-app', kvObjects(ns)),
  )
  secretValues.push('deleted-pod-value')
  await w.kubernetesRole('deleted-app', [ns])
  await w.jwtRole('deleted-jwt', ns)
  const r = await w.node().publish(ns, pod.name)
  t.ok(r.ok, r.message)
  // The token kubelet would hold for the pod (the same TokenRequest, bound to the pod).
  const { token, expirationTimestamp } = await requestToken(w.cluster.admin, ns, 'app', {
    audiences: ['vault'],
    pod: { name: pod.name, uid: pod.uid },
  })
  const login = (mount: string, role: string) =>
    w.bao.api('POST', `/v1/auth/${mount}/login`, { jwt: token, role }, { token: '' })
  t.equal((await login(KUBERNETES_AUTH_MOUNT, 'deleted-app')).status, 200, 'works while the pod exists')

  t.equal((await w.node().unpublish(pod.uid)).ok, true)
  await w.deletePod(ns, pod.name)
  // The API server keeps a successful review for about 10 s; then it looks the pod up again.
  const refused = await waitUntil(
    'the kubernetes auth login refused',
    async () => {
      const res = await login(KUBERNETES_AUTH_MOUNT, 'deleted-app')
      return res.status === 200 ? undefined : res
    },
    45_000,
    500,
  )
  t.equal(refused.status, 403, 'TokenReview no longer authenticates it')
  // jwt auth checks only the signature, issuer, audience and expiry: it accepts the token until
  // it expires. (docs/configuration.md: prefer kubernetes auth where that matters.)
  t.equal((await login(JWT_AUTH_MOUNT, 'deleted-jwt')).status, 200, 'jwt auth still accepts it')

  // Through the provider: any Mount that has to log in with that token (here one that logs in
  // on every Mount, -cache-size=0) fails with OpenBao's refusal, naming the login and the role.
  const p = await startProvider({ args: [`-vault-addr=${w.bao.addr}`, '-cache-size=0'] })
  t.teardown(() => p.stop())
  const res = await driverMount({
    socketDir: p.socketDir,
    provider: 'vault',
    targetPath: await tempDirFor(t),
    attributes: {
      ...spcParameters(w.bao, 'deleted-app', kvObjects(ns)),
      secretProviderClass: 'spc',
      'csi.storage.k8s.io/pod.name': pod.name,
      'csi.storage.k8s.io/pod.namespace': ns,
      'csi.storage.k8s.io/pod.uid': pod.uid,
      'csi.storage.k8s.io/serviceAccount.name': 'app',
      'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({ vault: { token, expirationTimestamp } }),
    },
    secrets: 'null',
  })
  t.notOk(res.ok)
  t.equal(res.grpcCode, 'PermissionDenied')
  t.match(
    res.message,
    /login to Vault at http:\/\/127\.0\.0\.1:\d+ \(role "deleted-app", auth mount "kubernetes"\): Vault answered 403: permission denied/,
  )
  t.same(findLeaks(await p.logs(), [token, 'deleted-pod-value']), [])
})

t.test(
  'bad input through the real path: NodePublishVolume fails with the provider’s message, nothing is written',
  async (t) => {
    const ns = await w.newNamespace('bad')
    await w.kvPut(`${ns}/app`, { value: 'bad-input-value' })
    await w.kubernetesRole('bad-app', [ns])
    await w.kubernetesRole('other-app', ['some-other-namespace'])
    const cases = [
      {
        spc: 'unknown-field',
        objects: [{ objectName: 'v', secretPath: `secret/data/${ns}/app`, secretKey: 'value', secretKeys: 'x' }],
        role: 'bad-app',
        code: 'InvalidArgument',
        message: /object "v".*unknown field "secretKeys"/,
      },
      {
        spc: 'traversal',
        objects: [{ objectName: '../../../etc/evil', secretPath: `secret/data/${ns}/app`, secretKey: 'value' }],
        role: 'bad-app',
        code: 'InvalidArgument',
        message: /objectName.*\.\./,
      },
      {
        spc: 'foreign-role',
        objects: kvObjects(ns),
        role: 'other-app',
        code: 'PermissionDenied',
        message: /login to Vault at .* \(role "other-app", auth mount "kubernetes"\): Vault answered 403/,
      },
    ]
    for (const c of cases) {
      await w.createSpc(ns, c.spc, { parameters: spcParameters(w.bao, c.role, c.objects) })
      const pod = await w.createPod(ns, `pod-${c.spc}`, { spc: c.spc })
      const r = await w.node().publish(ns, pod.name)
      t.notOk(r.ok, `${c.spc}: refused`)
      t.equal(r.stage, 'csi', `${c.spc}: by the driver, after the provider answered`)
      // The driver wraps the provider's answer: "failed to mount secrets store objects for pod
      // <ns>/<pod>, err: rpc error: code = <provider's code> desc = <provider's message>".
      t.match(
        r.message,
        `failed to mount secrets store objects for pod ${ns}/${pod.name}`,
        `${c.spc}: FailedMount text`,
      )
      t.match(r.message, `code = ${c.code}`, `${c.spc}: the provider's code`)
      t.match(r.message, c.message, `${c.spc}: the provider's message`)
      t.ok(nothingWritten(r.targetPath), `${c.spc}: nothing mounted or written at the target`)
      t.equal(await w.podStatus(pod, c.spc), undefined, `${c.spc}: no SecretProviderClassPodStatus`)
      // The provider's log line names who asked, even when the request did not parse.
      const line = (await w.provider().logLines()).find(
        (l) => l.msg === 'mount' && l.outcome === 'failure' && l.pod === `${ns}/${pod.name}`,
      )
      t.equal(line?.secretProviderClass, c.spc, `${c.spc}: the log line names the pod and the SecretProviderClass`)
    }
  },
)

// Last: these change the cluster-wide CSIDriver object.
t.test('TokenRequest fallback: no tokenRequests in the CSIDriver', async (t) => {
  await w.cluster.admin.must(
    'PATCH',
    '/apis/storage.k8s.io/v1/csidrivers/secrets-store.csi.k8s.io',
    { spec: { tokenRequests: null, serviceAccountTokenInSecrets: null } },
    { contentType: 'application/merge-patch+json' },
  )
  const { ns, pod } = await podWith('fallback', secretValues[2]!, (ns) =>
    spcParameters(w.bao, 'fallback-app', kvObjects(ns)),
  )
  await w.kubernetesRole('fallback-app', [ns])

  t.test('with the base RBAC: refused, naming the missing permission', async (t) => {
    const r = await w.node().publish(ns, pod.name)
    t.same(r.tokenAudiences, undefined, 'kubelet passed no token')
    t.notOk(r.ok)
    t.match(r.message, /TokenRequest for service account .*\/app \(audience "vault"\) failed with 403/)
    t.match(
      r.message,
      /User "system:serviceaccount:vault-csi-provider:vault-csi-provider" cannot create resource "serviceaccounts\/token"/,
      'the API server’s own words: who lacks which permission',
    )
    t.ok(nothingWritten(r.targetPath), 'nothing written')
  })

  t.test('with the token-request overlay: the provider requests the pod’s token itself', async (t) => {
    await w.applyProviderRbac('daemonset/overlays/token-request')
    // RBAC reaches the authorizer's cache a moment after the write.
    const r = await waitUntil(
      'the Mount to work with the new RBAC',
      async () => {
        const res = await w.node().publish(ns, pod.name)
        return res.ok ? res : undefined
      },
      30_000,
      250,
    )
    t.equal((await readMountedFiles(r.targetPath)).get('value')?.bytes.toString(), secretValues[2])
    const line = (await w.provider().logLines()).find(
      (l) => l.msg === 'mount' && l.outcome === 'success' && l.pod === `${ns}/${pod.name}`,
    )
    t.equal(line?.podToken, 'token-request', 'the provider’s own TokenRequest')
    const requests = (await w.cluster.auditEvents()).filter(
      (e) =>
        e.stage === 'ResponseComplete' &&
        e.verb === 'create' &&
        e.objectRef?.subresource === 'token' &&
        e.objectRef.namespace === ns &&
        e.user.username === 'system:serviceaccount:vault-csi-provider:vault-csi-provider',
    )
    t.ok(
      requests.some((e) => e.responseStatus?.code === 403),
      'the API server refused the TokenRequest before the overlay',
    )
    t.equal(requests.filter((e) => e.responseStatus?.code === 201).length, 1, 'and granted one after it')
  })

  t.test('an audience outside -token-request-audiences: refused before the API server is asked', async (t) => {
    const { ns: evilNs, pod: evilPod } = await podWith('evil-audience', secretValues[2]!, (ns) =>
      spcParameters(w.bao, 'fallback-app', kvObjects(ns), { audience: 'evil-audience' }),
    )
    const r = await w.node().publish(evilNs, evilPod.name)
    t.notOk(r.ok)
    t.match(r.message, /may not request service-account tokens for audience "evil-audience"/)
    t.match(r.message, /-token-request-audiences allows "vault"/)
    t.ok(nothingWritten(r.targetPath), 'nothing written')
    const asked = (await w.cluster.auditEvents()).filter(
      (e) => e.objectRef?.subresource === 'token' && e.objectRef.namespace === evilNs,
    )
    t.same(asked, [], 'the API server saw no TokenRequest for that pod')
  })
})

t.test('no secret value, JWT or Vault token in the logs', async (t) => {
  const tokens = await w.tokensSeen()
  t.same(findLeaks(await w.provider().logs(), [...secretValues, ...tokens]), [], 'provider log')
  t.same(findLeaks(await readFile(w.node().driverLog, 'utf8'), [...secretValues, ...tokens]), [], 'driver log')
})
