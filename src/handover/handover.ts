/**
 * State handover between two provider processes on one node (docs/failure-behaviour.md,
 * "State handover"): during a DaemonSet rolling update the running process (the predecessor)
 * passes its identities (Vault tokens with their lifetimes) and what they have read (leased and
 * issued secrets with their lease IDs and renewal times) to the process that replaces it (the
 * successor), which renews and revokes them as if it had made them. Nothing is written to disk:
 * a crash or a reboot still starts cold.
 *
 * The channel is a unix socket beside the Mount socket (`<endpoint>.handover`), mode 0600 like
 * it, so only the provider's user (or root) can connect. Node offers no way to read a unix
 * socket's peer credentials (SO_PEERCRED), so on top of that both processes prove that they
 * hold the same HMAC key (proof.ts); the key never crosses the socket. Everything after the
 * proofs is sealed under keys bound to that handshake (channel.ts): a process that relays
 * between the two sees ciphertext, and changing, dropping or adding a frame ends the transfer.
 *
 * The predecessor listens for its whole life. The successor, before it binds the Mount socket:
 * connects, authenticates, compares the settings under which the state is valid (declining it
 * when its own differ), then binds the Mount socket as every start does and says `take`. The
 * predecessor then hands the socket over (GOAWAY, finishes its calls in flight), so nothing it
 * sends can change afterwards, marks everything as handed over (it never revokes any of it) and
 * streams the state; the successor's new sessions wait for it (bounded) rather than log in anew.
 */
import { randomBytes } from 'node:crypto'
import { rename } from 'node:fs/promises'
import net from 'node:net'
import type { HmacKeySource } from '../hmac/hmac-key.js'
import type { Logger } from '../observability/logger.js'
import { bindOwnerOnly, prepareSocketPath, privateSocketPath, MAX_SOCKET_PATH_BYTES } from '../server/socket.js'
import { Deadline } from '../util/deadline.js'
import type { Time } from '../util/time.js'
import type { ExportedSession } from '../vault/sessions/exported.js'
import type { SessionPool } from '../vault/sessions/pool.js'
import { SEAL_OVERHEAD, SealedChannel } from './channel.js'
import {
  encodeFrame,
  encodeFrameBytes,
  FrameError,
  FrameReader,
  parseFrame,
  writeFrame,
  type FrameLimits,
} from './frames.js'
import { newNonce, proof, proofMatches, type Transcript } from './proof.js'
import {
  entryFrame,
  parseMessage,
  PROTOCOL,
  PROTOCOL_VERSION,
  sessionFrame,
  type HandoverSettings,
  type Message,
} from './wire.js'

export const HANDOVER_SUFFIX = '.handover'

/** Bounds of what a successor reads: the secret store's own bounds, with room for tokens and framing. */
export interface HandoverLimits extends FrameLimits {
  maxSessions: number
  maxEntries: number
}

export const DEFAULT_HANDOVER_LIMITS: HandoverLimits = {
  // One cached Vault answer per frame: the default -max-vault-response-size (4 MiB) fits twice.
  maxFrameBytes: 8 * 1024 * 1024,
  maxTotalBytes: 96 * 1024 * 1024,
  maxSessions: 20_000,
  maxEntries: 20_000,
}

/** How long each side waits for the other's next message (before the state itself). */
export const STEP_TIMEOUT_MS = 10_000
/**
 * The unauthenticated part, hello to proof, ends within this on either side: a peer that says
 * nothing or trickles is dropped, and a successor's start waits at most this long for it.
 */
export const HANDSHAKE_MS = 5_000
/** Connections a predecessor keeps in their handshake at once; a newer one pushes the oldest out. */
export const MAX_HANDSHAKES = 8
/** The state itself, `begin` to `end`, crosses within this; then the rest starts cold. */
export const TRANSFER_MS = 120_000
/** The predecessor waits at most this long for its calls in flight before it sends its state. */
export const DRAIN_WAIT_MS = 10_000
/** The successor's new sessions wait at most this long for the state before they log in themselves. */
export const HOLD_SESSIONS_MS = 15_000

