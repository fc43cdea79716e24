// The handover's frames, messages and proof: what the successor accepts from the socket.
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { encodeFrame, FrameReader } from '../../../src/handover/frames.js'
import { proof, proofMatches, type Transcript } from '../../../src/handover/proof.js'
import { entryFrame, InvalidMessage, parseMessage, sessionFrame } from '../../../src/handover/wire.js'
import type { ExportedSession } from '../../../src/vault/sessions/exported.js'
import { thrown } from '../../support/thrown.js'

const session: ExportedSession = {
  identity: {
    connection: { address: 'https://vault.test:8200', tls: { skipVerify: false, caCertPath: '/tls/ca.pem' } },
    authMount: 'kubernetes',
    role: 'web',
    audience: 'vault',
    pod: { namespace: 'shop', name: 'web-0', uid: 'u-1', serviceAccount: 'web' },
  },
  token: {
    value: 'hvs.secret-token',
    generation: 2,
    obtainedAt: 1000,
    ttlMs: 0,
    renewable: false,
    renewAt: Number.POSITIVE_INFINITY,
    expiresAt: Number.POSITIVE_INFINITY,
  },
  earlierTokens: [{ generation: 1, expiresAt: 5000 }],
  lastUsedAt: 2000,
  entries: [
    {
      key: 'pod:u-1|["GET","database/creds/app",[],null]',
      body: { lease_id: 'database/creds/app/x', lease_duration: 60, data: { password: 'pw' } },
      lifetime: { kind: 'leased', leaseId: 'database/creds/app/x', ttlMs: 60_000, renewable: true },
      obtainedAt: 1000,
      renewAt: 41_000,
      expiresAt: 61_000,
      tokenGeneration: 2,
      firstTtlMs: 60_000,
    },
  ],
}

const wire = (v: unknown): unknown => JSON.parse(JSON.stringify(v)) as unknown

t.test('a session and its entries cross as JSON and come back the same, "never" included', async (t) => {
  const s = parseMessage(wire(sessionFrame(session)))
  const e = parseMessage(wire(entryFrame(session.entries[0]!)))
  t.equal(s.type, 'session')
  t.equal(e.type, 'entry')
  t.same(
    s.type === 'session' ? { ...s.session, entries: [e.type === 'entry' ? e.entry : undefined] } : undefined,
    session,
  )
})

t.test("an identity's namespaces cross with it: the successor logs in nowhere else", async (t) => {
  const withNs: ExportedSession = {
    ...session,
    identity: {
      ...session.identity,
      connection: { ...session.identity.connection, namespace: 'apps', authNamespace: 'admin' },
    },
  }
  const s = parseMessage(wire(sessionFrame(withNs)))
  t.same(s.type === 'session' ? s.session.identity.connection : undefined, withNs.identity.connection)
})

t.test('anything but the exact shapes is refused, naming the field, never a value', async (t) => {
  const base = wire(sessionFrame(session)) as { session: Record<string, any> }
  const variants: Array<[string, (s: Record<string, any>) => void, string]> = [
    ['an unknown field', (s) => (s.extra = 1), 'unknown field'],
    ['a token that is not a string', (s) => (s.token.value = 42), 'token.value'],
    ['a token far too long', (s) => (s.token.value = 'x'.repeat(10_000)), 'token.value'],
    ['a negative time', (s) => (s.lastUsedAt = -1), 'session.lastUsedAt'],
    ['"never" where a time must be', (s) => (s.token.obtainedAt = null), 'token.obtainedAt'],
    ['a generation of 0', (s) => (s.token.generation = 0), 'token.generation'],
    ['three earlier tokens', (s) => (s.earlierTokens = [1, 2, 3]), 'earlierTokens'],
    ['a role of 300 characters', (s) => (s.identity.role = 'r'.repeat(300)), 'identity.role'],
    ['TLS settings with a stray field', (s) => (s.identity.connection.tls.pin = 'x'), 'tls'],
  ]
  for (const [name, change, field] of variants) {
    const copy = wire(base) as { session: Record<string, any> }
    change(copy.session)
    const err = thrown(() => parseMessage(copy), InvalidMessage)
    t.match(err.message, field, `${name}: names ${field}`)
    t.notMatch(err.message, 'hvs.secret-token', `${name}: no token in the message`)
  }
  const entry = wire(entryFrame(session.entries[0]!)) as { entry: Record<string, any> }
  const entryVariants: Array<[string, (e: Record<string, any>) => void, string]> = [
    ['a key of another kind', (e) => (e.key = 'other|x'), 'entry.key'],
    ['a lease whose body is not an object', (e) => (e.body = 'pw'), 'entry.body'],
    ['an unknown lifetime', (e) => (e.lifetime = { kind: 'forever' }), 'entry.lifetime.kind'],
    ['a lease without its ID', (e) => delete e.lifetime.leaseId, 'leaseId'],
  ]
  for (const [name, change, field] of entryVariants) {
    const copy = wire(entry) as { entry: Record<string, any> }
    change(copy.entry)
    t.match(thrown(() => parseMessage(copy), InvalidMessage).message, field, name)
  }
  t.match(thrown(() => parseMessage({ type: 'nothing' }), InvalidMessage).message, 'unknown type')
  t.match(thrown(() => parseMessage([1]), InvalidMessage).message, 'without a type')
})

