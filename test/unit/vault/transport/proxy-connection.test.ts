// The connection through an egress proxy (proxy-connection.ts) against proxies of the test's own:
// a real proxy cannot be made to drop a CONNECT, answer garbage, add bytes after its answer or
// present its own certificate, which is what these cases need. test/integration/proxy.test.ts runs
// the same code against Debian's tinyproxy and a real OpenBao.
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import net, { type AddressInfo } from 'node:net'
import tls from 'node:tls'
import t, { type Test } from 'tap'
import { ProviderError } from '../../../../src/errors.js'
import { describeFailure } from '../../../../src/vault/failure-to-error.js'
import { VaultConnectionError, VaultHttpError } from '../../../../src/vault/transport/call-errors.js'
import { readProxySettings } from '../../../../src/vault/transport/proxy.js'
import { ProxyConnectionError, codeAtProxy } from '../../../../src/vault/transport/proxy-connection.js'
import type { VaultTransport, VaultTransportOptions } from '../../../../src/vault/transport/transport.js'
import { testTransport, testTransportOptions } from '../../../support/transport-options.js'
import { selfSignedServerCert } from '../../../support/tls.js'
import { tempDirFor } from '../../../support/tmp.js'
import { PACKAGE_ROOT } from '../../../../src/package-info.js'
import { join } from 'node:path'

/** One Vault call through the proxy of VAULT_PROXY_ADDR, in a process of its own (test/support/https-proxy-call.ts). */
const HTTPS_PROXY_CALL = join(PACKAGE_ROOT, 'test', 'support', 'https-proxy-call.ts')

type Behaviour = 'tunnel' | 'mitm' | 'close' | 'silent' | 'garbage' | 'extra' | 'forward' | number

interface TestProxy {
  url: string
  port: number
  /** Request heads (request line and headers) as received. */
  heads: string[]
  connections: number
  /** Bytes the client sent through tunnels, after its CONNECT. */
  tunnelled(): Buffer
  /** Whether the man in the middle ever read a byte of plaintext. */
  mitmReadPlaintext: boolean
}

function listen(t: Test, server: net.Server): Promise<number> {
  const sockets = new Set<net.Socket>()
  server.on('connection', (s: net.Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((r) => server.close(() => r()))
  })
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)))
}