export type HandoverItem = 'identity' | 'lease'
export type HandoverOutcome = 'taken_over' | 'refused' | 'expired'

/** What the successor took over: identities, and the leased and issued secrets among what they had read. */
export type HandoverCounts = Record<HandoverItem, Record<HandoverOutcome, number>>

export interface HandoverObserver {
  handover(item: HandoverItem, outcome: HandoverOutcome, count: number): void
}

export interface StateHandoverOptions {
  /** The Mount socket (-endpoint); the handover socket is beside it. */
  endpoint: string
  pool: SessionPool
  hmacKey: HmacKeySource
  /** This process's settings: the successor refuses state made under others. */
  settings: HandoverSettings
  /** Whether this process may use a Vault address (-vault-addr-allowlist): identities of others are refused. */
  allowsAddress: (address: string) => boolean
  logger: Logger
  /** The clock the key is waited for by. */
  time: Time
  observer?: HandoverObserver
  /**
   * Predecessor: a successor says it serves the Mount socket now. Resolves true once this
   * process has handed the socket over and finished its calls (ProviderServer.checkReplaced).
   */
  replaced: () => Promise<boolean>
  limits?: HandoverLimits
}

/** The successor's open, authenticated connection to its predecessor, until it says `take`. */
export interface Approach {
  readonly socket: net.Socket
  /** Sealed under this handshake's keys. */
  readonly channel: SealedChannel
  /** Lets the sessions held for the state go (the state is in, or will not come). */
  release(): void
  /** The Mount socket could not be bound: let the predecessor go on as it was. */
  abandon(): void
}

/** Why a handover did not happen: a message for the log, never holding a token or a secret. */
class Refusal extends Error {
  override name = 'Refusal'
}

/** The handover socket's path, or undefined when it (or its private bind name) would be too long. */
export function handoverSocketPath(endpoint: string): string | undefined {
  const p = `${endpoint}${HANDOVER_SUFFIX}`
  if (Buffer.byteLength(p) > MAX_SOCKET_PATH_BYTES) return undefined
  return privateSocketPath(p, `${process.pid}-ffffff.1`) === undefined ? undefined : p
}

function emptyCounts(): HandoverCounts {
  return {
    identity: { taken_over: 0, refused: 0, expired: 0 },
    lease: { taken_over: 0, refused: 0, expired: 0 },
  }
}

function leasesOf(s: { entries: ReadonlyArray<{ lifetime: { kind: string } }> }): number {
  return s.entries.filter((e) => e.lifetime.kind !== 'static').length
}

function connect(path: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ path })
    socket.once('connect', () => {
      socket.removeAllListeners('error')
      resolve(socket)
    })
    socket.once('error', reject)
  })
}

function settingsDiffer(own: HandoverSettings, theirs: HandoverSettings): string | undefined {
  const names: Record<keyof HandoverSettings, string> = {
    vaultAddress: 'Vault address (-vault-addr)',
    vaultNamespace: 'Vault namespace (-vault-namespace)',
    authMount: 'auth mount (-vault-mount)',
    identityScope: 'identity scope (-identity-scope)',
    shareDynamicSecrets: '-share-dynamic-secrets',
  }
  for (const k of Object.keys(names) as Array<keyof HandoverSettings>) {
    if (own[k] !== theirs[k]) {
      return `its ${names[k]} is ${JSON.stringify(theirs[k])}, this provider's is ${JSON.stringify(own[k])}`
    }
  }
  return undefined
}

/** A deadline over several reads, named in the refusal it causes. */
interface Bound {
  until: number
  what: string
}

function bound(ms: number, what: string): Bound {
  return { until: Date.now() + ms, what: `${what} within ${ms} ms` }
}

/** One read, given what is left of `b` (at most `stepMs`). */
async function within<T>(b: Bound, read: (ms: number) => Promise<T>, stepMs = STEP_TIMEOUT_MS): Promise<T> {
  const left = b.until - Date.now()
  if (left <= 0) throw new Refusal(`not ${b.what}`)
  try {
    return await read(Math.min(left, stepMs))
  } catch (err) {
    if (err instanceof FrameError && Date.now() >= b.until) throw new Refusal(`not ${b.what}`)
    throw err
  }
}

