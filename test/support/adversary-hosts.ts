// Fake hosts for the adversarial suites, run in a worker thread: a hostile Vault that streams
// gigabytes or trickles bytes must not slow down the test's own event loop, where the victim's
// latency is measured (a hostile Vault is another machine in real life). Every connection and
// request is recorded and reported to the test thread.
//
// This module is both the worker's entry (when loaded as a worker) and the definitions the
// test thread imports (behaviours, the tokens the hostile Vault hands out).
import http from 'node:http'
import https from 'node:https'
import type net from 'node:net'
import { gzipSync } from 'node:zlib'
import { isMainThread, parentPort, workerData } from 'node:worker_threads'

const MiB = 1024 * 1024
const GiB = 1024 * MiB

/** The Vault token the hostile Vault's logins hand out (a long one, in the hvs. format). */
export const HOSTILE_TOKEN = 'hvs.CAESIJx7Qk3mZ9vT2bW8rY4uN6pL1sD5fG0hJ3kA'
/** Short tokens of every Vault format, which the hostile Vault echoes in an error text. */
export const SHORT_TOKENS = ['hvs.Kq3ZbT9xW', 's.Pa55w0rdXy', 'b.ZZ9rT4kLmN', 'r.A1b2C3d4E5']

export type HostKind = 'record' | 'hostile-vault' | 'web'

/** What a web server that is not Vault (an ingress, a default site) answers for a path it does not have. */
export const WEB_NOT_FOUND = '<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>'

function webNotFound(res: http.ServerResponse): void {
  res.writeHead(404, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(WEB_NOT_FOUND) })
  res.end(WEB_NOT_FOUND)
}

/**
 * What a hostile Vault puts in the text a person reads (a FailedMount event, the CLI's terminal):
 * a screen clear, a window title ended by BEL, a C1 CSI, colour, a right-to-left override and a
 * line separator.
 */
export const TERMINAL_CONTROLS = '\u001b[2J\u001b]0;pwned\u0007\u009b31mred\u001b[0m \u202etxt.exe\u2028'

export interface RecordedRequest {
  method: string
  path: string
  /** Lower-case header names. */
  headerNames: string[]
  vaultToken: boolean
  authorization: boolean
  /** A JWT-shaped string anywhere in the headers or the first MiB of the body. */
  jwt: boolean
  bodyBytes: number
}

export interface HostConfig {
  kind: HostKind
  tls?: { cert: string; key: string }
  /** hostile-vault: where its redirects point. */
  redirectTo?: string
  /** hostile-vault: the `version` its sys/health answer states. */
  healthVersion?: string
}

export type HostMessage =
  | { type: 'listening'; port: number }
  | { type: 'connection' }
  | { type: 'request'; request: RecordedRequest }
  | { type: 'synced'; id: number }

const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\./

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text)
}

