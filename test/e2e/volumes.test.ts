// End to end, through the real parts: test/kubelet publishes a pod's CSI inline volume to
// the real Secrets Store CSI driver (v1.6.0), which asks this provider (on the socket the
// driver looks for), which logs in to OpenBao as the pod with the token kubelet got from the
// real kube-apiserver; then the files in the real tmpfs, the SecretProviderClassPodStatus
// and the Secrets the driver syncs are checked in the API server.
//
// KV into the volume; secretObjects (Opaque and kubernetes.io/tls from `format: tls`);
// rotation by republish; database credentials and certificates issued once across republishes.
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { lstat, readdir, readFile, readlink, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { driverMount, readMountedFiles } from '../support/driver-client.js'
import { spcParameters, startE2e, type E2eWorld } from '../support/e2e.js'
import { requestToken, waitUntil } from '../support/kube-cluster.js'
import { metricSum, mountsUnder } from '../support/kube-node.js'
import { findLeaks } from '../support/leaks.js'
import { configurePki } from '../support/pki.js'
import { configurePostgresSecretsEngine, startPostgres, type Postgres } from '../support/postgres.js'
import { tempDirFor } from '../support/tmp.js'

t.setTimeout(6 * 60_000)

let w: E2eWorld
let pg: Postgres | undefined
let auditFile: string
const secretValues: string[] = []

t.before(async () => {
  w = await startE2e({ rotationPollInterval: '1s' })
  auditFile = await w.bao.enableFileAudit()
})

t.teardown(async () => {
  await w?.stop()
  await pg?.stop()
})

type AuditEntry = { type?: string; request?: { path?: string } }
async function auditCount(match: (path: string) => boolean): Promise<number> {
  const entries = (await w.bao.readAuditLog(auditFile)) as AuditEntry[]
  return entries.filter((e) => e.type === 'response' && match(e.request?.path ?? '')).length
}

async function getSecret(namespace: string, name: string): Promise<any> {
  const r = await w.cluster.admin.call('GET', `/api/v1/namespaces/${namespace}/secrets/${name}`)
  return r.status === 200 ? r.body : undefined
}

const b64 = (s: string | undefined): string => Buffer.from(s ?? '', 'base64').toString('utf8')

t.test('KV values into the real tmpfs: contents, modes, the ..data layout, the pod status', async (t) => {
  const ns = await w.newNamespace('kv')
  await w.kubernetesRole('kv-app', [ns])
  const value = 'kv-e2e-Tq3v'
  secretValues.push(value, 'kv-e2e-user')
  await w.kvPut(`${ns}/db`, { password: value, user: 'kv-e2e-user' })
  const objects = [
    { objectName: 'password', secretPath: `secret/data/${ns}/db`, secretKey: 'password' },
    { objectName: 'db/user', secretPath: `secret/data/${ns}/db`, secretKey: 'user', filePermission: '0600' },
  ]
  await w.createSpc(ns, 'db', { parameters: spcParameters(w.bao, 'kv-app', objects) })
  const pod = await w.createPod(ns, 'web-0', { spc: 'db' })

  const r = await w.node().publish(ns, pod.name)
  t.ok(r.ok, r.message)
  t.equal(r.stage, undefined)
  t.equal(r.readonly, true, 'read-only, as the pod spec says (the driver refuses anything else)')
  t.equal(r.accessMode, 'SINGLE_NODE_WRITER', 'what kubelet maps ReadWriteOnce of an inline volume to')
  t.same(
    r.tokenAudiences,
    ['openbao', 'vault'],
    'one token per audience of the CSIDriver tokenRequests (daemonset/driver-values.yaml)',
  )
  t.match(r.targetPath, new RegExp(`/pods/${pod.uid}/volumes/kubernetes\\.io~csi/secrets-store/mount$`))

  t.ok(mountsUnder(r.targetPath).includes(r.targetPath), 'the driver mounted a filesystem at the target')
  const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')
  const line = mountinfo.split('\n').find((l) => l.split(' ')[4] === r.targetPath) ?? ''
  t.match(line, / - tmpfs /, 'a tmpfs')

  const files = await readMountedFiles(r.targetPath)
  t.same([...files.keys()].sort(), ['db/user', 'password'])
  t.equal(files.get('password')?.bytes.toString(), value)
  t.equal(files.get('password')?.mode, 0o644, "the driver's default mode")
  t.equal(files.get('db/user')?.bytes.toString(), 'kv-e2e-user')
  t.equal(files.get('db/user')?.mode, 0o600, 'filePermission')

  // The kubelet atomic writer's layout, as the driver writes it.
  const names = (await readdir(r.targetPath)).sort()
  t.ok(names.includes('..data'), '..data')
  const data = await readlink(join(r.targetPath, '..data'))
  t.match(data, /^\.\.\d{4}_\d{2}_\d{2}_/, '..data points at a timestamped directory')
  t.ok((await lstat(join(r.targetPath, 'password'))).isSymbolicLink(), 'visible names are links')
  t.equal(await readlink(join(r.targetPath, 'password')), '..data/password')
  t.ok((await stat(join(r.targetPath, data))).isDirectory())

  // The status object the driver keeps, with the versions the provider answered. The same
  // Mount through the driver's own client library gives the provider's versions to compare.
  const status = await waitUntil('the SecretProviderClassPodStatus', () => w.podStatus(pod, 'db'))
  t.equal(status.status.mounted, true)
  t.equal(status.status.podName, pod.name)
  t.equal(status.status.secretProviderClassName, 'db')
  t.equal(status.status.targetPath, r.targetPath)
  t.equal(status.metadata.labels['internal.secrets-store.csi.k8s.io/node-name'], 'node-1')
  const listed = Object.fromEntries((status.status.objects as any[]).map((o) => [o.id, o.version]))
  t.same(Object.keys(listed).sort(), ['db/user', 'password'])
  const { token } = await requestToken(w.cluster.admin, ns, 'app', {
    audiences: ['vault'],
    pod: { name: pod.name, uid: pod.uid },
  })
  const direct = await driverMount({
    socketDir: w.node().providerDir,
    provider: 'vault',
    targetPath: await tempDirFor(t),
    attributes: {
      ...spcParameters(w.bao, 'kv-app', objects),
      secretProviderClass: 'db',
      'csi.storage.k8s.io/pod.name': pod.name,
      'csi.storage.k8s.io/pod.namespace': ns,
      'csi.storage.k8s.io/pod.uid': pod.uid,
      'csi.storage.k8s.io/serviceAccount.name': 'app',
      'csi.storage.k8s.io/ephemeral': 'true',
      'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({
        vault: { token, expirationTimestamp: new Date(Date.now() + 600_000).toISOString() },
      }),
    },
    secrets: 'null',
  })
  t.ok(direct.ok, direct.message)
  t.same(listed, direct.objectVersions, 'the pod status lists exactly the versions the provider returned')

  const un = await w.node().unpublish(pod.uid)
  t.ok(un.ok, un.message)
  t.same(mountsUnder(r.targetPath), [], 'unmounted')
  t.equal(un.cleaned, true, 'kubelet removed the target directory')
})

