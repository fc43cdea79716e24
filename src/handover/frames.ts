/**
 * Length-prefixed JSON frames over the handover socket: a 4-byte big-endian length, then that
 * many bytes of UTF-8 JSON. The reader holds at most one frame's bytes plus what the socket has
 * delivered, refuses a frame over its limit before reading it, and counts every byte against a
 * total: the state is input like any other.
 */
import type { Socket } from 'node:net'

export interface FrameLimits {
  /** Largest single frame. */
  maxFrameBytes: number
  /** All frames of one connection together. */
  maxTotalBytes: number
}

export class FrameError extends Error {
  override name = 'FrameError'
}

const HEADER_BYTES = 4

/** Reads frames one at a time from `socket`, each within `timeoutMs`. */
export class FrameReader {
  private buffered: Buffer[] = []
  private bufferedBytes = 0
  private total = 0
  private failure: Error | undefined
  private wake: (() => void) | undefined

  constructor(
    private readonly socket: Socket,
    private readonly limits: FrameLimits,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.total += chunk.length
      if (this.total > limits.maxTotalBytes) {
        this.fail(new FrameError(`more than ${limits.maxTotalBytes} bytes in all`))
        return
      }
      this.buffered.push(chunk)
      this.bufferedBytes += chunk.length
      // Do not read ahead more than one frame: the peer waits (backpressure) until this side catches up.
      if (this.bufferedBytes > limits.maxFrameBytes + HEADER_BYTES) socket.pause()
      this.notify()
    })
    socket.on('end', () => this.fail(new FrameError('the peer closed the connection')))
    socket.on('close', () => this.fail(new FrameError('the connection closed')))
    socket.on('error', (err) =>
      this.fail(new FrameError(`connection error (${(err as NodeJS.ErrnoException).code ?? 'unknown'})`)),
    )
  }

  private fail(err: Error): void {
    this.failure ??= err
    this.notify()
  }

  private notify(): void {
    const w = this.wake
    this.wake = undefined
    w?.()
  }

  /** The bytes of the next frame if they have all arrived; throws for one over the limit. */
  private take(): Buffer | undefined {
    if (this.bufferedBytes < HEADER_BYTES) return undefined
    if (this.buffered[0]!.length < HEADER_BYTES) this.buffered = [Buffer.concat(this.buffered)]
    const length = this.buffered[0]!.readUInt32BE(0)
    if (length > this.limits.maxFrameBytes) {
      throw new FrameError(`a frame of ${length} bytes, more than ${this.limits.maxFrameBytes}`)
    }
    // Joined only once the whole frame is here: no copying per chunk.
    if (this.bufferedBytes < HEADER_BYTES + length) return undefined
    const all = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered)
    const frame = all.subarray(HEADER_BYTES, HEADER_BYTES + length)
    const rest = all.subarray(HEADER_BYTES + length)
    this.buffered = rest.length > 0 ? [rest] : []
    this.bufferedBytes = rest.length
    if (this.bufferedBytes <= this.limits.maxFrameBytes + HEADER_BYTES) this.socket.resume()
    return frame
  }

  /** The next frame's JSON value; throws FrameError on a closed connection, a timeout, a limit or bad JSON. */
  async next(timeoutMs: number): Promise<unknown> {
    return parseFrame(await this.nextBytes(timeoutMs))
  }

  /** The next frame's bytes (without its header); throws FrameError like next(). */
  async nextBytes(timeoutMs: number): Promise<Buffer> {
    const until = Date.now() + timeoutMs
    for (;;) {
      const frame = this.take()
      if (frame !== undefined) return frame
      if (this.failure) throw this.failure
      const left = until - Date.now()
      if (left <= 0) throw new FrameError(`no frame within ${timeoutMs} ms`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  }
}

/** A frame's JSON value; throws FrameError for bytes that are not JSON. */
export function parseFrame(frame: Buffer): unknown {
  try {
    return JSON.parse(frame.toString('utf8')) as unknown
  } catch {
    throw new FrameError('a frame that is not JSON')
  }
}

/** The frame's bytes (header and JSON) for `message`. */
export function encodeFrame(message: unknown): Buffer {
  return encodeFrameBytes(Buffer.from(JSON.stringify(message), 'utf8'))
}

/** The frame (header and payload) for `payload`. */
export function encodeFrameBytes(...payload: Buffer[]): Buffer {
  const header = Buffer.alloc(HEADER_BYTES)
  header.writeUInt32BE(
    payload.reduce((n, b) => n + b.length, 0),
    0,
  )
  return Buffer.concat([header, ...payload])
}

/** Writes one frame, waiting while the socket's buffer is full. */
export async function writeFrame(socket: Socket, frame: Buffer): Promise<void> {
  if (!socket.writable) throw new FrameError('the connection is closed')
  if (socket.write(frame)) return
  await new Promise<void>((resolve, reject) => {
    const done = (err?: Error): void => {
      socket.off('drain', onDrain)
      socket.off('close', onClose)
      if (err) reject(err)
      else resolve()
    }
    const onDrain = (): void => done()
    const onClose = (): void => done(new FrameError('the connection closed while writing'))
    socket.on('drain', onDrain)
    socket.on('close', onClose)
    if (socket.destroyed) onClose()
  })
}
