// The sealed channel after the handshake (src/handover/channel.ts): both sides derive the same
// keys from the same handshake and no others; a frame changed, replayed, reordered, dropped or
// injected on the way does not open.
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { frameKey, sealFrame, SealedChannel } from '../../../src/handover/channel.js'
import { encodeFrame, FrameReader } from '../../../src/handover/frames.js'
import type { Transcript } from '../../../src/handover/proof.js'

const key = randomBytes(32)
const tr: Transcript = {
  successorNonce: randomBytes(32).toString('base64'),
  predecessorNonce: randomBytes(32).toString('base64'),
  successorPid: 4242,
  predecessorPid: 17,
}
const frames = [Buffer.from('{"type":"hello"}'), Buffer.from('{"type":"challenge"}'), Buffer.from('{"type":"proof"}')]
const limits = { maxFrameBytes: 64 * 1024, maxTotalBytes: 1024 * 1024 }
const SECRET = 'hvs.a-token-that-must-not-cross-in-clear'

async function pair(t: Test): Promise<{ a: net.Socket; b: net.Socket }> {
  const dir = await mkdtemp(join(tmpdir(), 'vcp-channel-'))
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

/** A successor's channel on `a`, a predecessor's on `b`, each from its own view of the handshake. */
async function channels(
  t: Test,
  successorView: { key?: Buffer; tr?: Transcript; frames?: Buffer[] } = {},
): Promise<{ successor: SealedChannel; predecessor: SealedChannel; a: net.Socket; b: net.Socket }> {
  const { a, b } = await pair(t)
  const successor = SealedChannel.open(
    'successor',
    a,
    new FrameReader(a, limits),
    successorView.key ?? key,
    successorView.tr ?? tr,
    successorView.frames ?? frames,
  )
  const predecessor = SealedChannel.open('predecessor', b, new FrameReader(b, limits), key, tr, frames)
  return { successor, predecessor, a, b }
}

const failure = (p: Promise<unknown>): Promise<string> =>
  p.then(
    (v) => `opened: ${JSON.stringify(v)}`,
    (e: Error) => e.message,
  )

t.test('both sides derive the same keys, one per direction, and talk both ways', async (t) => {
  const { successor, predecessor } = await channels(t)
  await successor.send({ type: 'take' })
  await predecessor.send({ type: 'begin', sessions: 1, leases: 0 })
  await predecessor.send({ type: 'end' })
  t.same(await predecessor.next(5_000), { type: 'take' })
  t.same(await successor.next(5_000), { type: 'begin', sessions: 1, leases: 0 })
  t.same(await successor.next(5_000), { type: 'end' })
  t.not(
    frameKey(key, tr, frames, 'to-successor').toString('hex'),
    frameKey(key, tr, frames, 'to-predecessor').toString('hex'),
    'the two directions have keys of their own',
  )
})

t.test('what crosses is ciphertext', async (t) => {
  const { a, b } = await pair(t)
  const successor = SealedChannel.open('successor', a, new FrameReader(a, limits), key, tr, frames)
  await successor.send({ type: 'session', token: SECRET })
  const bytes = await new FrameReader(b, limits).nextBytes(5_000)
  t.ok(bytes.length > SECRET.length, 'the frame arrived')
  t.equal(bytes.includes(Buffer.from(SECRET)), false, 'the token is not in it')
  t.equal(bytes.includes(Buffer.from('session')), false, 'nor the message type')
})

t.test('another key, nonce, PID or handshake byte: nothing opens', async (t) => {
  const changedFrames = frames.map((f) => Buffer.from(f))
  changedFrames[1]![3]! ^= 1
  const views: Array<[string, { key?: Buffer; tr?: Transcript; frames?: Buffer[] }]> = [
    ['another HMAC key', { key: randomBytes(32) }],
    ["a relay's own nonce", { tr: { ...tr, predecessorNonce: randomBytes(32).toString('base64') } }],
    ["a relay's own PID", { tr: { ...tr, predecessorPid: 999 } }],
    ['one handshake byte changed on the way', { frames: changedFrames }],
    ['a frame left out of the transcript', { frames: frames.slice(0, 2) }],
  ]
  for (const [name, view] of views) {
    const { successor, predecessor } = await channels(t, view)
    await predecessor.send({ type: 'settings' })
    t.match(await failure(successor.next(5_000)), 'does not open', `${name}: the successor opens nothing`)
    await successor.send({ type: 'take' })
    t.match(await failure(predecessor.next(5_000)), 'does not open', `${name}: nor does the predecessor`)
  }
})

t.test('a frame changed, replayed, reordered, dropped or injected does not open', async (t) => {
  const toSuccessor = frameKey(key, tr, frames, 'to-successor')
  const sealed = (n: number, m: unknown): Buffer =>
    sealFrame(toSuccessor, 'to-successor', n, Buffer.from(JSON.stringify(m)))
  const f0 = sealed(0, { type: 'begin', sessions: 1, leases: 0 })
  const f1 = sealed(1, { type: 'end' })
  const flipped = Buffer.from(f0)
  flipped[10]! ^= 0x80
  const cases: Array<[string, Buffer[], number]> = [
    ['a bit flipped', [flipped], 0],
    ['a frame replayed', [f0, f0], 1],
    ['two frames swapped', [f1, f0], 0],
    ['a frame dropped', [f1], 0],
    [
      'a frame of the other direction reflected',
      [sealFrame(frameKey(key, tr, frames, 'to-predecessor'), 'to-predecessor', 0, Buffer.from('{}'))],
      0,
    ],
    ['random bytes injected', [f0, Buffer.concat([Buffer.alloc(5), randomBytes(40)]), f1], 1],
    ['a frame sealed for another position injected', [f0, sealed(7, { type: 'end' })], 1],
    ['a plain decline after sealed frames', [f0, encodeFrame({ type: 'decline', reason: 'forged' })], 1],
    ['the tag cut off', [f0.subarray(0, f0.length - 16)], 0],
  ]
  for (const [name, wire, failsAt] of cases) {
    const { successor, b } = await channels(t)
    // Each header says its frame's length as sent (the tag cut off included).
    for (const w of wire) {
      const copy = Buffer.from(w)
      copy.writeUInt32BE(copy.length - 4, 0)
      b.write(copy)
    }
    for (let i = 0; i < failsAt; i++) t.ok(await successor.next(5_000), `${name}: frame ${i} opens`)
    t.match(await failure(successor.next(5_000)), 'does not open', `${name}: refused`)
    t.match(await failure(successor.next(5_000)), 'does not open', `${name}: and the channel stays broken`)
  }
})

t.test('a plain decline answers the handshake (the peer had no keys); it is taken only first', async (t) => {
  const { successor, b } = await channels(t)
  b.write(encodeFrame({ type: 'decline', reason: 'no key' }))
  t.same(await successor.next(5_000), { type: 'decline', reason: 'no key' })
})