/** A proxy that behaves as told: relays (CONNECT or absolute form), or fails in one of the ways real ones do. */
async function testProxy(
  t: Test,
  behaviour: Behaviour,
  mitmCert?: { key: string; cert: string },
  /** Serve the proxy itself over TLS (an https:// proxy) with this certificate. */
  proxyCert?: { key: string; cert: string },
): Promise<TestProxy> {
  const heads: string[] = []
  const chunks: Buffer[] = []
  const state = { connections: 0, mitmReadPlaintext: false }
  const onConnection = (socket: net.Socket): void => {
    state.connections += 1
    let received = Buffer.alloc(0)
    const onData = (chunk: Buffer): void => {
      received = Buffer.concat([received, chunk])
      const end = received.indexOf('\r\n\r\n')
      if (end === -1) return
      socket.removeListener('data', onData)
      const head = received.subarray(0, end).toString('latin1')
      const rest = received.subarray(end + 4)
      heads.push(head)
      const [method, target] = head.split(' ')
      switch (behaviour) {
        case 'tunnel': {
          const [host, port] = [target!.slice(0, target!.lastIndexOf(':')), Number(target!.split(':').pop())]
          const upstream = net.connect({ host, port }, () => {
            socket.write('HTTP/1.1 200 Connection established\r\n\r\n')
            if (rest.length > 0) upstream.write(rest)
            socket.on('data', (c: Buffer) => {
              chunks.push(c)
              upstream.write(c)
            })
            upstream.pipe(socket)
          })
          upstream.on('error', () => socket.destroy())
          socket.on('error', () => upstream.destroy())
          return
        }
        case 'mitm': {
          socket.write('HTTP/1.1 200 Connection established\r\n\r\n')
          const fake = new tls.TLSSocket(socket, {
            isServer: true,
            key: readFileSync(mitmCert!.key),
            cert: readFileSync(mitmCert!.cert),
          })
          fake.on('data', () => (state.mitmReadPlaintext = true))
          fake.on('error', () => socket.destroy())
          return
        }
        case 'forward': {
          const url = new URL(target!)
          const headers = Object.fromEntries(
            head
              .split('\r\n')
              .slice(1)
              .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
          )
          delete headers['proxy-authorization']
          const req = http.request(url, { method, headers }, (res) => {
            const body: Buffer[] = []
            res.on('data', (c: Buffer) => body.push(c))
            res.on('end', () => {
              const all = Buffer.concat(body)
              const type = String(res.headers['content-type'] ?? 'text/plain')
              socket.end(
                `HTTP/1.1 ${res.statusCode} ${res.statusMessage}\r\ncontent-type: ${type}\r\n` +
                  `content-length: ${all.length}\r\nconnection: close\r\n\r\n${all.toString('latin1')}`,
              )
            })
          })
          req.on('error', () => socket.end('HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\n\r\n'))
          req.end(rest)
          return
        }
        case 'close':
          socket.destroy()
          return
        case 'silent':
          return
        case 'garbage':
          socket.write('SSH-2.0-OpenSSH_9.2\r\n\r\n')
          return
        case 'extra':
          socket.write('HTTP/1.1 200 Connection established\r\n\r\nhello')
          return
        default:
          socket.write(
            `HTTP/1.1 ${behaviour} From The Proxy\r\ncontent-type: text/html\r\ncontent-length: 6\r\n\r\n<html>`,
          )
      }
    }
    socket.on('data', onData)
    socket.on('error', () => undefined)
  }
  const server = proxyCert
    ? tls.createServer({ key: readFileSync(proxyCert.key), cert: readFileSync(proxyCert.cert) }, onConnection)
    : net.createServer(onConnection)
  const port = await listen(t, server)
  return {
    url: `${proxyCert ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    heads,
    get connections() {
      return state.connections
    },
    get mitmReadPlaintext() {
      return state.mitmReadPlaintext
    },
    tunnelled: () => Buffer.concat(chunks),
  }
}

interface Seen {
  url: string
  headers: http.IncomingHttpHeaders
}

/** A Vault stand-in over HTTPS (certificate for 127.0.0.1) or HTTP. */
async function vault(
  t: Test,
  scheme: 'https' | 'http',
  dir: string,
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_q, r) =>
    r.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{"v":1}}'),
): Promise<{ address: string; cert: string; seen: Seen[] }> {
  const pem = selfSignedServerCert(dir, 'vault-test', 'vault')
  const seen: Seen[] = []
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    seen.push({ url: req.url ?? '', headers: req.headers })
    handler(req, res)
  }
  const server =
    scheme === 'https'
      ? https.createServer({ key: readFileSync(pem.key), cert: readFileSync(pem.cert) }, onRequest)
      : http.createServer(onRequest)
  const port = await listen(t, server)
  return { address: `${scheme}://127.0.0.1:${port}`, cert: pem.cert, seen }
}

async function transport(
  t: Test,
  address: string,
  env: Record<string, string>,
  tlsOpts: { caCertPath?: string } = {},
  extra: Partial<VaultTransportOptions> = {},
): Promise<VaultTransport> {
  const tr = await testTransport(
    { address, tls: { skipVerify: false, ...tlsOpts } },
    { ...testTransportOptions(64 * 1024), proxy: readProxySettings(env), ...extra },
  )
  t.teardown(() => tr.close())
  return tr
}

const failure = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => {
      throw new Error('expected a failure')
    },
    (e: unknown) => e,
  )

const TOKEN = 'hvs.tunnel-token-0123456789abcdef'

/** A request head as its request line and Host header (header names are case-insensitive). */
function lineAndHost(head: string): [string, string | undefined] {
  const [line, ...headers] = head.split('\r\n')
  const host = headers.find((h) => h.toLowerCase().startsWith('host:'))
  return [line!, host?.slice('host:'.length).trim()]
}

t.test(
  'https:// Vault: a CONNECT tunnel, TLS with Vault end to end; the proxy relays what it cannot read',
  async (t) => {
    const dir = await tempDirFor(t)
    const v = await vault(t, 'https', dir)
    const proxy = await testProxy(t, 'tunnel')
    const tr = await transport(t, v.address, { VAULT_PROXY_ADDR: proxy.url }, { caCertPath: v.cert })
    const answer = await tr.call({ tenant: 'test', method: 'GET', path: 'secret/x', token: TOKEN, timeoutMs: 5000 })
    t.same(answer.body, { data: { v: 1 } })
    const target = v.address.slice('https://'.length)
    t.same(proxy.heads.map(lineAndHost), [[`CONNECT ${target} HTTP/1.1`, target]], 'one CONNECT')
    t.notMatch(proxy.heads[0], /proxy-authorization/i, 'no credentials to send')
    t.equal(v.seen[0]!.headers['x-vault-token'], TOKEN, 'Vault got the token')
    const bytes = proxy.tunnelled()
    t.equal(bytes[0], 0x16, 'the tunnel starts with a TLS handshake')
    t.notOk(bytes.includes(TOKEN) || bytes.includes('/v1/secret'), 'the proxy never saw the request in the clear')
  },
)

