/**
 * The handover's channel once both sides have proven the key (proof.ts). The proofs show who
 * is at the other end, but a process that can rename entries in the socket directory can stand
 * between the two and pass both proofs through; so every frame after them is sealed
 * (AES-256-GCM) under a key bound to this one handshake: HKDF-SHA256 over the HMAC key, the exact
 * bytes of the handshake's frames and both nonces and PIDs, one key per direction. A relay sees
 * ciphertext only; a relay that changed any byte of the handshake (its own nonce or PID) holds
 * frames that open under neither side's key. Each frame's nonce is its direction and sequence
 * number, so a frame dropped, replayed, reordered or injected does not open and the transfer ends.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync } from 'node:crypto'
import type { Socket } from 'node:net'
import { isPlainObject } from '../util/plain-object.js'
import { encodeFrameBytes, FrameError, parseFrame, writeFrame, type FrameReader } from './frames.js'
import type { Transcript } from './proof.js'

export type Direction = 'to-predecessor' | 'to-successor'

/** In every frame's nonce: the two directions never share a (key, nonce) pair even were their keys equal. */
const DIRECTION_TAG: Record<Direction, number> = { 'to-predecessor': 1, 'to-successor': 2 }
const KEY_LABEL = 'vault-csi-provider handover v2: frame key'
/** A sealed frame's first byte, which no JSON text begins with: a plain frame is never read as sealed. */
export const SEALED_MARKER = 0x00
const TAG_BYTES = 16
const NONCE_BYTES = 12
/** A sealed frame's bytes beyond its JSON: the marker and the authentication tag. */
export const SEAL_OVERHEAD = 1 + TAG_BYTES

/** The key of one direction of this handshake. `frames`: hello, challenge and proof as they crossed the socket. */
export function frameKey(hmacKey: Buffer, t: Transcript, frames: readonly Buffer[], direction: Direction): Buffer {
  const digest = createHash('sha256')
  for (const f of frames) {
    // Length-prefixed: no two different lists of frames hash alike.
    const length = Buffer.alloc(4)
    length.writeUInt32BE(f.length, 0)
    digest.update(length).update(f)
  }
  // Nonces are base64 and PIDs decimal: none holds the separator.
  const info = [KEY_LABEL, direction, t.successorNonce, t.predecessorNonce, t.successorPid, t.predecessorPid].join('\n')
  return Buffer.from(hkdfSync('sha256', hmacKey, digest.digest(), info, 32))
}

function nonceFor(direction: Direction, sequence: number): Buffer {
  const nonce = Buffer.alloc(NONCE_BYTES)
  nonce.writeUInt32BE(DIRECTION_TAG[direction], 0)
  nonce.writeBigUInt64BE(BigInt(sequence), 4)
  return nonce
}

/** Seals frame number `sequence` of `direction`: the frame's bytes, header included. */
export function sealFrame(key: Buffer, direction: Direction, sequence: number, plain: Buffer): Buffer {
  const nonce = nonceFor(direction, sequence)
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES })
  // The nonce as associated data too: the sequence number is authenticated, not only used.
  cipher.setAAD(nonce)
  const body = Buffer.concat([cipher.update(plain), cipher.final()])
  return encodeFrameBytes(Buffer.from([SEALED_MARKER]), body, cipher.getAuthTag())
}

/** The plaintext of a sealed frame's bytes (without header), or undefined when it does not open. */
export function openFrame(key: Buffer, direction: Direction, sequence: number, frame: Buffer): Buffer | undefined {
  if (frame.length < SEAL_OVERHEAD || frame[0] !== SEALED_MARKER) return undefined
  const nonce = nonceFor(direction, sequence)
  const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES })
  decipher.setAAD(nonce)
  decipher.setAuthTag(frame.subarray(frame.length - TAG_BYTES))
  try {
    return Buffer.concat([decipher.update(frame.subarray(1, frame.length - TAG_BYTES)), decipher.final()])
  } catch {
    return undefined
  }
}

export class SealedChannel {
  private sent = 0
  private received = 0
  private broken: FrameError | undefined

  private constructor(
    private readonly socket: Socket,
    private readonly reader: FrameReader,
    private readonly sendKey: Buffer,
    private readonly receiveKey: Buffer,
    private readonly sending: Direction,
    private readonly receiving: Direction,
  ) {}

  /** The channel of `role` after a handshake whose frames were `frames` (hello, challenge, proof). */
  static open(
    role: 'successor' | 'predecessor',
    socket: Socket,
    reader: FrameReader,
    hmacKey: Buffer,
    t: Transcript,
    frames: readonly Buffer[],
  ): SealedChannel {
    const sending: Direction = role === 'successor' ? 'to-predecessor' : 'to-successor'
    const receiving: Direction = role === 'successor' ? 'to-successor' : 'to-predecessor'
    return new SealedChannel(
      socket,
      reader,
      frameKey(hmacKey, t, frames, sending),
      frameKey(hmacKey, t, frames, receiving),
      sending,
      receiving,
    )
  }

  async send(message: unknown): Promise<void> {
    await this.sendJson(Buffer.from(JSON.stringify(message), 'utf8'))
  }

  /** Sends a message already in JSON (a caller that checks its size first: a frame not sent must not take a number). */
  async sendJson(json: Buffer): Promise<void> {
    await writeFrame(this.socket, sealFrame(this.sendKey, this.sending, this.sent++, json))
  }

  /**
   * The next message's JSON value. Throws FrameError when the frame does not open: changed,
   * replayed, reordered or injected on the way, or one before it dropped. The only plain frame
   * taken is a decline in answer to the handshake (the peer found no key to seal it with).
   */
  async next(timeoutMs: number): Promise<unknown> {
    if (this.broken) throw this.broken
    const frame = await this.reader.nextBytes(timeoutMs)
    if (frame[0] !== SEALED_MARKER && this.received === 0) {
      const plain = parseFrame(frame)
      if (isPlainObject(plain) && plain.type === 'decline') return plain
    }
    const opened = openFrame(this.receiveKey, this.receiving, this.received, frame)
    if (opened === undefined) {
      this.broken = new FrameError(
        `frame ${this.received} does not open with this handshake's key (changed, replayed, reordered, dropped or injected on the way)`,
      )
      throw this.broken
    }
    this.received += 1
    return parseFrame(opened)
  }
}
