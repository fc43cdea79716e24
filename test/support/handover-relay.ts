// A process of the provider's user between two providers' state handover (issue 43): it renames
// the handover socket aside, listens on its path, and relays between whoever connects (the new
// provider) and the socket it moved (the old one), frame by frame, recording every byte. A
// `tamper` function may change, drop, repeat or add frames on the way.
import { rename } from 'node:fs/promises'
import net from 'node:net'

export type RelaySide = 'successor' | 'predecessor'

/** One frame as it reached the relay: from whom, its number in that direction, its bytes (after the header). */
export interface RelayFrame {
  from: RelaySide
  index: number
  payload: Buffer
}

/** What the relay forwards for a frame: payloads (each gets its header); [] drops it. */
export type Tamper = (frame: RelayFrame) => Buffer[]

export interface Relay {
  /** Every byte both sides sent, as they sent it. */
  recorded(): Buffer
  frames: RelayFrame[]
  connections(): number
  close(): Promise<void>
}

function header(payload: Buffer): Buffer {
  const h = Buffer.alloc(4)
  h.writeUInt32BE(payload.length, 0)
  return h
}

/** Splits a byte stream into frames (4-byte length, payload) and hands each to `onFrame`. */
function frameSplitter(onFrame: (payload: Buffer) => void): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0)
  return (chunk) => {
    pending = Buffer.concat([pending, chunk])
    while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
      const length = pending.readUInt32BE(0)
      onFrame(pending.subarray(4, 4 + length))
      pending = pending.subarray(4 + length)
    }
  }
}

export async function startRelay(handoverPath: string, tamper: Tamper = (f) => [f.payload]): Promise<Relay> {
  const realPath = `${handoverPath}.moved-aside`
  await rename(handoverPath, realPath)
  const chunks: Buffer[] = []
  const frames: RelayFrame[] = []
  const sockets = new Set<net.Socket>()
  let connections = 0
  const server = net.createServer((successor) => {
    connections += 1
    const predecessor = net.connect({ path: realPath })
    for (const s of [successor, predecessor]) {
      sockets.add(s)
      s.on('error', () => undefined)
    }
    successor.once('close', () => predecessor.destroy())
    predecessor.once('close', () => successor.destroy())
    const counts: Record<RelaySide, number> = { successor: 0, predecessor: 0 }
    const wire = (from: RelaySide, to: net.Socket): ((chunk: Buffer) => void) => {
      const split = frameSplitter((payload) => {
        const frame = { from, index: counts[from]++, payload: Buffer.from(payload) }
        frames.push(frame)
        for (const out of tamper(frame)) to.write(Buffer.concat([header(out), out]))
      })
      return (chunk) => {
        chunks.push(Buffer.from(chunk))
        split(chunk)
      }
    }
    successor.on('data', wire('successor', predecessor))
    predecessor.on('data', wire('predecessor', successor))
  })
  // Bound on a name of its own and renamed over the path, as the provider does: closing a server
  // unlinks the path it bound, which by then may be the new provider's own socket.
  const bindPath = `${handoverPath}.relay`
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(bindPath, resolve)
  })
  await rename(bindPath, handoverPath)
  return {
    recorded: () => Buffer.concat(chunks),
    frames,
    connections: () => connections,
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