t.test(
  'secretObjects: an Opaque and a kubernetes.io/tls Secret, created by the driver, changed by rotation',
  async (t) => {
    const ns = await w.newNamespace('sync')
    await configurePki(w.bao, {
      mount: 'pki',
      rootCommonName: 'E2E Root',
      rootTtl: '48h',
      role: 'web',
      allowedDomains: ['example.test'],
      maxTtl: '1h',
    })
    await w.bao.writePolicy(
      'sync-app',
      `path "secret/*" { capabilities = ["read"] }\npath "pki/issue/web" { capabilities = ["update"] }`,
    )
    await w.kubernetesRole('sync-app', [ns], ['app'], ['sync-app'])
    await w.kvPut(`${ns}/app`, { password: 'sync-one' })
    secretValues.push('sync-one', 'sync-two')
    const objects = [
      { objectName: 'password', secretPath: `secret/data/${ns}/app`, secretKey: 'password' },
      {
        objectName: 'web',
        secretPath: 'pki/issue/web',
        method: 'PUT',
        // Short-lived, so that rotation re-issues it: reused until two thirds of 9 s.
        secretArgs: { common_name: 'web.example.test', ttl: '9s' },
        format: 'tls',
      },
    ]
    await w.createSpc(ns, 'app', {
      parameters: spcParameters(w.bao, 'sync-app', objects),
      secretObjects: [
        { secretName: 'app-opaque', type: 'Opaque', data: [{ objectName: 'password', key: 'password' }] },
        {
          secretName: 'app-tls',
          type: 'kubernetes.io/tls',
          data: [
            { objectName: 'web/tls-combined.pem', key: 'tls.crt' },
            { objectName: 'web/tls-combined.pem', key: 'tls.key' },
          ],
        },
      ],
    })
    const pod = await w.createPod(ns, 'app-0', { spc: 'app' })
    const r = await w.node().publish(ns, pod.name)
    t.ok(r.ok, r.message)
    const files = await readMountedFiles(r.targetPath)
    t.same([...files.keys()].sort(), ['password', 'web/ca.crt', 'web/tls-combined.pem', 'web/tls.crt', 'web/tls.key'])

    const opaque = await waitUntil('the Opaque Secret', () => getSecret(ns, 'app-opaque'))
    t.equal(opaque.type, 'Opaque')
    t.equal(b64(opaque.data.password), 'sync-one')
    t.equal(opaque.metadata.labels['secrets-store.csi.k8s.io/managed'], 'true', "the driver's label")
    const tls = await waitUntil('the TLS Secret', () => getSecret(ns, 'app-tls'))
    t.equal(tls.type, 'kubernetes.io/tls')
    const cert = new X509Certificate(b64(tls.data['tls.crt']))
    t.equal(cert.subject, 'CN=web.example.test')
    t.notMatch(b64(tls.data['tls.crt']), /PRIVATE KEY/, 'the driver kept only certificates for tls.crt')
    t.match(b64(tls.data['tls.key']), /^-----BEGIN (EC |RSA )?PRIVATE KEY-----/)
    t.notMatch(b64(tls.data['tls.key']), /CERTIFICATE/, 'and only the key for tls.key')
    const keyPub = createPublicKey(createPrivateKey(b64(tls.data['tls.key']))).export({ type: 'spki', format: 'der' })
    t.same(keyPub, cert.publicKey.export({ type: 'spki', format: 'der' }), 'the key matches the certificate')
    t.equal(
      b64(tls.data['tls.crt']).trim(),
      files.get('web/tls.crt')?.bytes.toString().trim(),
      'the chain as in the volume',
    )
    secretValues.push(b64(tls.data['tls.key']).trim())

    // Rotation: a new KV value and a certificate past two thirds of its life.
    await w.kvPut(`${ns}/app`, { password: 'sync-two' })
    const serial = cert.serialNumber
    await waitUntil(
      'both synced Secrets changed after republishes',
      async () => {
        const rr = await w.node().publish(ns, pod.name)
        if (!rr.ok) throw new Error(rr.message)
        const o = await getSecret(ns, 'app-opaque')
        const s = await getSecret(ns, 'app-tls')
        return (
          b64(o?.data?.password) === 'sync-two' &&
          new X509Certificate(b64(s?.data?.['tls.crt'])).serialNumber !== serial
        )
      },
      60_000,
      500,
    )
    const after = await readMountedFiles(r.targetPath)
    t.equal(after.get('password')?.bytes.toString(), 'sync-two', 'the file changed')
    t.not(new X509Certificate(after.get('web/tls.crt')!.bytes).serialNumber, serial, 'a new certificate in the volume')
    t.equal(b64((await getSecret(ns, 'app-opaque')).data.password), 'sync-two', 'the Opaque Secret changed')
    const tls2 = await getSecret(ns, 'app-tls')
    t.not(new X509Certificate(b64(tls2.data['tls.crt'])).serialNumber, serial, 'the TLS Secret changed')
    secretValues.push(b64(tls2.data['tls.key']).trim())
  },
)