function expectType<T extends Message['type']>(m: Message, type: T): Extract<Message, { type: T }> {
  if (m.type === 'decline') throw new Refusal(`the other provider declined: ${m.reason}`)
  if (m.type !== type) throw new Refusal(`expected a ${type} message, got ${m.type}`)
  return m as Extract<Message, { type: T }>
}

async function expect<T extends Message['type']>(
  channel: SealedChannel,
  type: T,
  b: Bound,
  stepMs = STEP_TIMEOUT_MS,
): Promise<Extract<Message, { type: T }>> {
  return expectType(parseMessage(await within(b, (ms) => channel.next(ms), stepMs)), type)
}

/** A handshake message's JSON bytes: kept as sent, for the transcript the frame keys are bound to. */
function handshakeBytes(message: Message): Buffer {
  return Buffer.from(JSON.stringify(message), 'utf8')
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

export class StateHandover {
  private readonly opts: StateHandoverOptions
  private readonly limits: HandoverLimits
  private readonly path: string | undefined
  private server: net.Server | undefined
  /** An authenticated successor is being served, or has been: one handover per process. */
  private busy = false
  /** Connections in their handshake, oldest first. */
  private readonly handshakes = new Set<net.Socket>()
  /** Those of them that have sent a whole hello: a peer that says nothing, or trickles, never gets here. */
  private readonly greeted = new WeakSet<net.Socket>()
  private handedOver = false
  /** Replaced or shutting down: offers nothing any more (its state is stale or gone). */
  private closed = false

  constructor(opts: StateHandoverOptions) {
    this.opts = opts
    this.limits = opts.limits ?? DEFAULT_HANDOVER_LIMITS
    this.path = handoverSocketPath(opts.endpoint)
  }

  private key(ms = STEP_TIMEOUT_MS): Promise<Buffer> {
    return this.opts.hmacKey.get(Deadline.in(ms, undefined, this.opts.time))
  }

  // ------------------------------------------------------------------ the successor

  /**
   * Before the Mount socket is bound: reach a running predecessor, authenticate both ways and
   * check its settings. Undefined: start cold (the reason is logged).
   */
  async approach(): Promise<Approach | undefined> {
    const { logger } = this.opts
    if (this.path === undefined) {
      logger.warn({ endpoint: this.opts.endpoint }, 'no state handover: the socket path is too long for its neighbour')
      return undefined
    }
    let socket: net.Socket
    try {
      socket = await connect(this.path)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      // ENOENT: no predecessor, or one without handover. ECONNREFUSED: what kill -9 leaves.
      logger.info(
        {
          why:
            code === 'ENOENT'
              ? 'no running provider offers its state'
              : `nothing answers on ${this.path} (${code ?? 'error'})`,
        },
        'starting cold',
      )
      return undefined
    }
    const reader = new FrameReader(socket, this.limits)
    const started = Date.now()
    try {
      const key = await this.key().catch((err: unknown) => {
        throw new Refusal(`the HMAC key could not be read (${describe(err)})`)
      })
      // A peer that holds the path and says nothing delays this start by at most HANDSHAKE_MS.
      const handshake = bound(HANDSHAKE_MS, 'authenticated')
      const nonce = newNonce()
      const hello = handshakeBytes({
        type: 'hello',
        protocol: PROTOCOL,
        version: PROTOCOL_VERSION,
        pid: process.pid,
        nonce,
      })
      await writeFrame(socket, encodeFrameBytes(hello))
      const challengeBytes = await within(handshake, (ms) => reader.nextBytes(ms))
      const challenge = expectType(parseMessage(parseFrame(challengeBytes)), 'challenge')
      if (challenge.version !== PROTOCOL_VERSION) {
        throw new Refusal(
          `the running provider speaks handover version ${challenge.version}, this one ${PROTOCOL_VERSION}`,
        )
      }
      const t: Transcript = {
        successorNonce: nonce,
        predecessorNonce: challenge.nonce,
        successorPid: process.pid,
        predecessorPid: challenge.pid,
      }
      if (!proofMatches(key, 'predecessor', t, challenge.proof)) {
        throw new Refusal(
          "the running provider does not hold this provider's HMAC key (another -hmac-secret-name or -hmac-key-file, or another installation)",
        )
      }
      const answer = handshakeBytes({ type: 'proof', proof: proof(key, 'successor', t) })
      await writeFrame(socket, encodeFrameBytes(answer))
      const channel = SealedChannel.open('successor', socket, reader, key, t, [hello, challengeBytes, answer])
      const { settings } = await expect(channel, 'settings', handshake)
      const differ = settingsDiffer(this.opts.settings, settings)
      if (differ !== undefined) {
        await channel.send({ type: 'decline', reason: `settings differ: ${differ}` }).catch(() => undefined)
        throw new Refusal(`its state was made under other settings: ${differ}`)
      }
      return this.holdSessions(socket, channel)
    } catch (err) {
      socket.destroy()
      this.refused(describe(err), Date.now() - started)
      return undefined
    }
  }

  /**
   * From now until the state is in (or HOLD_SESSIONS_MS), new sessions wait for it: set before
   * the Mount socket is bound, so no Mount reaching this process logs in for an identity the
   * predecessor is about to hand over.
   */
  private holdSessions(socket: net.Socket, channel: SealedChannel): Approach {
    let release!: () => void
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const timer = setTimeout(release, HOLD_SESSIONS_MS)
    timer.unref()
    void released.then(() => clearTimeout(timer))
    this.opts.pool.holdSessionsUntil(released)
    return {
      socket,
      channel,
      release,
      abandon: () => {
        socket.destroy()
        release()
      },
    }
  }

  private refused(why: string, durationMs: number): void {
    this.opts.logger.warn({ why, durationMs }, 'state handover refused; starting cold')
  }

  /**
   * Once the Mount socket is bound: asks the predecessor for its state and takes it over (new
   * sessions wait for it, at most HOLD_SESSIONS_MS), then listens for this process's own
   * successor. Resolves with what was taken over, or undefined without a predecessor.
   */
  async takeOver(approach: Approach | undefined): Promise<HandoverCounts | undefined> {
    let counts: HandoverCounts | undefined
    if (approach !== undefined) {
      try {
        counts = await this.receive(approach)
      } finally {
        approach.release()
      }
    }
    await this.listen()
    return counts
  }

  private async receive(approach: Approach): Promise<HandoverCounts> {
    const { socket, channel } = approach
    const { logger, pool, observer } = this.opts
    const started = Date.now()
    const counts = emptyCounts()
    let announced = { sessions: 0, leases: 0 }
    let failure: string | undefined
    let current: ExportedSession | undefined
    const settle = async (s: ExportedSession): Promise<void> => {
      const leases = leasesOf(s)
      if (!this.opts.allowsAddress(s.identity.connection.address)) {
        counts.identity.refused += 1
        counts.lease.refused += leases
        return
      }
      const result = await pool.importState(s).catch(() => ({ outcome: 'refused' as const, entries: undefined }))
      counts.identity[result.outcome] += 1
      if (result.entries === undefined) {
        counts.lease[result.outcome] += leases
        return
      }
      counts.lease.taken_over += result.entries.leases.taken
      counts.lease.expired += result.entries.leases.expired
    }
    try {
      await channel.send({ type: 'take' })
      // The predecessor first finishes its calls in flight (at most DRAIN_WAIT_MS).
      const drain = DRAIN_WAIT_MS + STEP_TIMEOUT_MS
      const begin = await expect(channel, 'begin', bound(drain, 'begun'), drain)
      announced = { sessions: begin.sessions, leases: begin.leases }
      if (begin.sessions > this.limits.maxSessions || begin.leases > this.limits.maxEntries) {
        throw new Refusal(
          `the state holds ${begin.sessions} identities and ${begin.leases} leases, more than ${this.limits.maxSessions} and ${this.limits.maxEntries}`,
        )
      }
      let sessions = 0
      let entries = 0
      const transfer = bound(TRANSFER_MS, 'all sent')
      for (;;) {
        const m = parseMessage(await within(transfer, (ms) => channel.next(ms)))
        if (m.type === 'end') break
        if (m.type === 'session') {
          if (current) await settle(current)
          current = undefined
          if (++sessions > begin.sessions) throw new Refusal('more identities than announced')
          current = { ...m.session, entries: [] }
        } else if (m.type === 'entry') {
          if (current === undefined) throw new Refusal('an entry before its identity')
          if (++entries > this.limits.maxEntries) throw new Refusal(`more than ${this.limits.maxEntries} entries`)
          current.entries.push(m.entry)
        } else {
          throw new Refusal(`an unexpected ${m.type} message`)
        }
      }
      if (current) await settle(current)
      current = undefined
    } catch (err) {
      failure = describe(err)
    } finally {
      socket.destroy()
    }
    // What was announced and neither taken over nor found expired was refused (a broken or oversized state).
    const seen = (item: keyof HandoverCounts): number =>
      counts[item].taken_over + counts[item].refused + counts[item].expired
    counts.identity.refused += Math.max(0, announced.sessions - seen('identity'))
    counts.lease.refused += Math.max(0, announced.leases - seen('lease'))
    for (const item of ['identity', 'lease'] as const) {
      for (const outcome of ['taken_over', 'refused', 'expired'] as const) {
        if (counts[item][outcome] > 0) observer?.handover(item, outcome, counts[item][outcome])
      }
    }
    const line = { identities: counts.identity, leases: counts.lease, durationMs: Date.now() - started }
    if (failure === undefined) logger.info(line, 'took over the state of the provider this one replaces')
    else logger.warn({ ...line, why: failure }, 'state handover ended early; the rest starts cold')
    return counts
  }

  // ------------------------------------------------------------------ the predecessor

  /** Listens for a successor (bound like the Mount socket: a private name renamed over the path, 0600). */
  async listen(): Promise<void> {
    if (this.path === undefined || this.server !== undefined || this.handedOver || this.closed) return
    const server = net.createServer((socket) => void this.serve(socket))
    const privatePath = privateSocketPath(this.path, `${process.pid}-${randomBytes(3).toString('hex')}.1`)!
    try {
      await prepareSocketPath(privatePath)
      await bindOwnerOnly(
        privatePath,
        () =>
          new Promise<void>((resolve, reject) => {
            server.once('error', reject)
            server.listen(privatePath, () => {
              server.off('error', reject)
              resolve()
            })
          }),
      )
      // Replaced meanwhile: the path may be a successor's by now.
      if (this.closed) throw new Error('replaced before it could listen')
      await rename(privatePath, this.path)
      this.server = server
    } catch (err) {
      server.close()
      this.opts.logger.warn({ err }, 'cannot offer state to a successor: it will start cold')
    }
  }

  private async serve(socket: net.Socket): Promise<void> {
    const { logger } = this.opts
    // A peer that resets the connection must not take the process down (the reader reports it).
    socket.on('error', () => undefined)
    // Connections still in their handshake do not keep a successor out: several may run at once,
    // each within HANDSHAKE_MS, and past MAX_HANDSHAKES a newer one pushes out the oldest that has not
    // said hello yet (else the oldest): peers reconnecting as fast as they are dropped cannot push out
    // a successor whose hello came in.
    if (this.handshakes.size >= MAX_HANDSHAKES) {
      const pushed = this.oldestSilent() ?? this.handshakes.values().next().value!
      this.handshakes.delete(pushed)
      pushed.destroy()
    }
    this.handshakes.add(socket)
    const reader = new FrameReader(socket, { maxFrameBytes: 64 * 1024, maxTotalBytes: 1024 * 1024 })
    let channel: SealedChannel | undefined
    let mine = false
    let handedOver = false
    try {
      const handshake = bound(HANDSHAKE_MS, 'authenticated')
      const helloBytes = await within(handshake, (ms) => reader.nextBytes(ms))
      const hello = expectType(parseMessage(parseFrame(helloBytes)), 'hello')
      this.greeted.add(socket)
      if (hello.protocol !== PROTOCOL || hello.version !== PROTOCOL_VERSION) {
        throw new Refusal(`handover version ${hello.version}, this provider speaks ${PROTOCOL_VERSION}`)
      }
      const key = await this.key(Math.max(1, handshake.until - Date.now()))
      const t: Transcript = {
        successorNonce: hello.nonce,
        predecessorNonce: newNonce(),
        successorPid: hello.pid,
        predecessorPid: process.pid,
      }
      const challenge = handshakeBytes({
        type: 'challenge',
        version: PROTOCOL_VERSION,
        pid: process.pid,
        nonce: t.predecessorNonce,
        proof: proof(key, 'predecessor', t),
      })
      await writeFrame(socket, encodeFrameBytes(challenge))
      const proofBytes = await within(handshake, (ms) => reader.nextBytes(ms))
      const answer = expectType(parseMessage(parseFrame(proofBytes)), 'proof')
      if (!proofMatches(key, 'successor', t, answer.proof)) {
        throw new Refusal("the connecting process does not hold this provider's HMAC key")
      }
      this.handshakes.delete(socket)
      channel = SealedChannel.open('predecessor', socket, reader, key, t, [helloBytes, challenge, proofBytes])
      // One successor at a time, and only one that has proven the key can be it.
      if (this.busy) throw new Refusal('another successor is being served')
      this.busy = true
      mine = true
      await channel.send({ type: 'settings', settings: this.opts.settings })
      await expect(channel, 'take', bound(STEP_TIMEOUT_MS, 'taken'))
      // Hand the socket over and finish the calls in flight first: then nothing sent changes.
      let timer: NodeJS.Timeout | undefined
      const waited = await Promise.race([
        this.opts.replaced(),
        new Promise<'later'>((resolve) => {
          timer = setTimeout(() => resolve('later'), DRAIN_WAIT_MS)
        }),
      ]).finally(() => clearTimeout(timer))
      if (waited === false) throw new Refusal('the successor does not serve the Mount socket')
      handedOver = true
      await this.send(socket, channel)
    } catch (err) {
      if (!handedOver) {
        logger.info({ why: describe(err) }, 'no state handed over to the connecting process')
        // Sealed once there are keys: after the proofs, the successor takes nothing plain.
        const decline = { type: 'decline', reason: describe(err) }
        await (channel ? channel.send(decline) : writeFrame(socket, encodeFrame(decline))).catch(() => undefined)
      } else {
        logger.warn({ why: describe(err) }, 'state handover to the new provider broke off')
      }
    } finally {
      this.handshakes.delete(socket)
      socket.end()
      if (mine && !handedOver) this.busy = false
    }
  }

  private oldestSilent(): net.Socket | undefined {
    for (const socket of this.handshakes) if (!this.greeted.has(socket)) return socket
    return undefined
  }

  /** Marks everything as handed over (this process never revokes it from now on) and streams it. */
  private async send(socket: net.Socket, channel: SealedChannel): Promise<void> {
    const started = Date.now()
    this.handedOver = true
    // No second successor: this process has nothing left to give.
    this.close()
    // A successor that stops reading cannot hold this process's writes for ever.
    const timer = setTimeout(() => socket.destroy(), TRANSFER_MS)
    timer.unref()
    const sessions = this.opts.pool.exportState()
    const leases = sessions.reduce((n, s) => n + leasesOf(s), 0)
    let skipped = 0
    try {
      await channel.send({ type: 'begin', sessions: sessions.length, leases })
      for (const s of sessions) {
        await channel.send(sessionFrame(s))
        for (const e of s.entries) {
          const json = Buffer.from(JSON.stringify(entryFrame(e)), 'utf8')
          // Larger than the successor reads (an answer over -max-vault-response-size's default): it reads it again.
          if (json.length + SEAL_OVERHEAD > this.limits.maxFrameBytes) {
            skipped += 1
            continue
          }
          await channel.sendJson(json)
        }
      }
      await channel.send({ type: 'end' })
    } finally {
      clearTimeout(timer)
    }
    this.opts.logger.info(
      { identities: sessions.length, leases, tooLarge: skipped, durationMs: Date.now() - started },
      'handed over the state of this provider to the new provider',
    )
  }

  /** Stops listening for good (replaced, or shutting down); a handover in progress goes on. */
  close(): void {
    this.closed = true
    this.server?.close()
    this.server = undefined
  }
}