/** A body of `totalBytes` written as the client reads (backpressure), stopped when it hangs up. */
function streamBody(res: http.ServerResponse, totalBytes: number, chunk: Buffer): void {
  let sent = 0
  const pump = (): void => {
    while (sent < totalBytes) {
      const piece = totalBytes - sent >= chunk.length ? chunk : chunk.subarray(0, totalBytes - sent)
      sent += piece.length
      if (!res.write(piece)) {
        res.once('drain', pump)
        return
      }
    }
    res.end()
  }
  res.on('close', () => {
    sent = totalBytes
  })
  pump()
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void

/**
 * The hostile Vault: the pod picks the behaviour with its auth mount (logins) and secret path
 * (reads, under hostile/<kind>[/<arg>]).
 */
function hostileVault(redirectTo: string, healthVersion: string | undefined): Handler {
  const chunk = Buffer.alloc(MiB, 0x61)
  // 256 MiB of zeros, gzip-compressed to about 256 KiB, sent as Content-Encoding: gzip.
  const gzipBomb = gzipSync(Buffer.alloc(256 * MiB))
  return (req, res, body) => {
    const url = req.url ?? ''
    // Healthy as far as the provider's circuit breaker can tell: the attacks are in the answers.
    if (url.startsWith('/v1/sys/health')) {
      json(res, 200, {
        initialized: true,
        sealed: false,
        standby: false,
        ...(healthVersion === undefined ? {} : { version: healthVersion }),
      })
      return
    }
    const login = /^\/v1\/auth\/([^/]+)\/login/.exec(url)?.[1]
    if (login !== undefined) {
      let role = ''
      try {
        role = String((JSON.parse(body.toString() || '{}') as { role?: unknown }).role ?? '')
      } catch {
        /* not JSON: no role */
      }
      switch (login) {
        case 'redirect':
          res.writeHead(307, { location: `${redirectTo}/v1/auth/jwt/login` }).end()
          return
        case 'standby-loop':
          // A "standby" sending the client to an active node that is itself, forever: same path.
          res.writeHead(307, { location: `http://${req.headers.host ?? ''}${url}` }).end()
          return
        case 'sealed':
          json(res, 503, { errors: ['Vault is sealed'] })
          return
        case 'huge':
          res.writeHead(200, { 'content-type': 'application/json' })
          streamBody(res, 2 * GiB, chunk)
          return
        case 'newlines':
          json(res, 400, { errors: [`role "${'\n '.repeat(1_000_000)}" not found`] })
          return
        default:
          json(res, 200, {
            auth: { client_token: HOSTILE_TOKEN, lease_duration: 3600, renewable: false, metadata: { role } },
          })
          return
      }
    }
    const [kind, arg] = (/^\/v1\/hostile\/([^/?]+)(?:\/([^/?]+))?/.exec(url) ?? []).slice(1)
    switch (kind) {
      case 'redirect':
        res.writeHead(302, { location: `${redirectTo}/v1/secret/data/stolen` }).end()
        return
      case 'sealed':
        json(res, 503, { errors: ['Vault is sealed'] })
        return
      case 'index': {
        // An X-Vault-Index of its own making, in a format OpenBao 2.7 cannot decode: if it ever reached
        // another address's record, that address's strong reads would get 400s.
        const text = JSON.stringify({ data: { password: 'from-the-hostile-vault' } })
        res
          .writeHead(200, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(text),
            'x-vault-index': 'attacker-cluster:1',
          })
          .end(text)
        return
      }
      case 'huge':
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 * GiB })
        streamBody(res, 2 * GiB, chunk)
        return
      case 'huge-chunked':
        res.writeHead(200, { 'content-type': 'application/json' })
        streamBody(res, 2 * GiB, chunk)
        return
      case 'gzip':
        res
          .writeHead(200, {
            'content-type': 'application/json',
            'content-encoding': 'gzip',
            'content-length': gzipBomb.length,
          })
          .end(gzipBomb)
        return
      case 'trickle': {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.write('{"data":{"password":"')
        const timer = setInterval(() => res.write('x'), 100)
        res.on('close', () => clearInterval(timer))
        return
      }
      case 'headers': {
        // 64 headers of 4 KiB: 256 KiB of headers, over Node's 16 KiB header limit.
        const headers: Record<string, string> = {}
        for (let i = 0; i < 64; i++) headers[`x-junk-${i}`] = 'h'.repeat(4096)
        res.writeHead(200, headers).end('{}')
        return
      }
      case 'status':
        json(res, Number(arg), { errors: [`answered ${arg}`] })
        return
      case 'sized':
        // An answer of about `arg` bytes, read in full (under -max-vault-response-size).
        json(res, 200, { data: { v: 'x'.repeat(Number(arg)) } })
        return
      case 'slow': {
        // A good answer after `arg` ms: the Mount stays in flight, holding what it has read so far.
        const timer = setTimeout(() => json(res, 200, { data: { v: 'slow' } }), Number(arg))
        res.on('close', () => clearTimeout(timer))
        return
      }
      case 'controls':
        json(res, 400, { errors: [`denied ${TERMINAL_CONTROLS} denied`] })
        return
      case 'web-404':
        // Logged in, then a 404 that is not Vault's (a path routed to another web server).
        webNotFound(res)
        return
      case 'echo-newlines':
        json(res, 400, { errors: [`${'\n '.repeat(1_000_000)}*`] })
        return
      case 'echo-jwt':
        // "eyJ" again and again, no dot: a JWT pattern tried at every start costs the square.
        json(res, 400, { errors: ['eyJ'.repeat(1_000_000)] })
        return
      case 'echo-tokens':
        // Short Vault tokens, and a run of long ones wherever a cut may fall.
        json(res, 400, {
          errors: [
            `denied for ${SHORT_TOKENS.join(' and ')}`,
            Array.from({ length: 200 }, () => ` ${HOSTILE_TOKEN}`).join(''),
          ],
        })
        return
      default:
        json(res, 404, { errors: [] })
    }
  }
}

function serve(cfg: HostConfig, post: (m: HostMessage) => void): http.Server | https.Server {
  const handler: Handler =
    cfg.kind === 'hostile-vault'
      ? hostileVault(cfg.redirectTo ?? 'http://127.0.0.1:9', cfg.healthVersion)
      : cfg.kind === 'web'
        ? (_req, res) => webNotFound(res)
        : (_req, res) => json(res, 404, { errors: [] })
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = []
    let bytes = 0
    req.on('data', (c: Buffer) => {
      bytes += c.length
      if (bytes <= MiB) chunks.push(c)
    })
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const headerText = JSON.stringify(req.headers)
      post({
        type: 'request',
        request: {
          method: req.method ?? '',
          path: (req.url ?? '').slice(0, 200),
          headerNames: Object.keys(req.headers),
          vaultToken: req.headers['x-vault-token'] !== undefined,
          authorization: req.headers.authorization !== undefined,
          jwt: JWT_SHAPE.test(headerText) || JWT_SHAPE.test(body.toString('latin1')),
          bodyBytes: bytes,
        },
      })
      handler(req, res, body)
    })
  }
  const server: http.Server | https.Server = cfg.tls
    ? https.createServer({ cert: cfg.tls.cert, key: cfg.tls.key }, onRequest)
    : http.createServer(onRequest)
  // The TCP-level event, before any TLS handshake: a refused host must not even see a connection.
  server.on('connection', (s: net.Socket) => {
    post({ type: 'connection' })
    s.on('error', () => undefined)
  })
  server.on('tlsClientError', () => undefined)
  server.listen(0, '127.0.0.1', () => post({ type: 'listening', port: (server.address() as net.AddressInfo).port }))
  return server
}

if (!isMainThread && parentPort !== null && (workerData as { adversaryHost?: HostConfig })?.adversaryHost) {
  const port = parentPort
  serve((workerData as { adversaryHost: HostConfig }).adversaryHost, (m) => port.postMessage(m))
  port.on('message', (m: { type: string; id: number }) => {
    if (m.type === 'sync') port.postMessage({ type: 'synced', id: m.id } satisfies HostMessage)
  })
}