t.test('proxy credentials go in Proxy-Authorization of the CONNECT, never to Vault', async (t) => {
  const dir = await tempDirFor(t)
  const v = await vault(t, 'https', dir)
  const proxy = await testProxy(t, 'tunnel')
  const tr = await transport(
    t,
    v.address,
    { VAULT_PROXY_ADDR: `http://al%40ice:s3cr%3At@127.0.0.1:${proxy.port}` },
    {
      caCertPath: v.cert,
    },
  )
  await tr.call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 })
  t.match(proxy.heads[0], `\r\nproxy-authorization: Basic ${Buffer.from('al@ice:s3cr:t').toString('base64')}`)
  t.equal(v.seen[0]!.headers['proxy-authorization'], undefined)
})

t.test('a proxy presenting its own certificate is refused: the provider verifies Vault, not the proxy', async (t) => {
  const dir = await tempDirFor(t)
  const v = await vault(t, 'https', dir)
  const proxy = await testProxy(t, 'mitm', selfSignedServerCert(dir, 'not-vault', 'mitm'))
  const tr = await transport(t, v.address, { BAO_PROXY_ADDR: proxy.url }, { caCertPath: v.cert })
  const err = (await failure(
    tr.call({ tenant: 'test', method: 'GET', path: 'x', token: TOKEN, timeoutMs: 5000 }),
  )) as ProxyConnectionError
  t.ok(err instanceof ProxyConnectionError)
  t.equal(err.kind, 'tls', 'a TLS failure, as a direct one would be')
  t.equal(err.atProxy, false)
  t.match(err.code, /SELF_SIGNED|UNABLE_TO_VERIFY|CERT/)
  t.match(
    describeFailure(err).detail,
    `set vaultCACertPath (${err.code}) (Vault at ${v.address}, through the proxy ${proxy.url} from BAO_PROXY_ADDR)`,
  )
  t.notOk(proxy.mitmReadPlaintext, 'the proxy read nothing')
  t.equal(v.seen.length, 0)
})

t.test('failures at the proxy: typed, naming the proxy and Vault, with what to do', async (t) => {
  const dir = await tempDirFor(t)
  const v = await vault(t, 'https', dir)
  const closedPort = await (async () => {
    const s = net.createServer()
    const p = await new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as AddressInfo).port)))
    await new Promise<void>((r) => s.close(() => r()))
    return p
  })()
  const target = v.address.slice('https://'.length)
  const cases: Array<[string, Behaviour | 'down', string, string, string]> = [
    // [what, the proxy, kind, code, reason]
    [
      'down',
      'down',
      'refused',
      'ECONNREFUSED',
      'the proxy refused the connection (ECONNREFUSED): check that it listens at http://127.0.0.1:PORT',
    ],
    ['hangs up', 'close', 'reset', 'CLOSED', `the proxy closed the connection before answering CONNECT ${target}`],
    ['not HTTP', 'garbage', 'other', 'BAD_ANSWER', `the proxy's answer to CONNECT ${target} is not HTTP`],
    [
      'bytes after its answer',
      'extra',
      'other',
      'BAD_ANSWER',
      `the proxy sent data after its answer to CONNECT ${target}, before Vault's TLS handshake`,
    ],
    [
      'refuses the credentials',
      407,
      'other',
      '407',
      'the proxy refused the user and password in HTTPS_PROXY (407 Proxy Authentication Required)',
    ],
    [
      'refuses the tunnel',
      403,
      'other',
      '403',
      `the proxy refused to connect to ${target} (403 Forbidden): allow it in the proxy (CONNECT to port ${target.split(':')[1]}), or list the Vault host in NO_PROXY`,
    ],
    ['cannot reach Vault', 502, 'unreachable', '502', `the proxy could not reach Vault at ${target} (502 Bad Gateway)`],
  ]
  for (const [what, behaviour, kind, code, reason] of cases) {
    const port = behaviour === 'down' ? closedPort : (await testProxy(t, behaviour)).port
    // HTTPS_PROXY is never used for loopback: the settings come from a stand-in address, the
    // transport for the real one is built with VAULT_PROXY_ADDR's rules but the HTTPS_PROXY name.
    const settings = readProxySettings({ HTTPS_PROXY: `http://user:pw@127.0.0.1:${port}` })
    const tr = await transport(
      t,
      v.address,
      {},
      { caCertPath: v.cert },
      {
        proxy: { ...settings, vaultApi: { variable: 'HTTPS_PROXY', endpoint: settings.https!.endpoint } },
      },
    )
    const err = (await failure(
      tr.call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 }),
    )) as ProxyConnectionError
    t.ok(err instanceof ProxyConnectionError && err.atProxy, `${what}: a failure at the proxy`)
    t.equal(err.kind, kind, `${what}: kind`)
    t.equal(err.code, code, `${what}: code`)
    t.equal(err.proxy, `http://127.0.0.1:${port}`, `${what}: the proxy, as messages show it`)
    t.equal(codeAtProxy(err.code, err.proxy), `PROXY_${code}@127.0.0.1:${port}`, `${what}: as the breaker names it`)
    const detail = describeFailure(err).detail
    t.equal(
      detail,
      `cannot reach Vault at ${v.address} through the proxy http://127.0.0.1:${port} (HTTPS_PROXY): ${reason.replace('PORT', String(port))}`,
      `${what}: message`,
    )
    t.notMatch(detail, /user:pw|pw@/, `${what}: no credentials`)
  }
  t.equal(v.seen.length, 0, 'Vault saw nothing')
})

