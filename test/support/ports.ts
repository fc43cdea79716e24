// Free loopback TCP ports for servers started by tests.
import { createServer } from 'node:net'

function listenOnce(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.once('error', reject)
    srv.listen({ port, host, exclusive: true }, () => {
      const addr = srv.address()
      const got = typeof addr === 'object' && addr !== null ? addr.port : 0
      srv.close(() => resolve(got))
    })
  })
}

/**
 * A TCP port on `host` (default 127.0.0.1) that was free a moment ago.
 * With `consecutive: n`, the ports port..port+n-1 were all free (OpenBao's dev
 * server also listens on port+1 for its cluster listener).
 */
export async function freePort(opts: { host?: string; consecutive?: number } = {}): Promise<number> {
  const host = opts.host ?? '127.0.0.1'
  const n = Math.max(1, opts.consecutive ?? 1)
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await listenOnce(0, host)
    if (n === 1) return port
    if (port + n - 1 > 65535) continue
    let ok = true
    for (let i = 1; i < n; i++) {
      try {
        await listenOnce(port + i, host)
      } catch {
        ok = false
        break
      }
    }
    if (ok) return port
  }
  throw new Error(`freePort: no run of ${n} free ports found on ${host}`)
}
