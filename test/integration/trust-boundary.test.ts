// Identity and transport at the trust boundary, against a real OpenBao and the built daemon:
// the provider's TLS client certificate never authenticates a pod (cert auth over mTLS), a
// Mount's token must match its attributes before cached data serves it, a standby's redirect is
// followed only where the allow-list says so and any other redirect is refused,
// Vault bodies and TLS files are capped, and the "any address" default is loud and counted.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import t from 'tap'
import { makeTestPki } from '../support/adversary.js'
import { Fixture, JWT_MOUNT } from '../support/fixture.js'
import { configureJwtAuth, createJwtRole, signServiceAccountJwt } from '../support/jwt.js'
import { findLeaks } from '../support/leaks.js'
import { startOpenBao } from '../support/openbao.js'
import { startProvider } from '../support/provider.js'
import { tempDirFor } from '../support/tmp.js'

const OBJECTS = [{ objectName: 'v', secretPath: 'secret/data/tb', secretKey: 'value' }]
const SECRET = 'trust-boundary-secret-8Jq'

t.test("cert auth: the provider's client certificate never authenticates a pod", async (t) => {
  const pki = makeTestPki(path.join(await tempDirFor(t), 'pki'))
  const bao = await startOpenBao({ certAuth: { caPem: pki.caPem, policies: ['app-read'] } })
  t.teardown(() => bao.stop())
  const audit = await bao.enableFileAudit()
  await bao.writePolicy('app-read', 'path "secret/*" { capabilities = ["read"] }')
  await configureJwtAuth(bao, JWT_MOUNT)
  await createJwtRole(bao, JWT_MOUNT, 'app', { policies: ['app-read'], boundAudiences: ['vault'], ttl: '1h' })
  const provider = await startProvider({
    args: [
      `-vault-addr=${bao.addr}`,
      `-vault-tls-ca-cert=${bao.caCertPath}`,
      `-vault-tls-client-cert=${pki.clientCertPath}`,
      `-vault-tls-client-key=${pki.clientKeyPath}`,
    ],
  })
  const fx = Fixture.attach(bao, provider)
  t.teardown(() => provider.stop())
  await fx.kvPut('tb', { value: SECRET })

  const viaCert = await fx.mount({ params: { objects: OBJECTS, vaultAuthMountPath: 'cert', roleName: 'provider' } })
  t.equal(viaCert.result.grpcCode, 'PermissionDenied')
  t.match(
    viaCert.result.message,
    /login at auth mount "cert" \(role "provider", .*\) was not issued for the pod's service-account token \(Vault answered for a certificate identity\); the provider's TLS client certificate never authenticates a pod/,
  )
  t.equal(viaCert.files.size, 0, 'no secret was read')
  const entries = await bao.readAuditLog(audit)
  const paths = entries.filter((e) => e.type === 'response').map((e) => e.request?.path as string)
  t.ok(paths.includes('auth/cert/login'), 'Vault did issue a token for the certificate')
  t.ok(paths.includes('auth/token/revoke-self'), 'which the provider revoked at once')
  const reads = entries.filter(
    (e) => e.type === 'request' && e.request?.path === 'secret/data/tb' && e.request?.operation === 'read',
  )
  t.equal(reads.length, 0, 'and never used for a read')

  // The same provider, client certificate and all, serves a pod that logs in with its own token.
  const own = await fx.mount({ params: { objects: OBJECTS } })
  t.ok(own.result.ok, own.result.message)
  t.equal(own.files.get('v')?.bytes.toString(), SECRET)
  t.same(findLeaks(await provider.logs(), [SECRET, ...fx.issuedJwts]), [])
})

t.test('cached identity: the token a Mount presents must match its attributes', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  await fx.kvPut('tb', { value: SECRET })
  const victim = { name: 'victim-0', uid: 'victim-uid-0' }
  const first = await fx.mount({ pod: victim, params: { objects: OBJECTS } })
  t.ok(first.result.ok, first.result.message)

  const garbage = await fx.mount({ pod: { ...victim, jwt: 'not-a-token' }, params: { objects: OBJECTS } })
  t.equal(garbage.result.grpcCode, 'PermissionDenied')
  t.match(garbage.result.message, /service-account token the Mount presents is not a JWT/)
  t.equal(garbage.files.size, 0)

  const otherPodsToken = signServiceAccountJwt({
    namespace: 'default',
    serviceAccount: 'app',
    podName: 'attacker-0',
    podUid: 'attacker-uid',
    audience: 'vault',
  })
  const borrowed = await fx.mount({ pod: { ...victim, jwt: otherPodsToken }, params: { objects: OBJECTS } })
  t.equal(borrowed.result.grpcCode, 'PermissionDenied')
  t.match(borrowed.result.message, /claim "kubernetes.io.pod.name" is not "victim-0"/)
  t.notMatch(borrowed.result.message, otherPodsToken)

  const none = await fx.mount({ pod: { ...victim, tokenAudience: null }, params: { objects: OBJECTS } })
  t.equal(none.result.grpcCode, 'FailedPrecondition', 'no token and no Kubernetes API: NO_POD_TOKEN')
  t.equal(none.files.size, 0)

  const again = await fx.mount({ pod: victim, params: { objects: OBJECTS } })
  t.ok(again.result.ok, 'the pod itself still mounts')
})