t.test(
  'a proxy that never answers: the call ends at its own time limit, saying it went through the proxy',
  async (t) => {
    const dir = await tempDirFor(t)
    const v = await vault(t, 'https', dir)
    const proxy = await testProxy(t, 'silent')
    const tr = await transport(t, v.address, { VAULT_PROXY_ADDR: proxy.url }, { caCertPath: v.cert })
    const err = (await failure(
      tr.call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 300 }),
    )) as ProxyConnectionError
    t.ok(err instanceof ProxyConnectionError)
    t.equal(err.kind, 'timeout')
    t.equal(
      describeFailure(err).detail,
      `no answer in time (Vault at ${v.address}, through the proxy ${proxy.url} from VAULT_PROXY_ADDR)`,
    )
  },
)

t.test('http:// Vault: absolute-form requests to the proxy, as Go sends them', async (t) => {
  const dir = await tempDirFor(t)
  const v = await vault(t, 'http', dir, (req, res) => {
    if (req.url === '/v1/sys/sealed')
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"errors":["Vault is sealed"]}')
    else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
  })
  const proxy = await testProxy(t, 'forward')
  const tr = await transport(t, v.address, { VAULT_HTTP_PROXY: `http://app:pw@127.0.0.1:${proxy.port}` })
  t.same((await tr.call({ tenant: 'test', method: 'GET', path: 'secret/x', token: TOKEN, timeoutMs: 5000 })).body, {
    ok: true,
  })
  const host = v.address.slice('http://'.length)
  t.match(proxy.heads[0], `GET ${v.address}/v1/secret/x HTTP/1.1\r\n`)
  t.match(proxy.heads[0], `\r\nhost: ${host}`)
  t.match(proxy.heads[0], `\r\nproxy-authorization: Basic ${Buffer.from('app:pw').toString('base64')}`)
  t.equal(v.seen[0]!.url, '/v1/secret/x', 'Vault got the request')
  const sealed = (await failure(
    tr.call({ tenant: 'test', method: 'GET', path: 'sys/sealed', timeoutMs: 5000 }),
  )) as VaultHttpError
  t.ok(sealed instanceof VaultHttpError && sealed.sealed, "Vault's own error answer stays Vault's")
})

