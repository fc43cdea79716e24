// State handover (issue 40): during a rolling update the new provider takes over the old one's
// tokens, leases and certificates, so an upgrade costs Vault nothing. Against a real OpenBao and
// PostgreSQL, through the driver's own client; every count comes from OpenBao's audit log.
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import net from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { SealedChannel } from '../../src/handover/channel.js'
import { encodeFrameBytes, FrameReader, parseFrame } from '../../src/handover/frames.js'
import { proof, type Transcript } from '../../src/handover/proof.js'
import { parseMessage, PROTOCOL_VERSION } from '../../src/handover/wire.js'
import { DEFAULT_POLICY, Fixture, type MountOutcome, type PodSpec } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'
import { configurePki } from '../support/pki.js'
import { freePort } from '../support/ports.js'
import { configurePostgresSecretsEngine, startPostgres, type Postgres } from '../support/postgres.js'
import { startProvider, type ProviderProcess } from '../support/provider.js'
import { processTempDir } from '../support/tmp.js'

t.setTimeout(5 * 60_000)

const KV_VALUES = ['kv-one', 'kv-two', 'kv-three'].map((k) => `${k}-${randomBytes(6).toString('hex')}`)
const OBJECTS = [
  { objectName: 'db-user', secretPath: 'database/creds/app', secretKey: 'username' },
  { objectName: 'db-pass', secretPath: 'database/creds/app', secretKey: 'password' },
  {
    objectName: 'tls.crt',
    secretPath: 'pki/issue/web',
    method: 'PUT',
    secretKey: 'certificate',
    secretArgs: { common_name: 'app.example.test', ttl: '1h' },
  },
  {
    objectName: 'tls.key',
    secretPath: 'pki/issue/web',
    method: 'PUT',
    secretKey: 'private_key',
    secretArgs: { common_name: 'app.example.test', ttl: '1h' },
  },
  ...KV_VALUES.map((_, i) => ({ objectName: `kv-${i}`, secretPath: `secret/data/handover-${i}`, secretKey: 'value' })),
]
const params = { objects: OBJECTS }

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function waitFor(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

async function logLine(p: ProviderProcess, msg: string): Promise<Record<string, any> | undefined> {
  return (await p.logLines()).find((l) => l.msg === msg)
}

type AuditEntry = { type?: string; error?: string; auth?: { policies?: string[] }; request?: { path?: string } }

let fx: Fixture
let pg: Postgres
let audit: string
const providers: ProviderProcess[] = []
const secrets: string[] = [...KV_VALUES]

/** Provider requests (not the harness's root token) by path, from the audit log's response entries. */
async function counts(): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (const e of (await fx.bao.readAuditLog(audit)) as AuditEntry[]) {
    if (e.type !== 'response' || e.auth?.policies?.includes('root') === true) continue
    const p = e.request?.path ?? ''
    const key = p.startsWith('auth/jwt/login') ? 'login' : p
    out.set(key, (out.get(key) ?? 0) + 1)
  }
  return out
}

function since(before: Map<string, number>, after: Map<string, number>, key: string): number {
  return (after.get(key) ?? 0) - (before.get(key) ?? 0)
}

t.before(async () => {
  pg = await startPostgres()
  fx = await Fixture.start()
  providers.push(fx.provider)
  audit = await fx.bao.enableFileAudit()
  await configurePostgresSecretsEngine(fx.bao, pg, { role: 'app', defaultTtl: '1h', maxTtl: '24h' })
  await configurePki(fx.bao, {
    rootCommonName: 'Handover Root',
    rootTtl: '24h',
    role: 'web',
    allowedDomains: ['example.test'],
    maxTtl: '2h',
  })
  await fx.bao.writePolicy(
    DEFAULT_POLICY,
    [
      'path "secret/*" { capabilities = ["read"] }',
      'path "database/creds/app" { capabilities = ["read"] }',
      'path "pki/issue/web" { capabilities = ["update"] }',
      'path "sys/leases/renew" { capabilities = ["update"] }',
    ].join('\n'),
  )
  for (const [i, value] of KV_VALUES.entries()) await fx.kvPut(`handover-${i}`, { value })
  // The fixture's own provider is not used here: each test starts its pair in a directory of its own.
  await fx.provider.stop()
})

