// Issue 43, part 4: the state handover's channel is bound to its handshake. A process of the
// provider's user that can rename entries in the socket directory moves `vault.sock.handover`
// aside, listens on its path and relays between the new provider (the successor) and the old one
// (the predecessor) — test/support/handover-relay.ts — while a victim pod of another namespace
// keeps mounting through whichever process serves the socket, and the operations port's
// /health/live is timed too. Against the built daemon (two processes per case: the predecessor
// and its successor, started in the same socket directory as a rolling update does) and a real
// OpenBao whose raw audit log (`log_raw`) gives the real Vault tokens to look for, and counts the
// tenant's logins and reads. Every daemon runs with -static-freshness, so a tenant's KV answer is
// part of the state (the cached answer the relay rewrote).
//
// Each case is one rolling update under attack; the successor of one case is the predecessor of
// the next. Why each fails on commit 1051cc3 (handover protocol 1: the proofs, then plain JSON),
// as a run against a build of it (VCP_PROVIDER_MAIN) showed:
// - every relay case: the relay's recorded bytes hold the tenant's and the victim's Vault tokens,
//   both secret values and the state as JSON;
// - a relay that rewrites the tenant's cached answer: the successor takes the rewritten answer
//   over and the tenant's next Mount returns it with no login and no Vault read (here the frames
//   are sealed: the relay finds nothing to rewrite, changes the frames the answer could be in,
//   and the successor starts cold);
// - a byte flipped, a frame dropped, repeated, reordered or added: nothing authenticates a frame
//   after the proofs, so what still parses is taken (a flipped identity was taken over beside the
//   others) and what does not ends the transfer for a reason of its own ("an entry before its
//   identity", "not JSON"), never because a frame was changed;
// - connections that hold the old process's handover socket and say nothing, or trickle: 1051cc3
//   serves one connection at a time, so the real successor is turned away and starts cold; here it
//   takes the state over;
// - a peer standing at the handover path that says nothing or trickles: 1051cc3's successor waits
//   10 s for it ("no frame within 10000 ms"); here the unauthenticated part ends within
//   HANDSHAKE_MS (5 s, docs/failure-behaviour.md), saying so.
import { randomBytes, randomUUID } from 'node:crypto'
import { rename } from 'node:fs/promises'
import net from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { HANDSHAKE_MS, MAX_HANDSHAKES } from '../../src/handover/handover.js'
import {
  allowedLoadedP99,
  checkIsolation,
  exclusiveSuite,
  newPod,
  percentile,
  report,
  runAttackConfirmed,
  startAdversaryDaemon,
  type AdversaryDaemon,
} from '../support/adversary.js'
import { startWorld } from '../support/adversary-world.js'
import { connectProvider, type GrpcMountResult } from '../support/grpc-client.js'
import { startRelay, type Relay, type RelayFrame, type Tamper } from '../support/handover-relay.js'
import { createJwtRole } from '../support/jwt.js'
import { findLeaks } from '../support/leaks.js'
import { cpuMs, LiveProbe } from '../support/live-probe.js'
import { healthPort, type ProviderProcess } from '../support/provider.js'
import { processTempDir } from '../support/tmp.js'