t.test("http:// Vault: the proxy's own error answers are proxy failures", async (t) => {
  const dir = await tempDirFor(t)
  const v = await vault(t, 'http', dir)
  for (const [status, kind] of [
    [407, 'other'],
    [403, 'other'],
    [503, 'unreachable'],
  ] as const) {
    const proxy = await testProxy(t, status)
    const tr = await transport(t, v.address, { VAULT_PROXY_ADDR: proxy.url })
    const err = (await failure(
      tr.call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 }),
    )) as ProxyConnectionError
    t.ok(err instanceof ProxyConnectionError && err.atProxy, `${status}: the proxy's`)
    t.equal(err.kind, kind)
    t.equal(err.code, String(status))
    t.equal(err.proxy, proxy.url)
    t.match(describeFailure(err).detail, `through the proxy ${proxy.url} (VAULT_PROXY_ADDR): the proxy `)
  }
  const asks = await testProxy(t, 407)
  const tr = await transport(t, v.address, { VAULT_PROXY_ADDR: asks.url })
  t.match(
    describeFailure(await failure(tr.call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 }))).detail,
    'the proxy asks for credentials (407 Proxy Authentication Required): put them in VAULT_PROXY_ADDR as http://user:password@host:port',
  )
  t.equal(v.seen.length, 0)
})

t.test('the guard runs first: an address the allow-list refuses never reaches the proxy', async (t) => {
  const dir = await tempDirFor(t)
  const v = await vault(t, 'https', dir)
  for (const behaviour of ['tunnel', 'forward'] as const) {
    const proxy = await testProxy(t, behaviour)
    const address = behaviour === 'tunnel' ? v.address : v.address.replace('https:', 'http:')
    const tr = await transport(t, address, { VAULT_PROXY_ADDR: proxy.url }, {}, { allowlist: { allows: () => false } })
    const err = (await failure(
      tr.call({ tenant: 'test', method: 'GET', path: 'x', token: TOKEN, timeoutMs: 5000 }),
    )) as ProviderError
    t.ok(err instanceof ProviderError)
    t.equal(err.code, 'VAULT_ADDRESS_NOT_ALLOWED')
    t.equal(proxy.connections, 0, `${behaviour}: the proxy saw no connection`)
  }
})

t.test("an https:// proxy is a TLS connection, verified with the system's CAs", async (t) => {
  const dir = await tempDirFor(t)
  const v = await vault(t, 'https', dir)
  const pem = selfSignedServerCert(dir, 'proxy', 'proxy')
  const server = tls.createServer({ key: readFileSync(pem.key), cert: readFileSync(pem.cert) }, (s) => s.destroy())
  const port = await listen(t, server)
  const tr = await transport(t, v.address, { VAULT_PROXY_ADDR: `https://127.0.0.1:${port}` }, { caCertPath: v.cert })
  const err = (await failure(
    tr.call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 }),
  )) as VaultConnectionError
  t.ok(err instanceof ProxyConnectionError && err.atProxy)
  t.equal(err.kind, 'tls')
  t.match(
    describeFailure(err).detail,
    /the TLS handshake with the https:\/\/ proxy failed \(.*\): .*NODE_EXTRA_CA_CERTS/,
  )
})

t.test("Go's CGI rule: HTTP_PROXY is refused for http:// Vault while REQUEST_METHOD is set", async (t) => {
  const err = (await failure(
    testTransport(
      { address: 'http://vault.example:8200', tls: { skipVerify: false } },
      {
        ...testTransportOptions(1024),
        proxy: readProxySettings({ HTTP_PROXY: 'http://p:3128', REQUEST_METHOD: 'GET' }),
      },
    ),
  )) as ProviderError
  t.equal(err.code, 'VAULT_UNAVAILABLE')
  t.match(err.message, /^Vault at "http:\/\/vault\.example:8200": HTTP_PROXY is not used while REQUEST_METHOD is set/)
})

t.test(
  'an https:// proxy: TLS to the proxy, and inside it TLS to Vault (a process trusting the proxy’s CA)',
  async (t) => {
    const dir = await tempDirFor(t)
    const v = await vault(t, 'https', dir)
    const proxyPem = selfSignedServerCert(dir, 'proxy', 'proxy')
    const proxy = await testProxy(t, 'tunnel', undefined, proxyPem)
    // Node reads NODE_EXTRA_CA_CERTS at start only: the call runs in a process of its own.
    const out = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        [...process.execArgv, HTTPS_PROXY_CALL, v.address, v.cert],
        { env: { ...process.env, NODE_EXTRA_CA_CERTS: proxyPem.cert, VAULT_PROXY_ADDR: proxy.url }, timeout: 30_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout)),
      )
    })
    t.same(JSON.parse(out.trim().split('\n').pop()!), { data: { v: 1 } })
    const target = v.address.slice('https://'.length)
    t.same(proxy.heads.map(lineAndHost), [[`CONNECT ${target} HTTP/1.1`, target]])
    t.equal(proxy.tunnelled()[0], 0x16, 'inside the proxy’s TLS, a TLS handshake with Vault')
  },
)
