// A timing HTTP reverse proxy: sits between a provider and a loopback server
// (OpenBao, or the Kubernetes API server), forwards every request unchanged
// and records when it arrived and when its answer was fully sent back. The
// benchmark uses it to measure time spent inside Vault (or the API server)
// from the outside, the same way for both providers. With `tls`, it terminates
// HTTPS (the in-cluster API server is HTTPS-only for client-go); an https://
// upstream (the real kube-apiserver) is reached over TLS trusting `upstreamCa`.
import http from 'node:http'
import https from 'node:https'
import { performance } from 'node:perf_hooks'

export interface ProxiedCall {
  /** Wall clock (Unix epoch ms, sub-ms precision) when the request arrived at the proxy. */
  startMs: number
  /** When the last byte of the answer was written back. */
  endMs: number
  method: string
  path: string
  status: number
}

export interface TimingProxy {
  url: string
  port: number
  calls: ProxiedCall[]
  close(): Promise<void>
}

export function nowMs(): number {
  return performance.timeOrigin + performance.now()
}

export async function startTimingProxy(
  upstream: string,
  opts: { tls?: { key: string; cert: string }; upstreamCa?: string } = {},
): Promise<TimingProxy> {
  const target = new URL(upstream)
  const secure = target.protocol === 'https:'
  const agent = secure
    ? new https.Agent({ keepAlive: true, maxSockets: 256, ca: opts.upstreamCa })
    : new http.Agent({ keepAlive: true, maxSockets: 256 })
  const calls: ProxiedCall[] = []
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const startMs = nowMs()
    const headers = { ...req.headers, host: target.host }
    const up = (secure ? https : http).request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers)
        upRes.pipe(res)
        res.once('finish', () =>
          calls.push({
            startMs,
            endMs: nowMs(),
            method: req.method ?? '',
            path: (req.url ?? '').split('?')[0] ?? '',
            status: upRes.statusCode ?? 0,
          }),
        )
      },
    )
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' })
      res.end(`bench proxy: ${err.message}`)
    })
    req.pipe(up)
  }
  const server = opts.tls
    ? https.createServer({ key: opts.tls.key, cert: opts.tls.cert }, handler)
    : http.createServer(handler)
  // As Vault (Go's net/http, like the Kubernetes API server): no Keep-Alive hint in answers, and
  // idle connections left open (Vault closes them after 5 minutes, longer than any pause here), so
  // a provider keeps or drops its idle connections by its own client's rules, as in production.
  server.keepAliveTimeout = 0
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const port = (server.address() as { port: number }).port
  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    calls,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
        agent.destroy()
      }),
  }
}

/** Total length of the union of [start, end] intervals clipped to [from, to]. */
export function busyMs(intervals: Array<{ startMs: number; endMs: number }>, from: number, to: number): number {
  const clipped = intervals
    .map((c) => ({ s: Math.max(c.startMs, from), e: Math.min(c.endMs, to) }))
    .filter((c) => c.e > c.s)
    .sort((a, b) => a.s - b.s)
  let total = 0
  let curS = -Infinity
  let curE = -Infinity
  for (const c of clipped) {
    if (c.s > curE) {
      if (curE > curS) total += curE - curS
      curS = c.s
      curE = c.e
    } else if (c.e > curE) {
      curE = c.e
    }
  }
  if (curE > curS) total += curE - curS
  return total
}