t.test('rotation: a changed KV value reaches the file and the synced Secret after the poll interval', async (t) => {
  const ns = await w.newNamespace('rotate')
  await w.kubernetesRole('rotate-app', [ns])
  await w.kvPut(`${ns}/app`, { token: 'rot-1' })
  secretValues.push('rot-1', 'rot-2')
  await w.createSpc(ns, 'app', {
    parameters: spcParameters(w.bao, 'rotate-app', [
      { objectName: 'token', secretPath: `secret/data/${ns}/app`, secretKey: 'token' },
    ]),
    secretObjects: [{ secretName: 'rotated', type: 'Opaque', data: [{ objectName: 'token', key: 'token' }] }],
  })
  const pod = await w.createPod(ns, 'app-0', { spc: 'app' })
  const r = await w.node().publish(ns, pod.name)
  t.ok(r.ok, r.message)
  t.equal(r.republish, false, 'a first publish')
  const firstData = await readlink(join(r.targetPath, '..data'))
  await waitUntil('the synced Secret', async () => b64((await getSecret(ns, 'rotated'))?.data?.token) === 'rot-1')
  const metricsBefore = metricSum(await w.node().driverMetrics(), 'rotation_reconcile_total')

  // A republish within the poll interval never reaches the provider.
  const mountsBefore = await w.providerMounts(pod)
  await w.kvPut(`${ns}/app`, { token: 'rot-2' })
  const quick = await w.node().publish(ns, pod.name)
  t.ok(quick.ok, quick.message)
  t.equal(quick.republish, true, 'a republish (the CSIDriver sets requiresRepublish)')
  t.equal(quick.skipped, false)
  const skipped = (await w.providerMounts(pod)) === mountsBefore
  // (Only when the republish came within the interval; on a slow machine it may not have.)
  t.comment(`republish within the poll interval skipped by the driver: ${skipped}`)

  await w.republishThroughToProvider(pod)
  const files = await readMountedFiles(r.targetPath)
  t.equal(files.get('token')?.bytes.toString(), 'rot-2', 'the file changed')
  t.not(await readlink(join(r.targetPath, '..data')), firstData, 'a new ..data directory, switched atomically')
  await waitUntil(
    'the synced Secret updated',
    async () => b64((await getSecret(ns, 'rotated'))?.data?.token) === 'rot-2',
  )
  const status = await w.podStatus(pod, 'app')
  t.equal(status.status.objects.length, 1)
  t.ok(
    metricSum(await w.node().driverMetrics(), 'rotation_reconcile_total') > metricsBefore,
    'the driver counted the rotation (its metric rotation_reconcile_total)',
  )
})