t.teardown(async () => {
  for (const p of providers) await p.stop('SIGKILL')
  await fx?.stop()
  await pg?.stop()
})

async function start(t: Test, o: { socketDir?: string; args?: string[]; hmacKeyFile?: string } = {}) {
  const p = await startProvider({ ...o, args: [`-vault-addr=${fx.bao.addr}`, ...(o.args ?? [])] })
  providers.push(p)
  t.teardown(() => p.stop('SIGKILL'))
  return p
}

/** Mounts each pod once through the driver's client; every Mount must succeed. */
async function mountAll(t: Test, socketDir: string, pods: PodSpec[]): Promise<MountOutcome[]> {
  const local = Fixture.attach(fx.bao, { socketDir } as ProviderProcess)
  const out = await Promise.all(pods.map((pod) => local.mount({ pod, params })))
  for (const o of out) {
    t.ok(o.result.ok, o.result.message)
    secrets.push(o.files.get('db-pass')?.bytes.toString() ?? '', o.files.get('tls.key')?.bytes.toString() ?? '')
  }
  fx.issuedJwts.push(...local.issuedJwts)
  return out
}

const podsNamed = (prefix: string, n: number): PodSpec[] =>
  Array.from({ length: n }, (_, i) => ({
    name: `${prefix}-${i}`,
    uid: `${prefix}-uid-${i}-${randomBytes(4).toString('hex')}`,
  }))

/** Starts the successor the way a DaemonSet rolling update does: same socket directory, the old one still serving. */
async function replace(
  t: Test,
  old: ProviderProcess,
  args: string[] = [],
  hmacKeyFile?: string,
): Promise<ProviderProcess> {
  const next = await start(t, { socketDir: old.socketDir, args, hmacKeyFile })
  await waitFor('the new instance serving', async () => (await logLine(next, 'serving the provider API')) !== undefined)
  return next
}

