// Issue 37, classes 1 and 2, and the rest of what the pods of a node share in the daemon: one
// tenant (a namespace) must not spend another's share of the connection pools, the sessions, the
// secret store, the breaker or the node's Mount budget. Each attack comes from pods of namespace
// `tenant-b` while the victim pod of namespace `default` mounts through the same daemon; besides
// the framework's isolation checks (every victim Mount succeeds, its p99 within the bound), the
// victims must keep what they hold: no new login in OpenBao's audit log while the attacker churns
// pools and sessions, no new read while it churns the secret store. Besides the framework's victim,
// which mounts all the time (a least-recently-used cache keeps what is used that often), a quiet
// victim of the same namespace mounts once before an attack and once after it, as a pod does
// when kubelet remounts it every few minutes: what it holds must still be there.
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import t, { type Test } from 'tap'
import {
  checkIsolation,
  exclusiveSuite,
  makeTestPki,
  newPod,
  runAttack,
  runAttackConfirmed,
  startFakeHost,
  type PodIdentitySpec,
} from '../support/adversary.js'
import { ANY_ROLE, expectAttack, finishSuite, startWorld, type World } from '../support/adversary-world.js'
import { configureJwtAuth, createJwtRole } from '../support/jwt.js'
import { mustSucceed, startOpenBao } from '../support/openbao.js'
import { startPostgres } from '../support/postgres.js'
import { tempDirFor } from '../support/tmp.js'