t.setTimeout(30 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

const TENANT = 'tenant-a'
const TENANT_PATH = 'secret/data/tenant-a/db'
/** Static answers are kept (and handed over) for this long: the cached answer the relay goes for. */
const FRESHNESS = '-static-freshness=10m'

const auditPath = join(await processTempDir('audit-'), 'raw.log')
const w = await startWorld({
  // A raw audit device from the start: the real tokens (and secret values) are in it, to search the relay's bytes for.
  bao: {
    extraConfig: [
      'audit "file" "raw" {',
      '  options {',
      `    file_path = ${JSON.stringify(auditPath)}`,
      '    log_raw = "true"',
      '  }',
      '}',
    ].join('\n'),
  },
  args: () => [FRESHNESS],
})
t.teardown(() => w.stop())
const successorArgs = [`-vault-addr=${w.bao.addr}`, `-vault-addr-allowlist=${w.bao.addr}`, FRESHNESS]

await createJwtRole(w.bao, 'jwt', TENANT, {
  policies: ['app-read'],
  boundAudiences: ['vault'],
  boundSubject: `system:serviceaccount:${TENANT}:app`,
  ttl: '1h',
})
const tenantValue = `tenant-${randomUUID()}`
/** What the rewriting relay puts in its place: as long, so a length check cannot tell. */
const forgedValue = tenantValue.replace('tenant-', 'forged-')
const put = await w.bao.api('POST', `/v1/${TENANT_PATH}`, { data: { password: tenantValue } })
if (put.status !== 200) throw new Error(`kv put: ${put.status}`)
w.secrets.push(tenantValue)
const tenantAttrs = w.attrs(
  { roleName: TENANT, objects: [{ objectName: 'password', secretPath: TENANT_PATH, secretKey: 'password' }] },
  newPod('tenant-0', TENANT, 'app'),
)

/** The tenant's Mount on a connection of its own: it reaches whichever process serves the socket now. */
async function tenantMount(): Promise<GrpcMountResult> {
  const client = connectProvider(w.daemon.provider.socketPath)
  try {
    return await client.mount({ attributes: tenantAttrs }, 30_000)
  } finally {
    client.close()
  }
}

type AuditEntry = {
  type?: string
  auth?: { client_token?: string; metadata?: Record<string, string> }
  request?: { path?: string; operation?: string }
}
const auditLog = async (): Promise<AuditEntry[]> => (await w.bao.readAuditLog(auditPath)) as AuditEntry[]

/** Every Vault token OpenBao has issued by a login so far. */
async function issuedTokens(): Promise<string[]> {
  return (await auditLog()).flatMap((e) =>
    e.type === 'response' && e.request?.path === 'auth/jwt/login' && typeof e.auth?.client_token === 'string'
      ? [e.auth.client_token]
      : [],
  )
}

/** The tenant's logins and reads OpenBao has answered so far. */
async function tenantCalls(): Promise<{ logins: number; reads: number }> {
  const answered = (await auditLog()).filter((e) => e.type === 'response')
  return {
    logins: answered.filter((e) => e.request?.path === 'auth/jwt/login' && e.auth?.metadata?.role === TENANT).length,
    reads: answered.filter((e) => e.request?.path === TENANT_PATH && e.request.operation === 'read').length,
  }
}

/** The JWTs of the pods' token attributes (w.secrets holds the attributes' JSON). */
function podJwts(): string[] {
  return w.secrets.flatMap((s) => {
    try {
      return Object.values(JSON.parse(s) as Record<string, { token: string }>).map((v) => v.token)
    } catch {
      return []
    }
  })
}

// ---------------------------------------------------------------- the process serving the socket

const daemons: AdversaryDaemon[] = [w.daemon]
let current: AdversaryDaemon = w.daemon
t.teardown(async () => {
  for (const d of daemons) await d.stop()
})
/** The daemon the victim measures against: the predecessor until its successor has replaced it. */
const serving: AdversaryDaemon = {
  get provider() {
    return current.provider
  },
  get watchdog() {
    return current.watchdog
  },
  limitBytes: w.daemon.limitBytes,
  nodeFlags: w.daemon.nodeFlags,
  alive: () => current.alive(),
  stop: () => current.stop(),
}

const OUTCOMES = [
  'took over the state of the provider this one replaces',
  'state handover ended early; the rest starts cold',
  'state handover refused; starting cold',
  'starting cold',
]

async function logLine(
  p: ProviderProcess,
  what: string,
  accept: (l: Record<string, unknown>) => boolean,
): Promise<Record<string, any>> {
  const until = Date.now() + 60_000
  for (;;) {
    const line = (await p.logLines()).find(accept)
    if (line !== undefined) return line
    if (Date.now() > until) throw new Error(`no ${what} in the log of ${p.logPath}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

// ---------------------------------------------------------------- the attacks

/** What an attack leaves in place while the successor starts, and how it is taken down. */
interface Stance {
  relay?: Relay
  undo(): Promise<void>
}

interface Case {
  name: string
  /** Set up at the handover path before the successor starts. */
  setUp(handoverPath: string): Promise<Stance>
  /** 'taken over': the successor has the state (no login of the tenant); 'cold': it logs in again. */
  expect: 'taken over' | 'cold'
  /** The successor's log line and its `why`, for a cold start. */
  coldLine?: string
  why?: RegExp
}

interface Replacement {
  outcome: Record<string, any>
  tenant: GrpcMountResult
  calls: { logins: number; reads: number }
  relay?: Relay
  successorCpuMs: number
}

const live = new LiveProbe(`http://127.0.0.1:${await healthPort(w.daemon.provider)}/health/live`)
const liveUnloaded = await live.measure(200)

/** One rolling update under `c`: the successor starts, takes over or not, and the tenant mounts through it. */
async function replaceUnder(c: Case, record: (r: Replacement) => void): Promise<GrpcMountResult> {
  const handoverPath = `${current.provider.socketPath}.handover`
  const stance = await c.setUp(handoverPath)
  const before = await tenantCalls()
  const next = await startAdversaryDaemon({ socketDir: current.provider.socketDir, args: successorArgs })
  daemons.push(next)
  const outcome = await logLine(next.provider, 'handover outcome', (l) => OUTCOMES.includes(String(l.msg)))
  await logLine(next.provider, 'serving', (l) => l.msg === 'serving the provider API')
  live.retarget(`http://127.0.0.1:${await healthPort(next.provider)}/health/live`)
  const tenant = await tenantMount()
  const after = await tenantCalls()
  const successorCpuMs = cpuMs(next.provider.pid)
  await stance.undo()
  const old = current
  current = next
  await old.stop()
  record({
    outcome,
    tenant,
    calls: { logins: after.logins - before.logins, reads: after.reads - before.reads },
    relay: stance.relay,
    successorCpuMs,
  })
  return tenant
}

const relayed =
  (tamper?: Tamper) =>
  async (path: string): Promise<Stance> => {
    const relay = await startRelay(path, tamper)
    return { relay, undo: () => relay.close() }
  }

const flip = (b: Buffer): Buffer => {
  const c = Buffer.from(b)
  c[c.length >> 1]! ^= 0x01
  return c
}

// The predecessor's frames: 0 challenge, 1 settings, 2 begin, then per identity a session and its
// entries, then end. The successor's: 0 hello, 1 proof, 2 take.
const state = (f: RelayFrame, index: number): boolean => f.from === 'predecessor' && f.index === index
let held: Buffer | undefined

/**
 * Connections to the predecessor's handover socket that say nothing (one trickles a frame a byte at a
 * time), more than it keeps in their handshake; each it drops is opened again at once.
 */
async function holders(path: string): Promise<Stance> {
  let active = true
  const sockets = new Set<net.Socket>()
  const open = (trickle: boolean): Promise<void> =>
    new Promise((resolve) => {
      const s = net.connect({ path })
      sockets.add(s)
      let timer: NodeJS.Timeout | undefined
      let connected = false
      s.on('error', () => undefined)
      s.once('connect', () => {
        connected = true
        if (trickle) {
          s.write(Buffer.from([0, 0, 0, 200]))
          timer = setInterval(() => s.write('{'), 200)
        }
        resolve()
      })
      s.once('close', () => {
        clearInterval(timer)
        sockets.delete(s)
        resolve()
        if (active) setTimeout(() => void open(trickle), connected ? 0 : 100)
      })
    })
  await Promise.all(Array.from({ length: MAX_HANDSHAKES + 2 }, (_, i) => open(i === 0)))
  return {
    async undo() {
      active = false
      for (const s of sockets) s.destroy()
    },
  }
}

/** A peer that moved the handover socket aside and stands at its path, answering nothing (or trickling). */
const squatter =
  (trickle: boolean) =>
  async (path: string): Promise<Stance> => {
    await rename(path, `${path}.squatted`)
    const sockets = new Set<net.Socket>()
    const timers: NodeJS.Timeout[] = []
    const server = net.createServer((s) => {
      sockets.add(s)
      s.on('error', () => undefined)
      if (trickle) {
        s.write(Buffer.from([0, 0, 0, 100]))
        timers.push(setInterval(() => s.write('{'), 200))
      }
    })
    // Bound on a name of its own and renamed over the path (closing a server unlinks what it bound).
    const bindPath = `${path}.squat`
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(bindPath, resolve)
    })
    await rename(bindPath, path)
    return {
      async undo() {
        for (const timer of timers) clearInterval(timer)
        for (const s of sockets) s.destroy()
        await new Promise<void>((resolve) => server.close(() => resolve()))
      },
    }
  }

const ENDED = 'state handover ended early; the rest starts cold'
const DOES_NOT_OPEN = /does not open with this handshake's key/

const cases: Case[] = [
  { name: 'a relay that passes every frame unchanged', setUp: relayed(), expect: 'taken over' },
  {
    name: "a relay that rewrites the tenant's cached answer",
    setUp: relayed((f) => {
      if (f.from !== 'predecessor' || f.index < 2) return [f.payload]
      const at = f.payload.indexOf(tenantValue)
      // Plain state (1051cc3): the answer is there to rewrite.
      if (at >= 0)
        return [
          Buffer.concat([
            f.payload.subarray(0, at),
            Buffer.from(forgedValue),
            f.payload.subarray(at + tenantValue.length),
          ]),
        ]
      // Sealed (a frame's first byte is 0, which no JSON text begins with): the relay cannot find
      // the answer, so it changes every frame of the state it could be in.
      return [f.index >= 3 && f.payload[0] === 0 ? flip(f.payload) : f.payload]
    }),
    expect: 'cold',
    coldLine: ENDED,
    why: DOES_NOT_OPEN,
  },
  {
    name: 'a relay that flips a byte of the first identity',
    setUp: relayed((f) => [state(f, 3) ? flip(f.payload) : f.payload]),
    expect: 'cold',
    coldLine: ENDED,
    why: DOES_NOT_OPEN,
  },
  {
    name: 'a relay that drops the first identity',
    setUp: relayed((f) => (state(f, 3) ? [] : [f.payload])),
    expect: 'cold',
    coldLine: ENDED,
    why: DOES_NOT_OPEN,
  },
  {
    name: 'a relay that repeats the begin frame',
    setUp: relayed((f) => (state(f, 2) ? [f.payload, f.payload] : [f.payload])),
    expect: 'cold',
    coldLine: ENDED,
    why: DOES_NOT_OPEN,
  },
  {
    name: 'a relay that swaps the first identity and its entry',
    setUp: relayed((f) => {
      if (state(f, 3)) {
        held = f.payload
        return []
      }
      return state(f, 4) ? [f.payload, held!] : [f.payload]
    }),
    expect: 'cold',
    coldLine: ENDED,
    why: DOES_NOT_OPEN,
  },
  {
    name: 'a relay that adds a frame of its own',
    setUp: relayed((f) => (state(f, 3) ? [Buffer.concat([Buffer.alloc(1), randomBytes(60)]), f.payload] : [f.payload])),
    expect: 'cold',
    coldLine: ENDED,
    why: DOES_NOT_OPEN,
  },
  {
    name: `${MAX_HANDSHAKES + 2} connections to the old process that say nothing or trickle, reopened as dropped`,
    setUp: holders,
    expect: 'taken over',
  },
  {
    name: 'a peer at the handover path that says nothing',
    setUp: squatter(false),
    expect: 'cold',
    coldLine: 'state handover refused; starting cold',
    why: new RegExp(`not authenticated within ${HANDSHAKE_MS} ms`),
  },
  {
    name: 'a peer at the handover path that trickles',
    setUp: squatter(true),
    expect: 'cold',
    coldLine: 'state handover refused; starting cold',
    why: new RegExp(`not authenticated within ${HANDSHAKE_MS} ms`),
  },
]

/** What the relay saw: nothing of the state, no token, no secret value; after the handshake, no JSON at all. */
async function checkRelaySawNothing(t: Test, relay: Relay): Promise<void> {
  const seen = relay.recorded()
  t.ok(relay.frames.length > 6, `the relay carried the handover (${relay.frames.length} frames)`)
  const tokens = await issuedTokens()
  t.ok(tokens.length >= 2, `${tokens.length} Vault tokens issued so far, searched for`)
  t.equal(tokens.filter((s) => seen.includes(Buffer.from(s))).length, 0, 'no Vault token in the relayed bytes')
  t.equal(seen.includes(Buffer.from(tenantValue)), false, "the tenant's secret value is not in them")
  t.equal(seen.includes(Buffer.from(w.victimValue)), false, "the victim's secret value is not in them")
  t.equal(podJwts().filter((s) => seen.includes(Buffer.from(s))).length, 0, 'no pod JWT in them')
  for (const clear of ['"session"', '"entry"', '"settings"', TENANT_PATH, w.bao.addr, TENANT]) {
    t.equal(seen.includes(Buffer.from(clear)), false, `nothing of the state: no ${JSON.stringify(clear)}`)
  }
  // The handshake (hello and proof of the successor, the predecessor's challenge) is JSON by design.
  const handshake = (f: RelayFrame): boolean => (f.from === 'successor' ? f.index < 2 : f.index < 1)
  const json = relay.frames.filter((f) => {
    if (handshake(f)) return false
    try {
      JSON.parse(f.payload.toString('utf8'))
      return true
    } catch {
      return false
    }
  })
  t.same(
    json.map((f) => `${f.from} frame ${f.index}`),
    [],
    'every frame after the handshake is sealed: none reads as JSON',
  )
}

const ms = (v: number): string => v.toFixed(1)
const figures: string[] = []

t.test('the predecessor holds the tenant and the victim, their tokens and cached answers', async (t) => {
  const first = await tenantMount()
  t.ok(first.ok, first.message)
  t.equal(first.files[0]?.contents.toString(), tenantValue)
  const again = await tenantMount()
  t.equal(again.files[0]?.contents.toString(), tenantValue)
  t.same(
    await tenantCalls(),
    { logins: 1, reads: 1 },
    "the tenant's second Mount is served from what the process holds: one login, one read",
  )
})

for (const c of cases) {
  t.test(c.name, async (t) => {
    let last: Replacement | undefined
    live.start()
    const out = await runAttackConfirmed(t, serving, w.victim, {
      klass: '43.4',
      name: `handover: ${c.name}`,
      attempt: () =>
        replaceUnder(c, (r) => {
          last = r
        }),
      repeat: 1,
    })
    const probes = await live.stop()
    checkIsolation(t, serving, out)
    t.equal(live.failures, 0, `/health/live answered 200 to every probe (${live.errors} connection errors)`)
    const liveBound = allowedLoadedP99(percentile(liveUnloaded, 99))
    t.ok(
      percentile(probes, 99) <= liveBound,
      `/health/live p99 ${ms(percentile(probes, 99))} ms during the update <= ${ms(liveBound)} ms (${probes.length} probes)`,
    )
    const r = last!
    t.comment(
      `the successor logged ${JSON.stringify(r.outcome.msg)}: ${JSON.stringify(r.outcome.why ?? r.outcome.identities)}`,
    )

    // What the tenant gets is the real secret, whatever reached the successor; never the relay's.
    t.ok(r.tenant.ok, `the tenant's Mount through the successor: ${r.tenant.message}`)
    t.equal(r.tenant.files[0]?.contents.toString() === tenantValue, true, "the tenant's real secret value")
    t.equal(r.tenant.files[0]?.contents.toString() === forgedValue, false, 'never a rewritten answer')
    if (c.expect === 'taken over') {
      t.equal(r.outcome.msg, OUTCOMES[0], 'the successor took the state over')
      t.ok(
        r.outcome.identities?.taken_over >= 2,
        `the tenant's and the victim's identities (${JSON.stringify(r.outcome.identities)})`,
      )
      t.same(
        r.calls,
        { logins: 0, reads: 0 },
        "the tenant's Mount used the token and answer taken over: no login, no read",
      )
    } else {
      t.equal(r.outcome.msg, c.coldLine, 'the successor starts cold')
      t.match(r.outcome.why, c.why!, 'saying why')
      t.equal(r.outcome.identities?.taken_over ?? 0, 0, 'nothing taken over')
      t.same(
        r.calls,
        { logins: 1, reads: 1 },
        'the tenant logs in again and reads OpenBao: a new login in its audit log',
      )
    }
    if (r.relay !== undefined) await checkRelaySawNothing(t, r.relay)

    figures.push(
      `| ${c.name} | ${r.outcome.msg === OUTCOMES[0] ? 'taken over' : 'cold'} | ${ms(percentile(out.victim.latenciesMs, 50))} / ${ms(out.victimP99Ms)} ` +
        `(unloaded p99 ${ms(out.unloadedP99Ms)}, bound ${ms(allowedLoadedP99(out.unloadedP99Ms))}) | ` +
        `${ms(percentile(probes, 50))} / ${ms(percentile(probes, 99))} (unloaded p99 ${ms(percentile(liveUnloaded, 99))}) | ${r.successorCpuMs} |`,
    )
  })
}

t.test('no token, JWT or secret value in any log line of any of the processes', async (t) => {
  const tokens = await issuedTokens()
  for (const d of daemons) {
    t.same(findLeaks(await d.provider.logs(), [...w.secrets, ...tokens, ...podJwts()]), [], d.provider.logPath)
  }
  t.comment(
    [
      '| attack | successor | victim p50 / p99 (ms) | /health/live p50 / p99 (ms) | successor CPU, start to the tenant Mount (ms) |',
      '|---|---|---|---|---|',
      ...figures,
    ].join('\n'),
  )
  t.comment(report.write('handover', [`Node flags: ${w.daemon.nodeFlags.join(' ')}`]))
})
