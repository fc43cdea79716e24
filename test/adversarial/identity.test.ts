// Issue 9, classes 5, 7 and the identity side of 8: the provider's own TLS client certificate
// never authenticates a pod (a real OpenBao with TLS and `cert` auth), a Mount presenting
// another pod's identity attributes gets nothing cached for that pod unless the token it
// presents is that pod's. All while a victim pod mounts through the same daemon. (That the
// provider asks the Kubernetes API only for the audiences the operator allows is shown against
// the real API server and its audit log, in test/e2e/identity.test.ts.)
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { makeTestPki, exclusiveSuite } from '../support/adversary.js'
import { expectAttack, finishSuite, startWorld, type World } from '../support/adversary-world.js'
import { signJwt, signServiceAccountJwt } from '../support/jwt.js'
import { tempDirFor } from '../support/tmp.js'

t.setTimeout(20 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

async function metricsText(w: World): Promise<string> {
  const until = Date.now() + 10_000
  for (;;) {
    const line = (await w.daemon.provider.logLines()).find((l) => l.msg === 'serving health and metrics over HTTP')
    if (line && typeof line.port === 'number') return (await fetch(`http://127.0.0.1:${line.port}/metrics`)).text()
    if (Date.now() > until) throw new Error('no health/metrics port in the daemon log')
    await new Promise((r) => setTimeout(r, 50))
  }
}

t.test(
  'cert auth and forged identities (OpenBao with TLS and cert auth, no allow-list, no Kubernetes API)',
  async (t) => {
    const pki = makeTestPki(join(await tempDirFor(t, 'vcp-adv-pki-'), 'pki'))
    const w = await startWorld({
      // The provider's certificate may read what the victim reads: what a pod must never borrow.
      bao: { certAuth: { caPem: pki.caPem, policies: ['app-read'] } },
      allow: null,
      args: () => [`-vault-tls-client-cert=${pki.clientCertPath}`, `-vault-tls-client-key=${pki.clientKeyPath}`],
    })
    t.teardown(() => w.stop())
    const audit = await w.bao.enableFileAudit()
    const canary = await w.bao.api('POST', '/v1/secret/data/canary', { data: { password: 'canary-value' } })
    t.equal(canary.status, 200)
    w.secrets.push('canary-value')
    const canaryObjects = [{ objectName: 'stolen', secretPath: 'secret/data/canary', secretKey: 'password' }]
    const victimObjects = [{ objectName: 'password', secretPath: 'secret/data/victim', secretKey: 'password' }]
    const mismatch = [/cert/, /not issued for the pod's service-account token/]

    const cases: Array<{ klass: string; name: string; attributes: string; code: string; message: RegExp[] }> = [
      {
        klass: '5',
        name: 'vaultAuthMountPath=cert with the provider’s client certificate',
        attributes: w.attrs({ vaultAuthMountPath: 'cert', roleName: 'provider', objects: canaryObjects }),
        code: 'PermissionDenied',
        message: mismatch,
      },
      {
        klass: '5',
        name: 'cert mount with a jwt role name (cert auth ignores it)',
        attributes: w.attrs({ vaultAuthMountPath: 'cert', roleName: 'app', objects: canaryObjects }),
        code: 'PermissionDenied',
        message: mismatch,
      },
      {
        klass: 'own',
        name: 'cert mount, the pod naming the provider’s certificate files itself',
        attributes: w.attrs({
          vaultAuthMountPath: 'cert',
          roleName: 'provider',
          vaultTLSClientCertPath: pki.clientCertPath,
          vaultTLSClientKeyPath: pki.clientKeyPath,
          objects: canaryObjects,
        }),
        code: 'PermissionDenied',
        message: mismatch,
      },
      {
        klass: '7',
        name: 'the victim’s identity attributes with a garbage token',
        attributes: w.attrs({ objects: victimObjects }, w.victimPod, 'not-a-jwt-at-all'),
        code: 'PermissionDenied',
        message: [/token/],
      },
      {
        klass: '7',
        name: 'the victim’s identity attributes with no token (no TokenRequest possible)',
        attributes: w.attrs({ objects: victimObjects }, w.victimPod, null),
        code: 'FailedPrecondition',
        message: [/token/],
      },
      {
        klass: '7',
        name: 'the victim’s attributes with the attacker’s own valid token (other namespace and SA)',
        attributes: w.attrs(
          { objects: victimObjects },
          w.victimPod,
          signServiceAccountJwt({
            namespace: 'evil',
            serviceAccount: 'evil',
            podName: 'evil-0',
            podUid: 'u-evil',
            audience: 'vault',
          }),
        ),
        code: 'PermissionDenied',
        message: [/namespace|serviceaccount|sub/],
      },
      {
        klass: 'own',
        name: 'the victim’s attributes with a token of another pod of the same service account',
        attributes: w.attrs(
          { objects: victimObjects },
          w.victimPod,
          signServiceAccountJwt({
            namespace: 'default',
            serviceAccount: 'app',
            podName: 'app-other',
            podUid: 'u-other',
            audience: 'vault',
          }),
        ),
        code: 'PermissionDenied',
        message: [/pod/],
      },
      {
        klass: 'own',
        name: 'the victim’s own claims, expired an hour ago',
        attributes: w.attrs(
          { objects: victimObjects },
          w.victimPod,
          signServiceAccountJwt({
            namespace: 'default',
            serviceAccount: 'app',
            podName: w.victimPod.name,
            podUid: w.victimPod.uid,
            audience: 'vault',
            issuedAtSec: Math.floor(Date.now() / 1000) - 7200,
            expiresInSec: 3600,
          }),
        ),
        code: 'PermissionDenied',
        message: [/expired|exp/],
      },
      {
        klass: 'own',
        name: 'the victim’s own claims for another audience',
        attributes: w.attrs(
          { objects: victimObjects },
          w.victimPod,
          signServiceAccountJwt({
            namespace: 'default',
            serviceAccount: 'app',
            podName: w.victimPod.name,
            podUid: w.victimPod.uid,
            audience: 'not-vault',
          }),
        ),
        code: 'PermissionDenied',
        message: [/aud/],
      },
      {
        klass: 'own',
        name: 'the victim’s attributes with a 512 KiB token',
        attributes: w.attrs({ objects: victimObjects }, w.victimPod, `eyJ${'A'.repeat(512 * 1024)}.e30.sig`),
        code: 'PermissionDenied',
        message: [/token/],
      },
      {
        klass: 'own',
        name: 'the victim’s attributes with a token whose claims are objects (type confusion)',
        attributes: w.attrs(
          { objects: victimObjects },
          w.victimPod,
          signJwt({
            sub: { toString: 'system:serviceaccount:default:app' },
            aud: 'vault',
            exp: Math.floor(Date.now() / 1000) + 600,
            'kubernetes.io': { namespace: ['default'], serviceaccount: { name: { x: 'app' } } },
          }),
        ),
        code: 'PermissionDenied',
        message: [/token|claim/],
      },
    ]
    for (const c of cases) {
      await t.test(c.name, async (t: Test) => {
        await expectAttack(t, w, {
          klass: c.klass,
          name: c.name,
          attempt: () => w.mount(c.attributes, 'null', 20_000),
          expect: { code: c.code, message: c.message },
        })
      })
    }

    await t.test('no attacker read happened: OpenBao’s audit log has no read of the canary', async (t) => {
      const entries = await w.bao.readAuditLog(audit)
      const reads = entries.filter(
        (e) => e.type === 'request' && e.request?.path === 'secret/data/canary' && e.request?.operation === 'read',
      )
      t.same(reads, [], 'nothing read secret/data/canary')
      const certLogins = entries.filter((e) => e.type === 'response' && e.request?.path === 'auth/cert/login')
      t.ok(certLogins.length > 0, 'the cert logins did happen (the attack reached OpenBao)')
    })

    await t.test('the unrestricted-address default is a warning and a metric', async (t) => {
      const lines = await w.daemon.provider.logLines()
      const warning = lines.find((l) => typeof l.msg === 'string' && /-vault-addr-allowlist/.test(l.msg))
      t.equal(warning?.level, 'warn', `logged at warn: ${String(warning?.msg)}`)
      const metrics = await metricsText(w)
      t.match(metrics, /^vault_csi_provider_vault_address_allowlist_enabled 0$/m)
      const counted = /^vault_csi_provider_unrestricted_address_mounts_total (\d+)$/m.exec(metrics)
      t.ok(Number(counted?.[1] ?? 0) > 0, `Mounts without an allow-list are counted (${counted?.[1]})`)
    })

    await finishSuite(t, w, 'identity')
  },
)