t.setTimeout(30 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

/** The attacker's namespace; the victim's is `default`. */
const TENANT = 'tenant-b'
const victimObjects = [{ objectName: 'password', secretPath: 'secret/data/victim', secretKey: 'password' }]

/** The quiet victim's role: the victim's service account and policy under another role, so a session of its own. */
const QUIET_ROLE = 'quiet'

/** Audit entries of logins answered for the victim's service account (default/app) with `role`. */
async function logins(w: World, audit: string, role: string): Promise<number> {
  const entries = await w.bao.readAuditLog(audit)
  return entries.filter(
    (e) =>
      e.type === 'response' &&
      e.request?.path === 'auth/jwt/login' &&
      e.auth?.display_name === 'jwt-system:serviceaccount:default:app' &&
      e.auth?.metadata?.role === role,
  ).length
}

/** Audit entries of reads of `path`. */
async function reads(w: World, audit: string, path: string): Promise<number> {
  const entries = await w.bao.readAuditLog(audit)
  return entries.filter((e) => e.type === 'request' && e.request?.path === path && e.request?.operation === 'read')
    .length
}

/** One Mount of the quiet victim, asserted to succeed with `expected`. */
async function quietMount(t: Test, w: World, attributes: string, expected: string): Promise<void> {
  const r = await w.mount(attributes)
  t.equal(r.grpcCode, 'OK', `the quiet victim mounts: ${r.message.slice(0, 300)}`)
  t.equal(Buffer.from(r.files[0]?.contents ?? '').toString(), expected, 'with its secret')
}

function tenantPod(name: string, serviceAccount = 'sa-b'): PodIdentitySpec {
  return newPod(name, TENANT, serviceAccount)
}

t.test('pools, sessions and the breaker of one OpenBao', async (t) => {
  const pki = makeTestPki(join(await tempDirFor(t, 'vcp-adv-pki-'), 'pki'))
  // The attacker's own Vault, over TLS: each CA file it names makes a pool of its own. A
  // stand-in (a loopback server of the test's) because only its pool count matters here.
  const ownVault = await startFakeHost({
    kind: 'hostile-vault',
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
  })
  t.teardown(() => ownVault.close())
  const w = await startWorld({
    allow: [ownVault.url],
    // Few sessions, so that churning them is quick; serviceaccount scope, so that new pods of the
    // victim's service account share its session (issue 37: they failed too).
    args: () => ['-cache-size=8', '-identity-scope=serviceaccount'],
  })
  t.teardown(() => w.stop())
  const audit = await w.bao.enableFileAudit()
  await createJwtRole(w.bao, 'jwt', QUIET_ROLE, {
    policies: ['app-read'],
    boundAudiences: ['vault'],
    boundSubject: 'system:serviceaccount:default:app',
    ttl: '1h',
  })
  const quiet = w.attrs({ roleName: QUIET_ROLE, objects: victimObjects }, newPod('quiet-0'))
  /** Runs `attack` between two Mounts of the quiet victim; neither victim logs in again meanwhile. */
  const keepsItsSession = async (t: Test, attack: () => Promise<unknown>): Promise<void> => {
    await quietMount(t, w, quiet, w.victimValue)
    const before = [await logins(w, audit, 'app'), await logins(w, audit, QUIET_ROLE)]
    await attack()
    await quietMount(t, w, quiet, w.victimValue)
    t.same(
      [await logins(w, audit, 'app'), await logins(w, audit, QUIET_ROLE)],
      before,
      'no new login of either victim: their sessions (cached tokens) and pools were kept',
    )
  }

  await t.test("80 TLS variants of the victim's own http:// address", async (t: Test) => {
    // TLS settings do not apply to http://: on 3964ba9 each variant was a pool of its own, the
    // 65th pushed out the victim's, and the victim's session failed every call from then on.
    const pod = tenantPod('pools-http')
    const perVariant = Array.from({ length: 80 }, (_, i) =>
      w.attrs({ roleName: ANY_ROLE, vaultTLSServerName: `h${i}.tenant-b.example`, objects: victimObjects }, pod),
    )
    await keepsItsSession(t, () =>
      expectAttack(t, w, {
        klass: '37.1',
        name: "80 TLS variants of the victim's http:// Vault address",
        attempt: (i) => w.mount(perVariant[i % perVariant.length]!),
        // Every variant twice: more than the registry's 64 pools.
        repeat: 2 * perVariant.length,
        expect: { code: 'PermissionDenied', message: [/object "password"/, /secret\/data\/victim/] },
      }),
    )
    // New pods of the victim's service account: its session, its token, its pool.
    const before = await logins(w, audit, 'app')
    for (let i = 0; i < 3; i++) {
      await quietMount(t, w, w.attrs({ objects: victimObjects }, newPod(`victim-new-${i}`)), w.victimValue)
    }
    t.equal(await logins(w, audit, 'app'), before, "new pods of the victim's service account used its cached token")
  })

  await t.test('80 pools of its own Vault (more than the registry holds)', async (t: Test) => {
    const dir = await tempDirFor(t, 'vcp-adv-cas-')
    const caCopies = Array.from({ length: 80 }, (_, i) => {
      const path = join(dir, `ca-${i}.pem`)
      copyFileSync(pki.caCertPath, path)
      return path
    })
    const pod = tenantPod('pools-https')
    const perPool = caCopies.map((caPath) =>
      w.attrs(
        {
          roleName: ANY_ROLE,
          vaultAddress: ownVault.url,
          vaultCACertPath: caPath,
          objects: [{ objectName: 'own', secretPath: 'hostile/none' }],
        },
        pod,
      ),
    )
    await keepsItsSession(t, () =>
      expectAttack(t, w, {
        klass: '37.1',
        name: '80 pools of the attacker’s own https:// Vault (one CA file each)',
        attempt: (i) => w.mount(perPool[i % perPool.length]!),
        // Every pool twice: more than the registry holds, each pushed out and made again.
        repeat: 2 * perPool.length,
        expect: { code: 'NotFound', message: [/object "own"/] },
      }),
    )
    const seen = (await ownVault.requests()).length
    t.ok(seen >= 160, `the attacker’s Vault did get the calls (${seen}): the pools were used`)
  })

  await t.test('200 service accounts of the attacker’s namespace (against -cache-size=8)', async (t: Test) => {
    const perAccount = Array.from({ length: 200 }, (_, i) =>
      w.attrs({ roleName: ANY_ROLE, objects: victimObjects }, tenantPod(`sessions-${i}`, `sa-${i}`)),
    )
    await keepsItsSession(t, () =>
      expectAttack(t, w, {
        klass: '37.1',
        name: '200 service accounts logging in, 2 at once (-cache-size=8)',
        attempt: (i) => w.mount(perAccount[i % perAccount.length]!),
        // Each new service account is a new entity in OpenBao: more at once would measure OpenBao.
        concurrency: 2,
        expect: { code: 'PermissionDenied', message: [/object "password"/] },
      }),
    )
  })

  await t.test('the attacker’s reads answering 503', async (t: Test) => {
    // sys/health answers 503 to anyone who asks with activecode=503: a path any pod may name. Four
    // distinct queries, read in parallel by one Mount. On 3964ba9 three 503s in a row opened the
    // breaker for the address, and every Mount for it (the victim's) failed fast as "unreachable".
    const queries = ['activecode=503', 'activecode=503&standbyok=true', 'activecode=503&perfstandbyok=true']
    const attributes = w.attrs(
      {
        roleName: ANY_ROLE,
        objects: [...queries, 'activecode=503&sealedcode=503'].map((q, i) => ({
          objectName: `h${i}`,
          secretPath: `sys/health?${q}`,
        })),
      },
      tenantPod('breaker'),
    )
    const out = await runAttackConfirmed(t, w.daemon, w.victim, {
      klass: '37.2',
      name: '4 reads answering 503 per Mount, 4 Mounts at once',
      attempt: () => w.mount(attributes, 'null', 20_000),
      concurrency: 4,
      minDurationMs: 4000,
    })
    checkIsolation(t, w.daemon, out)
    // The Mount's own retries end in Unavailable; a Mount whose deadline comes first says so.
    t.same(
      [...new Set(out.answers.map((a) => a.grpcCode))].filter((c) => c !== 'Unavailable' && c !== 'DeadlineExceeded'),
      [],
      `the attacker got Unavailable: ${out.answer.message.slice(0, 200)}`,
    )
    t.match(out.answer.message, /object "h\d"/, 'naming its object')
    t.match(out.answer.message, /503/, 'and the status')
    const opened = (await w.daemon.provider.logLines()).filter(
      (l) => typeof l.msg === 'string' && l.msg.startsWith('Vault unreachable'),
    )
    t.same(opened, [], 'the breaker never opened for OpenBao (its own probe found it healthy)')
  })

  await finishSuite(t, w, 'shared-state')
})

t.test('the secret store (-static-freshness=10m)', async (t) => {
  // The attacker reads large secrets of its own from an OpenBao of its own (encoding megabytes
  // costs OpenBao CPU, and the victim's OpenBao must only show the victim's reads). The victim's
  // answer is kept for 10 minutes: it must not be read again while the attacker fills the store.
  const big = await startOpenBao()
  t.teardown(() => big.stop())
  await configureJwtAuth(big, 'jwt')
  await big.writePolicy('read-all', 'path "secret/*" { capabilities = ["read"] }')
  await createJwtRole(big, 'jwt', ANY_ROLE, { policies: ['read-all'], boundAudiences: ['vault'], ttl: '1h' })
  const SECRETS = 32
  const MiB = 1024 * 1024
  for (let i = 0; i < SECRETS; i++) {
    const put = await big.api('POST', `/v1/secret/data/big-${i}`, { data: { v: String(i).padEnd(3 * MiB, 'b') } })
    t.equal(put.status, 200, `kv put big-${i}`)
  }
  const w = await startWorld({ allow: [big.addr], args: () => ['-static-freshness=10m'] })
  t.teardown(() => w.stop())
  const audit = await w.bao.enableFileAudit()
  const quietValue = `quiet-${w.victimValue}`
  w.secrets.push(quietValue)
  t.equal((await w.bao.api('POST', '/v1/secret/data/quiet', { data: { password: quietValue } })).status, 200)
  const quiet = w.attrs(
    { objects: [{ objectName: 'password', secretPath: 'secret/data/quiet', secretKey: 'password' }] },
    newPod('quiet-0'),
  )
  await quietMount(t, w, quiet, quietValue)
  t.equal(await reads(w, audit, 'secret/data/quiet'), 1, 'the quiet victim read its secret once')
  const pod = tenantPod('store')
  const perSecret = Array.from({ length: SECRETS }, (_, i) =>
    w.attrs(
      {
        roleName: ANY_ROLE,
        vaultAddress: big.addr,
        objects: [{ objectName: 'big', secretPath: `secret/data/big-${i}`, secretKey: 'v' }],
      },
      pod,
    ),
  )
  const victimReads = await reads(w, audit, 'secret/data/victim')
  await expectAttack(t, w, {
    klass: '37.1',
    name: `${SECRETS} distinct answers of 3 MiB kept by one pod (96 MiB against the store's 64 MiB)`,
    attempt: (i) => w.mount(perSecret[i % SECRETS]!, 'null', 30_000),
    repeat: SECRETS,
    expect: { code: 'OK', message: [] },
  })
  await quietMount(t, w, quiet, quietValue)
  t.same(
    [await reads(w, audit, 'secret/data/victim'), await reads(w, audit, 'secret/data/quiet')],
    [victimReads, 1],
    'no new read of either victim’s secret: their kept answers served',
  )
  await finishSuite(t, w, 'shared-state-store')
})

t.test('the node’s Mount budget (-max-node-mount-bytes=2MiB)', async (t) => {
  // The attacker's pods hold Mounts in flight with what they have read so far, from a Vault of
  // their own that answers one object slowly (a stand-in: a loopback server of the test's). The
  // victim's Mount needs about 500 KB (a 250 KB value, read and written). A small node budget, so
  // that the amounts stay small (the property is the share, not the size).
  const ownVault = await startFakeHost({ kind: 'hostile-vault' })
  t.teardown(() => ownVault.close())
  const w = await startWorld({
    allow: [ownVault.url],
    args: () => ['-max-node-mount-bytes=2MiB'],
    victimValueChars: 250_000,
  })
  t.teardown(() => w.stop())
  const objects = [
    { objectName: 'hold', secretPath: 'hostile/slow/1500' },
    ...Array.from({ length: 6 }, (_, k) => ({ objectName: `s${k}`, secretPath: `hostile/sized/${75_000 + k}` })),
  ]
  const perPod = Array.from({ length: 64 }, (_, i) =>
    w.attrs({ roleName: ANY_ROLE, vaultAddress: ownVault.url, objects }, tenantPod(`budget-${i}`)),
  )
  const out = await runAttackConfirmed(t, w.daemon, w.victim, {
    klass: 'own',
    name: '8 pods at once holding 450 KB each in flight (-max-node-mount-bytes=2MiB)',
    attempt: (i) => w.mount(perPod[i % perPod.length]!, 'null', 20_000),
    concurrency: 8,
    victimSamples: 40,
    minDurationMs: 6000,
  })
  checkIsolation(t, w.daemon, out)
  t.same(
    [...new Set(out.answers.map((a) => a.grpcCode))].filter((c) => c !== 'OK' && c !== 'ResourceExhausted'),
    [],
    'the attacker’s Mounts succeeded or were refused for the budget',
  )
  const refused = out.answers.filter((a) => a.grpcCode === 'ResourceExhausted')
  t.ok(refused.length > 0, `some were refused (${refused.length} of ${out.answers.length})`)
  t.same(
    refused.filter((a) => !a.message.includes("this namespace's Mounts in flight")).map((a) => a.message.slice(0, 200)),
    [],
    'each for its namespace’s share, never for a node spent',
  )
  await finishSuite(t, w, 'shared-state-budget')
})

t.test('the connections to one Vault address, held by one namespace’s slow calls', async (t) => {
  // A namespace's legitimately slow Vault path: database credentials whose creation statement
  // takes 2 s (a database under load), from the real database secrets engine against the real
  // PostgreSQL. 80 of its pods mount at once; the victim reads a KV secret of the same OpenBao,
  // which OpenBao answers at once meanwhile.
  const pg = await startPostgres()
  t.teardown(() => pg.stop())
  const w = await startWorld()
  t.teardown(() => w.stop())
  await w.bao.enableSecrets('database', 'database')
  mustSucceed(
    'database connection',
    await w.bao.api('POST', '/v1/database/config/pg', {
      plugin_name: 'postgresql-database-plugin',
      connection_url: pg.connectionUrl(true),
      username: pg.user,
      password: pg.password,
      allowed_roles: ['slow'],
      max_open_connections: 90,
    }),
  )
  mustSucceed(
    'database role',
    await w.bao.api('POST', '/v1/database/roles/slow', {
      db_name: 'pg',
      creation_statements: [
        'SELECT pg_sleep(2);',
        `CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';`,
      ],
      default_ttl: '1h',
    }),
  )
  await w.bao.writePolicy('slow-db', 'path "database/creds/slow" { capabilities = ["read"] }')
  await createJwtRole(w.bao, 'jwt', 'slow-db', { policies: ['slow-db'], boundAudiences: ['vault'], ttl: '1h' })
  // A new pod each time: a pod's credentials are kept for it, and only new ones are slow.
  const perPod = Array.from({ length: 80 }, (_, i) =>
    w.attrs(
      {
        roleName: 'slow-db',
        objects: [{ objectName: 'user', secretPath: 'database/creds/slow', secretKey: 'username' }],
      },
      tenantPod(`db-${i}`),
    ),
  )
  // Meanwhile OpenBao itself answers the victim's path at once (root token, not through the provider).
  const direct = (async () => {
    await new Promise((r) => setTimeout(r, 5000))
    const started = performance.now()
    const res = await w.bao.api('GET', '/v1/secret/data/victim')
    return { status: res.status, ms: performance.now() - started }
  })()
  // One burst: 80 Mounts at once, each its pod's only one. (Repeated rounds would mostly sample the
  // moments a connection is free: a victim Mount that waits is one sample, a fast one many.)
  const out = await runAttack(w.daemon, w.victim, {
    klass: 'own',
    name: '80 pods of one namespace at once, reading slow database credentials from the victim’s OpenBao',
    attempt: (i) => w.mount(perPod[i]!, 'null', 30_000),
    concurrency: perPod.length,
    repeat: false,
    victimSamples: 20,
  })
  const { status, ms } = await direct
  t.comment(`5 s into the attack, OpenBao answered the victim's path directly in ${ms.toFixed(1)} ms`)
  t.equal(status, 200)
  // OpenBao's PostgreSQL plugin makes one user at a time: the last pods run out of time.
  t.same(
    [...new Set(out.answers.map((a) => a.grpcCode))].filter((c) => c !== 'OK' && c !== 'DeadlineExceeded'),
    [],
    `the slow namespace got its credentials or ran out of time (${out.answers.filter((a) => a.ok).length} of ${out.answers.length} got them)`,
  )
  // One namespace has at most MAX_CALLS_PER_TENANT of the address's connections in flight.
  checkIsolation(t, w.daemon, out)
  await finishSuite(t, w, 'shared-state-connections')
})

t.test('the memory one namespace’s pools and sessions hold, then its Mount budget', async (t) => {
  // Pools and sessions are bounded in number (64 pools, -cache-size sessions), not in memory, and
  // what they hold is not counted against -max-node-mount-bytes: the two together can take the
  // daemon past the DaemonSet's memory limit, where kubelet would kill it for every namespace.
  const pki = makeTestPki(join(await tempDirFor(t, 'vcp-adv-pki-'), 'pki'))
  // The attacker's own Vault over TLS (a stand-in, as above).
  const ownVault = await startFakeHost({
    kind: 'hostile-vault',
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
  })
  t.teardown(() => ownVault.close())
  const w = await startWorld({ allow: [ownVault.url] })
  t.teardown(() => w.stop())
  t.equal((await w.bao.api('POST', '/v1/secret/data/t34k', { data: { p: 'p'.repeat(34_000) } })).status, 200)
  await createJwtRole(w.bao, 'jwt', 'reader', { policies: ['app-read'], boundAudiences: ['vault'], ttl: '1h' })
  // 2000 pods, each naming its own copy of the CA: a pool and a session each (the caches keep 64
  // and 1000 of them, this namespace's own least recently used going first).
  const dir = await tempDirFor(t, 'vcp-adv-cas-')
  for (let i = 0; i < 2000; i += 16) {
    await Promise.all(
      Array.from({ length: 16 }, (_, k) => {
        const caPath = join(dir, `ca-${i + k}.pem`)
        copyFileSync(pki.caCertPath, caPath)
        return w.mount(
          w.attrs(
            {
              roleName: ANY_ROLE,
              vaultAddress: ownVault.url,
              vaultCACertPath: caPath,
              objects: [{ objectName: 'own', secretPath: 'hostile/none' }],
            },
            tenantPod(`memory-${i + k}`, `sa-${i + k}`),
          ),
        )
      }),
    )
  }
  t.comment(
    `after 2000 pools and sessions of ${TENANT}: RSS ${(w.daemon.watchdog.rssBytes() / 2 ** 20).toFixed(1)} MiB`,
  )
  // Then six of its pods at once with 999 templates of 1 MB each (each stopped at -max-mount-bytes).
  const templates = Array.from(
    { length: 999 },
    (_, i) => `- objectName: t${i}\n  secretPath: secret/data/t34k\n  template: "${'{{p}}'.repeat(30)}"`,
  ).join('\n')
  const attributes = w.attrs({ roleName: 'reader', objects: templates }, tenantPod('memory-templates'))
  const out = await runAttack(w.daemon, w.victim, {
    klass: 'own',
    name: '2000 pools and sessions of one namespace, then 6 of its pods at once with 999 templates of 1 MB',
    attempt: () => w.mount(attributes, 'null', 30_000),
    concurrency: 6,
    repeat: false,
  })
  t.equal(out.answer.grpcCode, 'ResourceExhausted', out.answer.message.slice(0, 200))
  t.ok(out.daemonAlive, 'the daemon survived (the watchdog kills only far past the limit)')
  t.ok(
    out.peakRssBytes <= w.daemon.limitBytes,
    `peak RSS ${(out.peakRssBytes / 2 ** 20).toFixed(1)} MiB within the DaemonSet's ${w.daemon.limitBytes / 2 ** 20} MiB limit`,
  )
  t.same(out.victim.failures.slice(0, 3), [], "the victim's Mounts kept succeeding")
  await finishSuite(t, w, 'shared-state-memory')
})
