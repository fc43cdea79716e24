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
 * hold the same HMAC key (proof.ts); the key never crosses the socket.
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
import type { ExportedSession } from '../vault/sessions/exported.js'
import type { SessionPool } from '../vault/sessions/pool.js'
import { encodeFrame, FrameReader, writeFrame, type FrameLimits } from './frames.js'
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
  readonly reader: FrameReader
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

async function expect<T extends Message['type']>(
  reader: FrameReader,
  type: T,
  timeoutMs: number,
): Promise<Extract<Message, { type: T }>> {
  const m = parseMessage(await reader.next(timeoutMs))
  if (m.type === 'decline') throw new Refusal(`the other provider declined: ${m.reason}`)
  if (m.type !== type) throw new Refusal(`expected a ${type} message, got ${m.type}`)
  return m as Extract<Message, { type: T }>
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

export class StateHandover {
  private readonly opts: StateHandoverOptions
  private readonly limits: HandoverLimits
  private readonly path: string | undefined
  private server: net.Server | undefined
  /** A successor is being served, or has been: one handover per process. */
  private busy = false
  private handedOver = false
  /** Replaced or shutting down: offers nothing any more (its state is stale or gone). */
  private closed = false

  constructor(opts: StateHandoverOptions) {
    this.opts = opts
    this.limits = opts.limits ?? DEFAULT_HANDOVER_LIMITS
    this.path = handoverSocketPath(opts.endpoint)
  }

  private key(): Promise<Buffer> {
    return this.opts.hmacKey.get(Deadline.in(STEP_TIMEOUT_MS))
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
    try {
      const key = await this.key().catch((err: unknown) => {
        throw new Refusal(`the HMAC key could not be read (${describe(err)})`)
      })
      const nonce = newNonce()
      await writeFrame(
        socket,
        encodeFrame({ type: 'hello', protocol: PROTOCOL, version: PROTOCOL_VERSION, pid: process.pid, nonce }),
      )
      const challenge = await expect(reader, 'challenge', STEP_TIMEOUT_MS)
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
      await writeFrame(socket, encodeFrame({ type: 'proof', proof: proof(key, 'successor', t) }))
      const { settings } = await expect(reader, 'settings', STEP_TIMEOUT_MS)
      const differ = settingsDiffer(this.opts.settings, settings)
      if (differ !== undefined) {
        await writeFrame(socket, encodeFrame({ type: 'decline', reason: `settings differ: ${differ}` })).catch(
          () => undefined,
        )
        throw new Refusal(`its state was made under other settings: ${differ}`)
      }
      return this.holdSessions(socket, reader)
    } catch (err) {
      socket.destroy()
      this.refused(describe(err))
      return undefined
    }
  }

  /**
   * From now until the state is in (or HOLD_SESSIONS_MS), new sessions wait for it: set before
   * the Mount socket is bound, so no Mount reaching this process logs in for an identity the
   * predecessor is about to hand over.
   */
  private holdSessions(socket: net.Socket, reader: FrameReader): Approach {
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
      reader,
      release,
      abandon: () => {
        socket.destroy()
        release()
      },
    }
  }

  private refused(why: string): void {
    this.opts.logger.warn({ why }, 'state handover refused; starting cold')
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
    const { socket, reader } = approach
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
      await writeFrame(socket, encodeFrame({ type: 'take' }))
      // The predecessor first finishes its calls in flight (at most DRAIN_WAIT_MS).
      const begin = await expect(reader, 'begin', DRAIN_WAIT_MS + STEP_TIMEOUT_MS)
      announced = { sessions: begin.sessions, leases: begin.leases }
      if (begin.sessions > this.limits.maxSessions || begin.leases > this.limits.maxEntries) {
        throw new Refusal(
          `the state holds ${begin.sessions} identities and ${begin.leases} leases, more than ${this.limits.maxSessions} and ${this.limits.maxEntries}`,
        )
      }
      let sessions = 0
      let entries = 0
      for (;;) {
        const m = parseMessage(await reader.next(STEP_TIMEOUT_MS))
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
    if (this.busy) {
      await writeFrame(socket, encodeFrame({ type: 'decline', reason: 'another successor is being served' })).catch(
        () => undefined,
      )
      socket.end()
      return
    }
    this.busy = true
    const reader = new FrameReader(socket, { maxFrameBytes: 64 * 1024, maxTotalBytes: 1024 * 1024 })
    let handedOver = false
    try {
      const hello = await expect(reader, 'hello', STEP_TIMEOUT_MS)
      if (hello.protocol !== PROTOCOL || hello.version !== PROTOCOL_VERSION) {
        throw new Refusal(`handover version ${hello.version}, this provider speaks ${PROTOCOL_VERSION}`)
      }
      const key = await this.key()
      const t: Transcript = {
        successorNonce: hello.nonce,
        predecessorNonce: newNonce(),
        successorPid: hello.pid,
        predecessorPid: process.pid,
      }
      await writeFrame(
        socket,
        encodeFrame({
          type: 'challenge',
          version: PROTOCOL_VERSION,
          pid: process.pid,
          nonce: t.predecessorNonce,
          proof: proof(key, 'predecessor', t),
        }),
      )
      const answer = await expect(reader, 'proof', STEP_TIMEOUT_MS)
      if (!proofMatches(key, 'successor', t, answer.proof)) {
        throw new Refusal("the connecting process does not hold this provider's HMAC key")
      }
      await writeFrame(socket, encodeFrame({ type: 'settings', settings: this.opts.settings }))
      await expect(reader, 'take', STEP_TIMEOUT_MS)
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
      await this.send(socket)
    } catch (err) {
      if (!handedOver) {
        logger.info({ why: describe(err) }, 'no state handed over to the connecting process')
        await writeFrame(socket, encodeFrame({ type: 'decline', reason: describe(err) })).catch(() => undefined)
      } else {
        logger.warn({ why: describe(err) }, 'state handover to the new provider broke off')
      }
    } finally {
      socket.end()
      if (!handedOver) this.busy = false
    }
  }

  /** Marks everything as handed over (this process never revokes it from now on) and streams it. */
  private async send(socket: net.Socket): Promise<void> {
    const started = Date.now()
    this.handedOver = true
    // No second successor: this process has nothing left to give.
    this.close()
    const sessions = this.opts.pool.exportState()
    const leases = sessions.reduce((n, s) => n + leasesOf(s), 0)
    await writeFrame(socket, encodeFrame({ type: 'begin', sessions: sessions.length, leases }))
    let skipped = 0
    for (const s of sessions) {
      await writeFrame(socket, encodeFrame(sessionFrame(s)))
      for (const e of s.entries) {
        const frame = encodeFrame(entryFrame(e))
        // Larger than the successor reads (an answer over -max-vault-response-size's default): it reads it again.
        if (frame.length - 4 > this.limits.maxFrameBytes) {
          skipped += 1
          continue
        }
        await writeFrame(socket, frame)
      }
    }
    await writeFrame(socket, encodeFrame({ type: 'end' }))
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