t.test("a standby's redirect: followed once, only where the operator's allow-list names the target", async (t) => {
  const fx = await Fixture.start({ args: ['-mount-timeout=3s'] })
  t.teardown(() => fx.stop())
  await fx.kvPut('tb', { value: SECRET })
  const received: string[] = []
  // A stand-in: a real OpenBao standby redirects only during an election or with forwarding off.
  // This "standby" always sends the client to the real OpenBao (the active node), path and all.
  const front = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url}`)
    res.writeHead(307, { location: `${fx.bao.addr}${req.url}` }).end()
  })
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => front.close(() => r())))
  const frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`

  // No -vault-addr-allowlist: never followed; one node's answer, retried until the deadline.
  const unset = await fx.mount({ params: { objects: OBJECTS, vaultAddress: frontUrl } })
  t.equal(unset.result.grpcCode, 'Unavailable')
  t.match(
    unset.result.message,
    new RegExp(
      `login to Vault at ${frontUrl} .*the Vault cluster has no active node to answer \\(electing a leader\\): ` +
        `a standby redirected to "${fx.bao.addr}:?\\d*" \\(307\\)`,
    ),
  )
  t.notMatch(unset.result.message, /set vaultAddress/)
  t.ok(received.length > 1, `retried (${received.length} attempts), each on a connection of its own`)

  // An allow-list that does not name the target: not followed either.
  await fx.restartProvider('SIGTERM', { args: ['-mount-timeout=3s', `-vault-addr-allowlist=${frontUrl}`] })
  const narrow = await fx.mount({ params: { objects: OBJECTS, vaultAddress: frontUrl } })
  t.equal(narrow.result.grpcCode, 'Unavailable')

  // The allow-list names both: followed, one hop, the token with it; the Mount succeeds.
  await fx.restartProvider('SIGTERM', {
    args: ['-mount-timeout=3s', `-vault-addr-allowlist=${frontUrl},${fx.bao.addr}`],
  })
  const before = received.length
  const followed = await fx.mount({ params: { objects: OBJECTS, vaultAddress: frontUrl } })
  t.ok(followed.result.ok, `followed: ${followed.result.message}`)
  t.equal(followed.files.get('v')?.bytes.toString(), SECRET)
  t.same(received.slice(before), ['POST /v1/auth/jwt/login', 'GET /v1/secret/data/tb'], 'each call redirected once')
  t.same(findLeaks(await fx.provider.logs(), [SECRET, ...fx.issuedJwts]), [])
})

t.test('a redirect that is not a standby’s is refused naming the cause; nothing reaches the target', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  const received: string[] = []
  const target = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url} ${req.headers['x-vault-token'] ? 'token' : ''}`)
    res.end('{}')
  })
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => target.close(() => r())))
  const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`
  // A web server at the address: its UI redirects everything to /ui/.
  const front = http.createServer((_req, res) => res.writeHead(302, { location: `${targetUrl}/ui/` }).end())
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => front.close(() => r())))
  const frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`

  const r = await fx.mount({ params: { objects: OBJECTS, vaultAddress: frontUrl } })
  t.equal(r.result.grpcCode, 'FailedPrecondition')
  t.match(
    r.result.message,
    new RegExp(
      `login to Vault at ${frontUrl} .*answered 302 with a redirect to "${targetUrl}"; nothing was sent there: ` +
        ".*rather than Vault's API: the address is probably wrong",
    ),
  )
  t.same(received, [], 'the JWT never travelled to the redirect target')
})

t.test('Vault answers over -max-vault-response-size and TLS files that are not regular', async (t) => {
  const fx = await Fixture.start({ args: ['-max-vault-response-size=128KiB'] })
  t.teardown(() => fx.stop())
  await fx.kvPut('big', { value: 'x'.repeat(300 * 1024) })
  const big = await fx.mount({
    params: { objects: [{ objectName: 'big', secretPath: 'secret/data/big', secretKey: 'value' }] },
  })
  t.equal(big.result.grpcCode, 'ResourceExhausted')
  t.match(
    big.result.message,
    /object "big": GET secret\/data\/big .*larger than 131072 bytes \(-max-vault-response-size\)/,
  )

  const zero = await fx.mount({
    params: { objects: OBJECTS, vaultAddress: fx.bao.addr.replace('http:', 'https:'), vaultCACertPath: '/dev/zero' },
  })
  t.equal(zero.result.grpcCode, 'InvalidArgument')
  t.match(zero.result.message, /parameter "vaultCACertPath" "\/dev\/zero" is not a regular file/)
  t.equal(fx.provider.child.exitCode, null, 'the daemon is still running')
})

t.test('the "any Vault address" default logs a warning and is counted', async (t) => {
  const fx = await Fixture.start({ args: ['-health-addr=127.0.0.1:0'] })
  t.teardown(() => fx.stop())
  await fx.kvPut('tb', { value: SECRET })
  const lines = await fx.provider.logLines()
  t.ok(
    lines.some((l) => (l.level === 'warn' || l.level === 40) && /no -vault-addr-allowlist/.test(String(l.msg))),
    'a warning at start',
  )
  const until = Date.now() + 10_000
  let port: number | undefined
  while (port === undefined && Date.now() < until) {
    const line = (await fx.provider.logLines()).find((l) => l.msg === 'serving health and metrics over HTTP')
    port = typeof line?.port === 'number' ? line.port : undefined
    if (port === undefined) await new Promise((r) => setTimeout(r, 50))
  }
  await fx.mount({ params: { objects: OBJECTS } })
  await fx.mount({ params: { objects: OBJECTS } })
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  t.match(text, /^vault_csi_provider_vault_address_allowlist_enabled 0$/m)
  t.match(text, /^vault_csi_provider_unrestricted_address_mounts_total 2$/m)
})