async function metric(port: number, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${want}} `))
  return line === undefined ? undefined : Number(line.split(' ')[1])
}

for (const scope of ['pod', 'serviceaccount'] as const) {
  t.test(`${scope} scope: a rolling update costs Vault no login, credential or certificate`, async (t) => {
    const args = [`-identity-scope=${scope}`]
    const old = await start(t, { args })
    const pods = podsNamed(`up-${scope}`, 4)
    await mountAll(t, old.socketDir, pods)
    const before = await mountAll(t, old.socketDir, pods)
    const audited = await counts()

    const port = await freePort()
    const next = await replace(t, old, [...args, `-health-addr=127.0.0.1:${port}`])
    await waitFor(
      'the state taken over',
      async () => (await logLine(next, 'took over the state of the provider this one replaces')) !== undefined,
    )
    const after = await mountAll(t, old.socketDir, pods)
    const now = await counts()

    t.equal(since(audited, now, 'login'), 0, 'no login caused by the upgrade')
    t.equal(since(audited, now, 'database/creds/app'), 0, 'no database credential caused by the upgrade')
    t.equal(since(audited, now, 'pki/issue/web'), 0, 'no certificate caused by the upgrade')
    t.equal(since(audited, now, 'auth/token/revoke-self'), 0, 'nothing revoked')
    for (const [i, o] of after.entries()) {
      const b = before[i]!
      t.same(o.result.objectVersions, b.result.objectVersions, `${pods[i]!.name}: the same object versions`)
      for (const [file, content] of b.files) {
        t.ok(o.files.get(file)?.bytes.equals(content.bytes), `${pods[i]!.name}: ${file} unchanged`)
      }
    }
    const took = await logLine(next, 'took over the state of the provider this one replaces')
    const identities = scope === 'pod' ? pods.length : 1
    t.same(took?.identities, { taken_over: identities, refused: 0, expired: 0 }, 'identities taken over')
    t.same(took?.leases, { taken_over: 2 * pods.length, refused: 0, expired: 0 }, 'a lease and a certificate per pod')
    t.equal(
      await metric(port, 'vault_csi_provider_handover_total', { item: 'identity', outcome: 'taken_over' }),
      identities,
    )
    t.equal(
      await metric(port, 'vault_csi_provider_handover_total', { item: 'lease', outcome: 'taken_over' }),
      2 * pods.length,
    )
    const gave = await logLine(old, 'handed over the state of this provider to the new provider')
    t.equal(gave?.identities, identities)
    t.equal(next.child.exitCode, null, 'the new instance serves')
    t.equal((await old.stop('SIGTERM')).code, 0, 'the old one stood by and exits cleanly')
    t.equal(since(audited, await counts(), 'auth/token/revoke-self'), 0, 'the old instance revoked nothing at its exit')
  })
}

t.test('the old process never revokes what it handed over; the new one revokes it once idle', async (t) => {
  // The old one would revoke an identity unused for 6 s (its sweeper looks every 1.5 s).
  const old = await start(t, { args: ['-identity-idle-timeout=6s'] })
  const pods = podsNamed('idle', 3)
  const mounted = await mountAll(t, old.socketDir, pods)
  const audited = await counts()
  const next = await replace(t, old, ['-identity-idle-timeout=15s'])
  await waitFor(
    'the state taken over',
    async () => (await logLine(old, 'standing by until this pod is stopped')) !== undefined,
  )
  // Longer than the old process's idle time and sweep: had it kept sweeping, it would have revoked by now.
  await sleep(8_000)
  t.equal(since(audited, await counts(), 'auth/token/revoke-self'), 0, 'the old process revoked nothing')
  await waitFor(
    'the new process to revoke the idle identities',
    async () => since(audited, await counts(), 'auth/token/revoke-self') >= pods.length,
    60_000,
  )
  const entries = ((await fx.bao.readAuditLog(audit)) as AuditEntry[]).filter(
    (e) => e.type === 'response' && e.request?.path === 'auth/token/revoke-self',
  )
  t.equal(
    entries.slice(-pods.length).filter((e) => e.error === undefined).length,
    pods.length,
    'each revoked once, by its owner',
  )
  t.equal(since(audited, await counts(), 'auth/token/revoke-self'), pods.length, 'no second revocation')
  // Revoking a token revokes its leases: the database users are gone.
  for (const o of mounted) {
    const user = o.files.get('db-user')?.bytes.toString() ?? ''
    await waitFor(
      `${user} dropped`,
      async () => (await pg.psql(`SELECT count(*) FROM pg_roles WHERE rolname = '${user}'`)).trim() === '0',
    )
  }
  t.pass('the database users of the revoked identities are gone')
  await next.stop()
})

t.test('after kill -9 the successor starts cold: nothing is kept on disk', async (t) => {
  const first = await start(t)
  const pods = podsNamed('killed', 2)
  await mountAll(t, first.socketDir, pods)
  await first.stop('SIGKILL')
  const audited = await counts()
  const second = await start(t, { socketDir: first.socketDir })
  const cold = await logLine(second, 'starting cold')
  t.match(cold?.why, 'ECONNREFUSED', 'nothing answers on the handover socket')
  await mountAll(t, second.socketDir, pods)
  t.equal(since(audited, await counts(), 'login'), pods.length, 'every pod logs in again')
})

t.test(
  'state from a provider with another HMAC key or other settings is refused: the successor starts cold',
  async (t) => {
    const cases = [
      { name: 'another HMAC key', args: [], key: true, why: "does not hold this provider's HMAC key" },
      { name: 'another identity scope', args: ['-identity-scope=serviceaccount'], key: false, why: 'identity scope' },
      { name: 'another auth mount', args: ['-vault-mount=kubernetes-other'], key: false, why: 'auth mount' },
    ]
    for (const c of cases) {
      const old = await start(t)
      const pods = podsNamed(`refused-${c.args.length}-${c.key}`, 2)
      await mountAll(t, old.socketDir, pods)
      const audited = await counts()
      const otherKey = c.key ? join(await processTempDir('key-'), 'other.key') : undefined
      const next = await replace(t, old, c.args, otherKey)
      const refused = await logLine(next, 'state handover refused; starting cold')
      t.match(refused?.why, c.why, `${c.name}: the log line says why`)
      await mountAll(t, old.socketDir, pods)
      const logins = since(audited, await counts(), 'login')
      t.equal(
        logins,
        c.args.includes('-identity-scope=serviceaccount') ? 1 : pods.length,
        `${c.name}: cold, every identity logs in`,
      )
      t.equal(await logLine(old, 'handed over the state of this provider to the new provider'), undefined)
    }
  },
)

/**
 * A predecessor of the test's own making at the handover socket: it authenticates with the
 * successor's key as a real one would (sealing what follows), then sends what `misbehave` writes.
 */
async function fakePredecessor(
  t: Test,
  dir: string,
  key: Buffer,
  misbehave: (s: net.Socket, c: SealedChannel) => Promise<void>,
): Promise<void> {
  const server = net.createServer((socket) => {
    const reader = new FrameReader(socket, { maxFrameBytes: 1 << 20, maxTotalBytes: 1 << 22 })
    void (async () => {
      const helloBytes = await reader.nextBytes(10_000)
      const hello = parseMessage(parseFrame(helloBytes))
      if (hello.type !== 'hello') throw new Error('expected hello')
      const tr: Transcript = {
        successorNonce: hello.nonce,
        predecessorNonce: randomBytes(32).toString('base64'),
        successorPid: hello.pid,
        predecessorPid: process.pid,
      }
      const challenge = Buffer.from(
        JSON.stringify({
          type: 'challenge',
          version: PROTOCOL_VERSION,
          pid: process.pid,
          nonce: tr.predecessorNonce,
          proof: proof(key, 'predecessor', tr),
        }),
      )
      socket.write(encodeFrameBytes(challenge))
      const answer = await reader.nextBytes(10_000)
      const channel = SealedChannel.open('predecessor', socket, reader, key, tr, [helloBytes, challenge, answer])
      await channel.send({
        type: 'settings',
        settings: {
          vaultAddress: fx.bao.addr,
          vaultNamespace: '',
          authMount: 'kubernetes',
          identityScope: 'pod',
          shareDynamicSecrets: false,
        },
      })
      await channel.next(10_000)
      await misbehave(socket, channel)
    })().catch(() => socket.destroy())
  })
  await new Promise<void>((resolve) => server.listen(join(dir, 'vault.sock.handover'), resolve))
  t.teardown(() => server.close())
}

t.test('oversized or malformed state is refused, and the successor serves cold', async (t) => {
  const header = Buffer.alloc(4)
  header.writeUInt32BE(512 * 1024 * 1024)
  const cases: Array<{ name: string; send: (s: net.Socket, c: SealedChannel) => Promise<void>; why: string }> = [
    { name: 'a frame of 512 MiB', send: async (s) => void s.write(header), why: 'more than' },
    {
      name: 'more identities than a node holds',
      send: (_, c) => c.send({ type: 'begin', sessions: 10_000_000, leases: 0 }),
      why: 'more than 20000',
    },
    {
      name: 'a malformed identity',
      send: async (_, c) => {
        await c.send({ type: 'begin', sessions: 1, leases: 0 })
        await c.send({ type: 'session', session: { identity: 'x', token: {}, earlierTokens: [], lastUsedAt: 0 } })
      },
      why: 'identity is not an object',
    },
    {
      name: 'a frame that is not JSON',
      send: (_, c) => c.sendJson(Buffer.from('{{{')),
      why: 'not JSON',
    },
  ]
  for (const c of cases) {
    const dir = await processTempDir('sock-')
    const key = randomBytes(32)
    await writeFile(join(dir, 'hmac.key'), key, { mode: 0o600 })
    await fakePredecessor(t, dir, key, c.send)
    const next = await start(t, { socketDir: dir })
    await waitFor(
      `${c.name}: the handover to end`,
      async () => (await logLine(next, 'state handover ended early; the rest starts cold')) !== undefined,
    )
    const line = await logLine(next, 'state handover ended early; the rest starts cold')
    t.match(line?.why, c.why, `${c.name}: refused, saying why`)
    t.equal(line?.identities?.taken_over, 0, `${c.name}: nothing taken over`)
    const audited = await counts()
    await mountAll(t, dir, podsNamed('after-bad-state', 1))
    t.equal(since(audited, await counts(), 'login'), 1, `${c.name}: the successor serves, cold`)
  }
})

t.test('no secret, token or JWT in any log line', async (t) => {
  for (const p of providers)
    t.same(findLeaks(await p.logs(), [...secrets.filter((s) => s !== ''), ...fx.issuedJwts]), [], p.logPath)
})
