// What a Kubernetes Service in front of a Vault cluster looks like to a client: one address, each new
// TCP connection to the next node in turn (kube-proxy's round robin), and a node that refuses
// connections skipped (the endpoints controller removes a pod whose container is gone). A node that
// accepts connections stays in, sealed or not: openbao-helm publishes not-ready addresses.
import net from 'node:net'

export interface RoundRobinProxy {
  port: number
  /** http://127.0.0.1:<port> */
  addr: string
  /** Connections handed to each target port. */
  connections: Map<number, number>
  close(): Promise<void>
}

export async function startRoundRobinProxy(targetPorts: readonly number[]): Promise<RoundRobinProxy> {
  let next = 0
  const open = new Set<net.Socket>()
  const connections = new Map<number, number>(targetPorts.map((p) => [p, 0]))

  const connect = (client: net.Socket, tried: number): void => {
    if (tried >= targetPorts.length) {
      client.destroy()
      return
    }
    const port = targetPorts[next++ % targetPorts.length]!
    const upstream = net.connect({ port, host: '127.0.0.1' })
    open.add(upstream)
    let connected = false
    upstream.once('connect', () => {
      connected = true
      connections.set(port, (connections.get(port) ?? 0) + 1)
      client.pipe(upstream)
      upstream.pipe(client)
      client.resume()
    })
    upstream.on('error', () => {
      if (!connected) connect(client, tried + 1)
      else client.destroy()
    })
    upstream.on('close', () => {
      open.delete(upstream)
      if (connected) client.destroy()
    })
    client.on('close', () => upstream.destroy())
  }

  const server = net.createServer((client) => {
    open.add(client)
    client.pause()
    client.on('error', () => undefined)
    client.on('close', () => open.delete(client))
    connect(client, 0)
  })
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject)
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      const a = server.address()
      resolve(typeof a === 'object' && a !== null ? a.port : 0)
    })
  })
  return {
    port,
    addr: `http://127.0.0.1:${port}`,
    connections,
    async close() {
      for (const s of open) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
