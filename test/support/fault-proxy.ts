// A TCP proxy between the provider and OpenBao that injects faults: latency on
// every request, connection resets, a blackhole (connections accepted, nothing
// forwarded), and outages (nothing listens: connection refused). OpenBao stays
// real; only the network between the two misbehaves.
import net from 'node:net'

export interface FaultProxyStats {
  connections: number
  /** HTTP request lines seen from the client side (GET/PUT/POST/...). */
  requests: number
  /** Requests per method+path prefix, e.g. "POST /v1/auth/jwt/login". */
  byPath: Map<string, number>
  resets: number
}

export interface FaultProxy {
  port: number
  /** http://127.0.0.1:<port> */
  addr: string
  stats: FaultProxyStats
  /** Delay every chunk from the provider to OpenBao by `ms` (0: none). */
  setLatency(ms: number): void
  /** Reset (RST) the connection instead of forwarding a request, with probability `p`. */
  setResetRate(p: number): void
  /** On: accept connections, forward nothing in either direction, hold them open. Off: forward again. */
  setBlackhole(on: boolean): void
  /** On: stop listening and reset every open connection (connection refused). Off: listen again. */
  setOutage(on: boolean): Promise<void>
  /** Back to a clean network: no latency, resets, blackhole or outage. */
  heal(): Promise<void>
  close(): Promise<void>
}

const REQUEST_LINE = /(?:^|\r\n)(GET|PUT|POST|DELETE|LIST|PATCH|HEAD) (\/[^ ?]*)/g

export async function startFaultProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<FaultProxy> {
  let latencyMs = 0
  let resetRate = 0
  let blackhole = false
  let outage = false
  const stats: FaultProxyStats = { connections: 0, requests: 0, byPath: new Map(), resets: 0 }
  const open = new Set<net.Socket>()
  const held = new Set<net.Socket>()

  const kill = (s: net.Socket): void => {
    if (typeof s.resetAndDestroy === 'function') s.resetAndDestroy()
    else s.destroy()
  }

  const onConnection = (client: net.Socket): void => {
    stats.connections += 1
    open.add(client)
    client.on('close', () => {
      open.delete(client)
      held.delete(client)
    })
    client.on('error', () => undefined)
    if (outage) {
      kill(client)
      return
    }
    const upstream = net.connect({ port: targetPort, host: targetHost })
    open.add(upstream)
    upstream.on('close', () => {
      open.delete(upstream)
      client.destroy()
    })
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())

    // Client -> upstream: counted, delayed, maybe reset, maybe swallowed. Order is kept.
    let chain = Promise.resolve()
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1')
      let n = 0
      for (const m of text.matchAll(REQUEST_LINE)) {
        n += 1
        const key = `${m[1]} ${m[2]}`
        stats.byPath.set(key, (stats.byPath.get(key) ?? 0) + 1)
      }
      stats.requests += n
      if (blackhole) {
        held.add(client)
        return
      }
      if (n > 0 && resetRate > 0 && Math.random() < resetRate) {
        stats.resets += 1
        kill(client)
        upstream.destroy()
        return
      }
      const delay = latencyMs
      chain = chain.then(async () => {
        if (delay > 0) await new Promise((r) => setTimeout(r, delay))
        if (blackhole) return
        if (!upstream.destroyed) upstream.write(chunk)
      })
    })
    // Upstream -> client: swallowed while blackholed.
    upstream.on('data', (chunk: Buffer) => {
      if (blackhole) return
      if (!client.destroyed) client.write(chunk)
    })
  }

  let server = net.createServer(onConnection)
  const listen = (port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen({ port, host: '127.0.0.1' }, () => {
        server.off('error', reject)
        const a = server.address()
        resolve(typeof a === 'object' && a !== null ? a.port : port)
      })
    })
  const port = await listen(0)

  const proxy: FaultProxy = {
    port,
    addr: `http://127.0.0.1:${port}`,
    stats,
    setLatency(ms) {
      latencyMs = ms
    },
    setResetRate(p) {
      resetRate = p
    },
    setBlackhole(on) {
      blackhole = on
      // Connections held during the blackhole are cut when it ends, as a real network
      // path that comes back does not resurrect half-sent requests.
      if (!on) for (const s of held) kill(s)
    },
    async setOutage(on) {
      if (on === outage) return
      outage = on
      if (on) {
        await new Promise<void>((r) => {
          server.close(() => r())
          for (const s of open) kill(s)
        })
      } else {
        server = net.createServer(onConnection)
        // The same port: the provider keeps its configured address.
        for (let i = 0; ; i++) {
          try {
            await listen(port)
            break
          } catch (err) {
            if (i > 50) throw err
            await new Promise((r) => setTimeout(r, 100))
          }
        }
      }
    },
    async heal() {
      latencyMs = 0
      resetRate = 0
      proxy.setBlackhole(false)
      await proxy.setOutage(false)
    },
    async close() {
      for (const s of open) s.destroy()
      await new Promise<void>((r) => (server.listening ? server.close(() => r()) : r()))
    },
  }
  return proxy
}
