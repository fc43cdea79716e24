// A local HTTP server for tests of how long a client keeps idle connections: like Vault and the
// Kubernetes API server (Go's net/http), it sends no Keep-Alive hint unless told to, and it never
// closes an idle connection itself, so only the client under test does. Time is meant to be
// Node's mocked timers (node:test MockTimers), which drive undici's own timers too.
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { mock } from 'node:test'
import { setImmediate as turn } from 'node:timers/promises'

export interface IdleServer {
  url: string
  /** Every connection the server accepted, in order. */
  sockets: Socket[]
  isOpen(i: number): boolean
  /**
   * Lets sockets run until connection `i` has closed, or 10 s of real time went by: a bound
   * on a hang, not a speed limit (a close takes a few turns of the event loop).
   */
  settle(i: number): Promise<void>
}

/** `body` answers every request with 200; `keepAliveHint` (seconds) adds a Keep-Alive header. */
export async function startIdleServer(
  t: { teardown(fn: () => unknown): void },
  body: string,
  keepAliveHint?: number,
): Promise<IdleServer> {
  const sockets: Socket[] = []
  const open = new Set<Socket>()
  const s = http.createServer((_req, res) => {
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' }
    if (keepAliveHint !== undefined) headers['keep-alive'] = `timeout=${keepAliveHint}`
    res.writeHead(200, headers).end(body)
  })
  // No Keep-Alive header of Node's own and no idle timeout: only the client closes.
  s.keepAliveTimeout = 0
  s.on('connection', (socket: Socket) => {
    sockets.push(socket)
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    s.closeAllConnections()
    return new Promise<void>((r) => s.close(() => r()))
  })
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    sockets,
    isOpen: (i) => open.has(sockets[i]!),
    settle: async (i) => {
      const until = Date.now() + 10_000
      while (open.has(sockets[i]!) && Date.now() < until) await turn()
    },
  }
}

/** Moves mocked time on in half-second steps, letting sockets and promises run between them. */
export async function advance(ms: number): Promise<void> {
  for (let done = 0; done < ms; done += 500) {
    mock.timers.tick(Math.min(500, ms - done))
    for (let i = 0; i < 5; i++) await turn()
  }
}