t.test('both sides prove the same key; another key, direction or nonce does not', async (t) => {
  const key = randomBytes(32)
  const tr: Transcript = { successorNonce: 'a', predecessorNonce: 'b', successorPid: 1, predecessorPid: 1 }
  const p = proof(key, 'predecessor', tr)
  t.equal(proofMatches(key, 'predecessor', tr, p), true)
  t.equal(proofMatches(randomBytes(32), 'predecessor', tr, p), false, 'another key')
  t.equal(proofMatches(key, 'successor', tr, p), false, 'reflected to the other direction')
  t.equal(proofMatches(key, 'predecessor', { ...tr, successorNonce: 'c' }, p), false, 'another nonce')
  t.equal(proofMatches(key, 'predecessor', tr, 'short'), false, 'not a proof at all')
})

async function pair(t: Test): Promise<{ a: net.Socket; b: net.Socket }> {
  const dir = await mkdtemp(join(tmpdir(), 'vcp-frames-'))
  const server = net.createServer()
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve))
  await new Promise<void>((resolve) => server.listen(join(dir, 's'), resolve))
  const a = net.connect({ path: join(dir, 's') })
  const b = await accepted
  t.teardown(async () => {
    a.destroy()
    b.destroy()
    server.close()
    await rm(dir, { recursive: true, force: true })
  })
  return { a, b }
}

t.test('frames arrive whole however the bytes are cut, and their limits hold', async (t) => {
  const { a, b } = await pair(t)
  const reader = new FrameReader(b, { maxFrameBytes: 1024, maxTotalBytes: 4096 })
  const bytes = Buffer.concat([encodeFrame({ n: 1 }), encodeFrame({ n: 2, s: 'é'.repeat(100) })])
  for (const byte of bytes) a.write(Buffer.from([byte]))
  t.same(await reader.next(5_000), { n: 1 })
  t.same(await reader.next(5_000), { n: 2, s: 'é'.repeat(100) })
  t.match(((await reader.next(50).catch((e: Error) => e)) as Error).message, 'no frame within 50 ms')
  a.write(encodeFrame({ s: 'x'.repeat(2000) }))
  t.match(((await reader.next(5_000).catch((e: Error) => e)) as Error).message, 'more than 1024')

  const more = await pair(t)
  const small = new FrameReader(more.b, { maxFrameBytes: 1024, maxTotalBytes: 2048 })
  for (let i = 0; i < 5; i++) more.a.write(encodeFrame({ s: 'y'.repeat(900) }))
  const errors: string[] = []
  for (let i = 0; i < 5; i++)
    errors.push(
      await small.next(5_000).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    )
  t.ok(
    errors.some((m) => m.includes('more than 2048 bytes in all')),
    'the total is bounded',
  )

  const bad = await pair(t)
  const reader3 = new FrameReader(bad.b, { maxFrameBytes: 1024, maxTotalBytes: 4096 })
  bad.a.write(Buffer.concat([Buffer.from([0, 0, 0, 2]), Buffer.from('{x')]))
  t.match(((await reader3.next(5_000).catch((e: Error) => e)) as Error).message, 'not JSON')
  bad.a.end()
  t.match(((await reader3.next(5_000).catch((e: Error) => e)) as Error).message, 'closed')
})
