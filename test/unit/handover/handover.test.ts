// Two StateHandovers in this process over a real unix socket, each with its own session pool on a
// fake Vault: the protocol end to end, without gRPC or OpenBao (test/integration/handover.test.ts
// runs the daemons). Sessions asked for during the transfer wait for it.
import { randomBytes } from 'node:crypto'
import { stat } from 'node:fs/promises'
import net from 'node:net'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import { MAX_HANDSHAKES, StateHandover, type StateHandoverOptions } from '../../../src/handover/handover.js'
import type { HandoverSettings } from '../../../src/handover/wire.js'
import { createLogger } from '../../../src/observability/logger.js'
import { Deadline } from '../../../src/util/deadline.js'
import { SessionPool } from '../../../src/vault/sessions/pool.js'
import type { VaultIdentity } from '../../../src/vault/sessions/session.js'
import { FakeVault, fakePoolOptions, gate, loginAnswer } from '../../support/fake-vault.js'
import { startRelay, type Tamper } from '../../support/handover-relay.js'
import { ManualTime } from '../../support/manual-time.js'
import { tempDirFor } from '../../support/tmp.js'

const settings: HandoverSettings = {
  vaultAddress: 'https://vault.test:8200',
  vaultNamespace: '',
  authMount: 'kubernetes',
  identityScope: 'pod',
  shareDynamicSecrets: false,
}
const id: VaultIdentity = {
  connection: { address: 'https://vault.test:8200', tls: { skipVerify: false } },
  authMount: 'kubernetes',
  role: 'web',
  audience: 'vault',
  pod: { name: 'web-0', namespace: 'shop', uid: 'u-1', serviceAccount: 'web' },
}
/** The pools' and the handovers' clock: token lifetimes are judged by it (nothing here waits on it). */
const time = new ManualTime()
const creds = { method: 'GET' as const, path: 'database/creds/app', query: [] }
const jwt = async (): Promise<string> => 'jwt'

function logs(): { lines: Array<Record<string, any>>; logger: ReturnType<typeof createLogger> } {
  const lines: Array<Record<string, any>> = []
  const logger = createLogger(
    'info',
    new Writable({
      write: (chunk: Buffer, _e, cb) => {
        lines.push(JSON.parse(chunk.toString()) as Record<string, any>)
        cb()
      },
    }),
  )
  return { lines, logger }
}

function vault(): FakeVault {
  let n = 0
  return new FakeVault()
    .on(/login$/, () => loginAnswer(`hvs.t${++n}`, 3600))
    .on(/^GET database/, () => ({
      status: 200,
      body: {
        lease_id: `database/creds/app/l${++n}`,
        lease_duration: 600,
        renewable: true,
        data: { username: `u${n}` },
      },
    }))
}

async function side(t: Test, endpoint: string, v: FakeVault, more: Partial<StateHandoverOptions> = {}) {
  const pool = new SessionPool(fakePoolOptions(logger(), { get: async () => v }, time))
  const { lines, logger: log } = logs()
  const handover = new StateHandover({
    endpoint,
    pool,
    hmacKey: { description: 'test key', get: async () => key },
    settings,
    allowsAddress: () => true,
    logger: log,
    time,
    replaced: async () => true,
    ...more,
  })
  t.teardown(() => {
    handover.close()
    pool.close()
  })
  return { pool, handover, lines }
}

const key = randomBytes(32)
const logger = (): ReturnType<typeof createLogger> => logs().logger