t.test('across 10 republishes a database credential and a certificate are issued once', async (t) => {
  pg = await startPostgres()
  const db = await configurePostgresSecretsEngine(w.bao, pg, { role: 'app', defaultTtl: '1h' })
  const ns = await w.newNamespace('eco')
  await configurePki(w.bao, {
    mount: 'pki-eco',
    rootCommonName: 'E2E Eco Root',
    rootTtl: '48h',
    role: 'svc',
    allowedDomains: ['example.test'],
    maxTtl: '2h',
  })
  await w.bao.writePolicy(
    'eco-app',
    `path "${db.mount}/creds/${db.role}" { capabilities = ["read"] }\npath "pki-eco/issue/svc" { capabilities = ["update"] }`,
  )
  await w.kubernetesRole('eco-app', [ns], ['app'], ['eco-app'])
  await w.createSpc(ns, 'app', {
    parameters: spcParameters(w.bao, 'eco-app', [
      { objectName: 'db-user', secretPath: `${db.mount}/creds/${db.role}`, secretKey: 'username' },
      { objectName: 'db-password', secretPath: `${db.mount}/creds/${db.role}`, secretKey: 'password' },
      {
        objectName: 'svc',
        secretPath: 'pki-eco/issue/svc',
        method: 'PUT',
        secretArgs: { common_name: 'svc.example.test', ttl: '1h' },
        format: 'tls',
      },
    ]),
  })
  const pod = await w.createPod(ns, 'app-0', { spc: 'app' })
  const r = await w.node().publish(ns, pod.name)
  t.ok(r.ok, r.message)
  const first = await readMountedFiles(r.targetPath)
  const user = first.get('db-user')?.bytes.toString() ?? ''
  t.match(user, /^v-/, 'a database user made by OpenBao')
  secretValues.push(first.get('db-password')!.bytes.toString(), first.get('svc/tls.key')!.bytes.toString().trim())
  t.equal(
    (await pg.psql(`SELECT count(*) FROM pg_roles WHERE rolname = '${user}'`)).trim(),
    '1',
    'the user exists in PostgreSQL',
  )

  for (let i = 0; i < 10; i++) await w.republishThroughToProvider(pod)
  t.equal(await w.providerMounts(pod), 11, 'the provider answered the first publish and 10 republishes')
  t.equal(await auditCount((p) => p === `${db.mount}/creds/${db.role}`), 1, 'one database credential')
  t.equal(await auditCount((p) => p === 'pki-eco/issue/svc'), 1, 'one certificate')
  const last = await readMountedFiles(r.targetPath)
  t.equal(last.get('db-user')?.bytes.toString(), user, 'the same credential in the volume')
  t.same(last.get('svc/tls.crt')?.bytes, first.get('svc/tls.crt')?.bytes, 'the same certificate')
  const metrics = await w.node().driverMetrics()
  t.equal(metricSum(metrics, 'rotation_reconcile_error_total'), 0, 'no rotation error in the driver')
})

t.test('no secret value, JWT or Vault token in the provider or driver logs', async (t) => {
  const tokens = await w.tokensSeen()
  t.same(findLeaks(await w.provider().logs(), [...secretValues, ...tokens]), [], 'provider log')
  t.same(findLeaks(await readFile(w.node().driverLog, 'utf8'), [...secretValues, ...tokens]), [], 'driver log')
})