async function until(what: string, cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

async function readCreds(pool: SessionPool): Promise<unknown> {
  const s = await pool.session(id)
  return (await s.fetch(creds, 'creds', id.pod.uid, jwt, Deadline.in(10_000, undefined, time), 'test')).body
}

t.test('the successor takes the state over; its sessions wait for it and find it', async (t) => {
  const dir = await tempDirFor(t)
  const endpoint = join(dir, 'vault.sock')
  const v = vault()
  const drained = gate()
  const old = await side(t, endpoint, v, { replaced: () => drained.wait.then(() => true) })
  const first = await readCreds(old.pool)
  await old.handover.takeOver(undefined)
  t.ok((await stat(`${endpoint}.handover`)).isSocket(), 'the predecessor listens beside the Mount socket')
  t.equal(((await stat(`${endpoint}.handover`)).mode & 0o777).toString(8), '600', 'owner only')

  const next = await side(t, endpoint, v)
  const approach = await next.handover.approach()
  t.ok(approach, 'authenticated, settings alike')
  // A Mount reaching the new process now waits for the state instead of logging in.
  const waiting = readCreds(next.pool)
  const took = next.handover.takeOver(approach)
  drained.open()
  const counts = await took
  t.same(counts?.identity, { taken_over: 1, refused: 0, expired: 0 })
  t.same(counts?.lease, { taken_over: 1, refused: 0, expired: 0 })
  t.same(await waiting, first, 'the same credential')
  t.equal(v.count(/login$/), 1, 'one login in all: the predecessor’s')
  t.equal(v.count(/^GET database/), 1, 'one credential in all')
  t.equal(await old.pool.sweepIdle(Date.now() + 3_600_000), 0, 'the predecessor revokes nothing')
  t.ok(old.lines.some((l) => l.msg === 'handed over the state of this provider to the new provider'))
  t.ok(next.lines.some((l) => l.msg === 'took over the state of the provider this one replaces'))

  // The successor offers its own state in turn; the predecessor has nothing left to offer.
  const third = await side(t, endpoint, v)
  const again = await third.handover.approach()
  t.ok(again, 'the successor now listens on the path')
  again?.abandon()
})

t.test('another key or other settings: no state, the successor starts cold and says why', async (t) => {
  const dir = await tempDirFor(t)
  const endpoint = join(dir, 'vault.sock')
  const v = vault()
  const old = await side(t, endpoint, v)
  await readCreds(old.pool)
  await old.handover.takeOver(undefined)

  const stranger = await side(t, endpoint, v, { hmacKey: { description: 'other', get: async () => randomBytes(32) } })
  t.equal(await stranger.handover.approach(), undefined)
  t.match(stranger.lines.find((l) => l.msg === 'state handover refused; starting cold')?.why, 'HMAC key')
  await until('the predecessor to log the refusal', () =>
    old.lines.some((l) => l.msg === 'no state handed over to the connecting process'),
  )
  t.pass('the predecessor says so too')

  const other = await side(t, endpoint, v, { settings: { ...settings, identityScope: 'serviceaccount' } })
  t.equal(await other.handover.approach(), undefined)
  t.match(other.lines.find((l) => l.msg === 'state handover refused; starting cold')?.why, 'identity scope')

  // Both were refused before anything was handed over: the predecessor still offers its state.
  await until(
    'the predecessor to be done with both',
    () => old.lines.filter((l) => l.msg === 'no state handed over to the connecting process').length === 2,
  )
  const next = await side(t, endpoint, v)
  const approach = await next.handover.approach()
  t.ok(approach, 'a rightful successor still gets it')
  approach?.abandon()
})

/** A predecessor that has read a credential and listens, and a relay in front of its handover socket. */
async function relayed(t: Test, tamper?: Tamper) {
  const dir = await tempDirFor(t)
  const endpoint = join(dir, 'vault.sock')
  const v = vault()
  const old = await side(t, endpoint, v)
  await readCreds(old.pool)
  await old.handover.takeOver(undefined)
  const relay = await startRelay(`${endpoint}.handover`, tamper)
  t.teardown(() => relay.close())
  const next = await side(t, endpoint, v)
  return { v, old, next, relay }
}

const flip = (b: Buffer): Buffer => {
  const c = Buffer.from(b)
  c[c.length >> 1]! ^= 0x01
  return c
}

t.test('a relay between the two passes ciphertext only', async (t) => {
  const { v, next, relay } = await relayed(t)
  const counts = await next.handover.takeOver(await next.handover.approach())
  t.same(counts?.identity, { taken_over: 1, refused: 0, expired: 0 }, 'relayed unchanged, the state arrives')
  t.equal(relay.connections(), 1, 'through the relay')
  const seen = relay.recorded()
  for (const clear of ['hvs.t', 'database/creds/app/l', 'username', 'web-0', 'settings', 'vault.test']) {
    t.equal(seen.includes(Buffer.from(clear)), false, `the relay never saw ${JSON.stringify(clear)}`)
  }
  t.equal(v.count(/login$/), 1, 'no login of its own')
})

t.test(
  'a frame changed, dropped, repeated, swapped or added: the transfer fails, the successor starts cold',
  async (t) => {
    // From the predecessor: 0 challenge, 1 settings, 2 begin, 3 session, 4 entry, 5 end.
    let held: Buffer | undefined
    const cases: Array<[string, Tamper]> = [
      ['the identity flipped', (f) => [f.from === 'predecessor' && f.index === 3 ? flip(f.payload) : f.payload]],
      ['the identity dropped', (f) => (f.from === 'predecessor' && f.index === 3 ? [] : [f.payload])],
      ['begin repeated', (f) => (f.from === 'predecessor' && f.index === 2 ? [f.payload, f.payload] : [f.payload])],
      [
        'identity and entry swapped',
        (f) => {
          if (f.from !== 'predecessor' || f.index < 3 || f.index > 4) return [f.payload]
          if (f.index === 3) {
            held = f.payload
            return []
          }
          return [f.payload, held!]
        },
      ],
      [
        'a frame added',
        (f) =>
          f.from === 'predecessor' && f.index === 3
            ? [Buffer.concat([Buffer.alloc(1), randomBytes(60)]), f.payload]
            : [f.payload],
      ],
      ['the end dropped', (f) => (f.from === 'predecessor' && f.index === 5 ? [] : [f.payload])],
    ]
    for (const [name, tamper] of cases) {
      const { v, old, next, relay } = await relayed(t, tamper)
      const approach = await next.handover.approach()
      t.ok(approach, `${name}: the handshake passed the relay`)
      // The end dropped: the relay holds the connection open; the predecessor ends it once sent.
      const counts = await next.handover.takeOver(approach)
      t.equal(counts?.identity.taken_over, 0, `${name}: nothing taken over`)
      const line = next.lines.find((l) => l.msg === 'state handover ended early; the rest starts cold')
      t.match(line?.why, name === 'the end dropped' ? 'closed' : 'does not open', `${name}: the log line says why`)
      await readCreds(next.pool)
      t.equal(v.count(/login$/), 2, `${name}: the successor logs in itself`)
      await until(`${name}: the predecessor done`, () =>
        old.lines.some((l) => l.msg === 'handed over the state of this provider to the new provider'),
      )
      await relay.close()
    }
  },
)

t.test('a relay that changes the handshake or the settings: refused before anything is sent', async (t) => {
  const rewrite =
    (field: 'pid' | 'nonce', value: unknown): Tamper =>
    (f) => {
      if (f.from !== 'successor' || f.index !== 0) return [f.payload]
      const hello = JSON.parse(f.payload.toString()) as Record<string, unknown>
      return [Buffer.from(JSON.stringify({ ...hello, [field]: value }))]
    }
  const cases: Array<[string, Tamper, string]> = [
    ["the relay's own PID in the hello", rewrite('pid', 1), 'HMAC key'],
    ["the relay's own nonce in the hello", rewrite('nonce', randomBytes(32).toString('base64')), 'HMAC key'],
    [
      'the settings flipped',
      (f) => [f.from === 'predecessor' && f.index === 1 ? flip(f.payload) : f.payload],
      'does not open',
    ],
  ]
  for (const [name, tamper, why] of cases) {
    const { next, old } = await relayed(t, tamper)
    t.equal(await next.handover.approach(), undefined, `${name}: starts cold`)
    t.match(next.lines.find((l) => l.msg === 'state handover refused; starting cold')?.why, why, `${name}: says why`)
    t.notOk(
      old.lines.some((l) => l.msg === 'handed over the state of this provider to the new provider'),
      `${name}: the predecessor kept its state`,
    )
  }
})

t.test('connections that say nothing do not keep the successor out', async (t) => {
  const dir = await tempDirFor(t)
  const endpoint = join(dir, 'vault.sock')
  const v = vault()
  const old = await side(t, endpoint, v)
  await readCreds(old.pool)
  await old.handover.takeOver(undefined)
  // More idle connections than the predecessor keeps, and one that trickles a hello.
  const idle = Array.from({ length: MAX_HANDSHAKES + 2 }, () => net.connect({ path: `${endpoint}.handover` }))
  for (const s of idle) {
    s.on('error', () => undefined)
    t.teardown(() => s.destroy())
  }
  await Promise.all(idle.map((s) => new Promise((r) => (s.readyState === 'open' ? r(s) : s.once('connect', r)))))
  idle[0]!.write(Buffer.from([0, 0, 0, 200, 0x7b]))
  const next = await side(t, endpoint, v)
  const counts = await next.handover.takeOver(await next.handover.approach())
  t.same(counts?.identity, { taken_over: 1, refused: 0, expired: 0 }, 'the successor took the state over')
  t.equal(v.count(/login$/), 1, 'no login of its own')
})

t.test('connections reopened as fast as they are dropped do not push out a successor that said hello', async (t) => {
  const dir = await tempDirFor(t)
  const endpoint = join(dir, 'vault.sock')
  const v = vault()
  // The predecessor reads its key after a hello: held here until the flood below has come in.
  let keyAsked!: () => void
  const asked = new Promise<void>((r) => (keyAsked = r))
  let release!: () => void
  const released = new Promise<void>((r) => (release = r))
  let hold = false
  const old = await side(t, endpoint, v, {
    hmacKey: {
      description: 'test key',
      get: async () => {
        if (hold) {
          keyAsked()
          await released
        }
        return key
      },
    },
  })
  await readCreds(old.pool)
  await old.handover.takeOver(undefined)
  hold = true
  const next = await side(t, endpoint, v)
  const taking = next.handover.approach().then((offer) => next.handover.takeOver(offer))
  await asked
  // Twice as many silent connections as the predecessor keeps in their handshake, after the hello.
  const flood = Array.from({ length: 2 * MAX_HANDSHAKES }, () => net.connect({ path: `${endpoint}.handover` }))
  let pushedOut = 0
  for (const s of flood) {
    s.on('error', () => undefined)
    s.on('close', () => (pushedOut += 1))
    t.teardown(() => s.destroy())
  }
  // 2 × MAX_HANDSHAKES + 1 connections for MAX_HANDSHAKES places: MAX_HANDSHAKES + 1 are pushed out, the
  // successor's first if it is the oldest one.
  await until('the predecessor to push connections out', () => pushedOut >= MAX_HANDSHAKES)
  release()
  const counts = await taking
  t.same(counts?.identity, { taken_over: 1, refused: 0, expired: 0 }, 'the successor took the state over')
  t.equal(v.count(/login$/), 1, 'no login of its own')
})
