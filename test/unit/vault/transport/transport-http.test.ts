// The Vault transport's HTTP rules against local HTTP servers: a real Vault cannot be
// made to redirect, stream an endless body or hang up mid-answer, which is what these cases need.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import type { ProviderError } from '../../../../src/errors.js'
import type { VaultCallEvent } from '../../../../src/observability/vault-observer.js'
import { VaultCallAborted, VaultConnectionError, VaultHttpError } from '../../../../src/vault/transport/call-errors.js'
import {
  MAX_ERROR_BODY_BYTES,
  MAX_TOKEN_ANSWER_BYTES,
  type VaultTransport,
  type VaultCall,
  type VaultTransportOptions,
} from '../../../../src/vault/transport/transport.js'
import { redirectOrigin } from '../../../../src/vault/transport/no-redirects.js'
import { testTransport, testTransportOptions } from '../../../support/transport-options.js'

interface Seen {
  url: string
  headers: http.IncomingHttpHeaders
}

async function server(
  t: Test,
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const s = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers })
    handler(req, res)
  })
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    s.closeAllConnections()
    return new Promise<void>((r) => s.close(() => r()))
  })
  s.unref()
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen }
}

const MAX = 64 * 1024

async function transport(
  t: Test,
  url: string,
  maxResponseBytes = MAX,
  extra: Partial<VaultTransportOptions> = {},
): Promise<(c: Partial<VaultCall> & { path: string }) => ReturnType<VaultTransport['call']>> {
  const tr = await testTransport(
    { address: url, tls: { skipVerify: false } },
    { ...testTransportOptions(maxResponseBytes), ...extra },
  )
  t.teardown(() => tr.close())
  return (c) => tr.call({ tenant: 'test', method: 'GET', timeoutMs: 10_000, ...c })
}

const caught = <T>(p: Promise<unknown>): Promise<T> =>
  p.then(
    () => {
      throw new Error('expected a failure')
    },
    (e: unknown) => e as T,
  )

t.test('JSON answers pass through; non-JSON as text; empty as ""; paths go under /v1/', async (t) => {
  const { url, seen } = await server(t, (req, res) => {
    if (req.url === '/v1/json') res.writeHead(200, { 'content-type': 'application/json' }).end('\uFEFF{"a":1}')
    else if (req.url === '/v1/text') res.writeHead(200).end('oops')
    else res.writeHead(204).end()
  })
  const send = await transport(t, url)
  t.same((await send({ path: 'json' })).body, { a: 1 })
  t.same((await send({ path: 'text' })).body, 'oops')
  t.same((await send({ path: 'none' })).body, '')
  t.same(
    seen.map((s) => s.url),
    ['/v1/json', '/v1/text', '/v1/none'],
  )
})

t.test('token and namespace are sent only when the call names them', async (t) => {
  const { url, seen } = await server(t, (_req, res) => res.writeHead(200).end('{}'))
  const send = await transport(t, url)
  await send({ path: 'a' })
  await send({ path: 'b', token: 'hvs.call-token', namespace: 'team-a' })
  t.equal(seen[0]!.headers['x-vault-token'], undefined)
  t.equal(seen[0]!.headers['x-vault-namespace'], undefined)
  t.equal(seen[1]!.headers['x-vault-token'], 'hvs.call-token')
  t.equal(seen[1]!.headers['x-vault-namespace'], 'team-a')
})

t.test('an error status is a typed VaultHttpError: status, bounded errors[], Retry-After, sealed', async (t) => {
  const { url } = await server(t, (req, res) => {
    if (req.url === '/v1/limited') {
      res.writeHead(429, { 'retry-after': '2' }).end('{"errors":["rate limit quota exceeded"]}')
    } else res.writeHead(503).end('{"errors":["Vault is sealed"]}')
  })
  const send = await transport(t, url)
  const limited = await caught<VaultHttpError>(send({ path: 'limited' }))
  t.ok(limited instanceof VaultHttpError)
  t.equal(limited.status, 429)
  t.same(limited.errors, ['rate limit quota exceeded'])
  t.equal(limited.retryAfterMs, 2000)
  t.equal(limited.sealed, false)
  const sealed = await caught<VaultHttpError>(send({ path: 'sealed' }))
  t.equal(sealed.status, 503)
  t.equal(sealed.sealed, true)
  t.same((await send({ path: 'sealed', anyStatus: true })).status, 503, 'anyStatus answers instead')
})

t.test('a redirect is refused and never followed; the token never reaches the target', async (t) => {
  const target = await server(t, (_req, res) => res.writeHead(200).end('{}'))
  for (const status of [301, 302, 303, 307, 308]) {
    const front = await server(t, (_req, res) =>
      res.writeHead(status, { location: `${target.url}/v1/secret/x?token=abc` }).end(),
    )
    const send = await transport(t, front.url)
    const err = await caught<ProviderError>(
      send({ path: 'auth/jwt/login', method: 'POST', token: 'hvs.secret-token-value', body: { jwt: 'x', role: 'r' } }),
    )
    t.equal(err.code, 'VAULT_REDIRECT_REFUSED', `${status}`)
    t.match(err.message, new RegExp(`answered ${status} with a redirect to "${target.url}"; nothing was sent there`))
    t.notMatch(err.message, /token=abc|\/v1\/secret/, 'only the origin is shown')
  }
  t.equal(target.seen.length, 0, 'nothing was sent to the redirect target')
})

t.test('redirect origins are bounded and never carry path, query or credentials', async (t) => {
  t.equal(redirectOrigin('https://user:pw@vault.example/v1/x?y=1', 'http://a'), '"https://vault.example:443"')
  t.equal(redirectOrigin('/v1/other', 'http://127.0.0.1:8200/v1/x'), '"http://127.0.0.1:8200"')
  t.equal(redirectOrigin(undefined, 'http://a'), 'no Location')
  t.equal(redirectOrigin('http://[::1', 'http://a'), 'an unreadable Location')
  t.ok(redirectOrigin(`http://${'a'.repeat(300)}.example`, 'http://a').length <= 204)
})

t.test('bodies over -max-vault-response-size: refused by Content-Length, or cut while streaming', async (t) => {
  let streamed = 0
  let streamClosed: Promise<void> = Promise.resolve()
  const { url } = await server(t, (req, res) => {
    if (req.url === '/v1/declared') {
      res.writeHead(200, { 'content-length': String(MAX * 100) })
      res.write('x'.repeat(1024))
      return
    }
    // Chunked, endless: only a cut stream stops it.
    streamClosed = new Promise((r) => res.on('close', () => r()))
    res.writeHead(200, { 'content-type': 'application/json' })
    const chunk = Buffer.alloc(16 * 1024, 'x')
    const pump = (): void => {
      while (!res.destroyed && res.write(chunk)) streamed += chunk.length
      if (!res.destroyed) res.once('drain', pump)
    }
    pump()
  })
  const send = await transport(t, url)
  const declared = await caught<ProviderError>(send({ path: 'declared' }))
  t.equal(declared.code, 'VAULT_RESPONSE_TOO_LARGE')
  t.match(declared.message, /larger than 65536 bytes \(-max-vault-response-size\)/)
  const endless = await caught<ProviderError>(send({ path: 'endless' }))
  t.equal(endless.code, 'VAULT_RESPONSE_TOO_LARGE')
  await streamClosed
  t.ok(streamed < 64 * MAX, `the stream was cut and the connection closed (${streamed} bytes written)`)
})

t.test(
  'an error answer is read only up to MAX_ERROR_BODY_BYTES, whatever -max-vault-response-size allows',
  async (t) => {
    const TOTAL = 64 * 1024 * 1024
    let written = 0
    let closed: Promise<void> = Promise.resolve()
    const { url } = await server(t, (req, res) => {
      if (req.url === '/v1/short') {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"errors":["role not found"]}')
        return
      }
      // Megabytes of error text, declared or streamed: only the status matters past the cap.
      closed = new Promise((r) => res.on('close', () => r()))
      res.writeHead(400, req.url === '/v1/declared' ? { 'content-length': String(TOTAL) } : {})
      const chunk = Buffer.alloc(16 * 1024, '\n')
      const pump = (): void => {
        while (!res.destroyed && written < TOTAL) {
          written += chunk.length
          if (!res.write(chunk)) break
        }
        if (!res.destroyed && written < TOTAL) res.once('drain', pump)
      }
      pump()
    })
    const send = await transport(t, url, 128 * 1024 * 1024)
    t.same((await caught<VaultHttpError>(send({ path: 'short', method: 'POST' }))).errors, ['role not found'])
    for (const path of ['declared', 'streamed']) {
      written = 0
      const answer = await send({ path, method: 'POST', anyStatus: true })
      t.equal(answer.status, 400, path)
      t.same(answer.body, {
        errors: [`(Vault's error text is longer than ${MAX_ERROR_BODY_BYTES} bytes and was not read)`],
      })
      await closed
      t.ok(written < TOTAL / 2, `${path}: the connection was cut after ${written} of ${TOTAL} bytes`)
    }
  },
)

t.test('a call may ask for a tighter cap (token answers): the smaller of the two applies', async (t) => {
  const { url } = await server(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(`{"auth":{"pad":"${'x'.repeat(100 * 1024)}"}}`)
  })
  const send = await transport(t, url, 4 * 1024 * 1024)
  t.equal((await send({ path: 'secret' })).status, 200, 'a secret of 100 KiB is read')
  const login = await caught<ProviderError>(
    send({ path: 'auth/jwt/login', method: 'POST', maxResponseBytes: MAX_TOKEN_ANSWER_BYTES }),
  )
  t.equal(login.code, 'VAULT_RESPONSE_TOO_LARGE')
  t.match(login.message, /larger than 65536 bytes, the most a token answer \(login, renewal\) may be/)
  const small = await transport(t, url, 1024)
  const capped = await caught<ProviderError>(small({ path: 'x', maxResponseBytes: MAX_TOKEN_ANSWER_BYTES }))
  t.match(capped.message, /larger than 1024 bytes \(-max-vault-response-size\)/, 'the flag stays the upper bound')
})

t.test('the whole call is bounded by its time limit: a typed timeout', async (t) => {
  const { url } = await server(t, () => undefined)
  const send = await transport(t, url)
  const err = await caught<VaultConnectionError>(send({ path: 'silent', timeoutMs: 50 }))
  t.ok(err instanceof VaultConnectionError)
  t.equal(err.kind, 'timeout')
  t.equal(err.message, 'no answer within 50 ms')
})

t.test("the caller's signal ends the call at once, and a call whose caller left is never sent", async (t) => {
  let arrived!: () => void
  const reached = new Promise<void>((r) => (arrived = r))
  const { url, seen } = await server(t, () => arrived())
  const send = await transport(t, url)
  const controller = new AbortController()
  const pending = caught<VaultCallAborted>(send({ path: 'slow', signal: controller.signal }))
  await reached
  controller.abort()
  t.ok((await pending) instanceof VaultCallAborted)
  const before = seen.length
  const gone = await caught<VaultCallAborted>(send({ path: 'never', signal: controller.signal }))
  t.ok(gone instanceof VaultCallAborted)
  t.equal(seen.length, before, 'nothing was sent')
})

t.test('a peer that hangs up mid-answer is a truncated answer; before answering, a reset', async (t) => {
  const { url } = await server(t, (req, res) => {
    if (req.url === '/v1/cut') {
      res.writeHead(200, { 'content-length': '100' })
      res.write('{"a":', () => req.socket.destroy())
    } else req.socket.destroy()
  })
  const send = await transport(t, url)
  const cut = await caught<VaultConnectionError>(send({ path: 'cut' }))
  t.equal(cut.kind, 'truncated')
  const reset = await caught<VaultConnectionError>(send({ path: 'reset' }))
  t.equal(reset.kind, 'reset')
  t.equal(reset.code, 'ECONNRESET')
  const refused = await transport(t, 'http://127.0.0.1:1')
  const nothing = await caught<VaultConnectionError>(refused({ path: 'x' }))
  t.equal(nothing.kind, 'refused')
  t.equal(nothing.code, 'ECONNREFUSED')
})

t.test('every call is reported to the observer, with its operation and status', async (t) => {
  const { url } = await server(t, (req, res) => {
    if (req.url?.startsWith('/v1/auth/')) res.writeHead(200).end('{"auth":{}}')
    else res.writeHead(403).end('{"errors":["permission denied"]}')
  })
  const events: VaultCallEvent[] = []
  const send = await transport(t, url, MAX, { observer: { vaultCall: (e) => events.push(e) } })
  await send({ path: 'auth/jwt/login', method: 'POST' })
  await send({ path: 'secret/data/x?version=2' }).catch(() => undefined)
  await send({ path: 'auth/token/renew-self', method: 'POST', operation: 'renew' })
  t.same(
    events.map((e) => [e.operation, e.ok, e.status, e.description]),
    [
      ['login', true, undefined, 'POST auth/jwt/login'],
      ['read', false, 403, 'GET secret/data/x?version=2'],
      ['renew', true, undefined, 'POST auth/token/renew-self'],
    ],
  )
  const throwing = await transport(t, url, MAX, {
    observer: {
      vaultCall: () => {
        throw new Error('broken metrics')
      },
    },
  })
  t.equal(
    (await throwing({ path: 'auth/jwt/login', method: 'POST' })).status,
    200,
    'a failing observer never fails a call',
  )
})

t.test('only 200 and 204 are answers to use: another 2xx is a typed error', async (t) => {
  const { url } = await server(t, (_req, res) => res.writeHead(206).end('{"data":{}}'))
  const send = await transport(t, url)
  const err = await caught<VaultHttpError>(send({ path: 'partial' }))
  t.ok(err instanceof VaultHttpError)
  t.equal(err.status, 206)
})

t.test('unix:// addresses (a Vault Agent socket) go over the socket', async (t) => {
  const { tempDirFor } = await import('../../../support/tmp.js')
  const dir = await tempDirFor(t)
  const socketPath = `${dir}/agent.sock`
  const seen: string[] = []
  const s = http.createServer((req, res) => {
    seen.push(req.url ?? '')
    res.end('{"ok":true}')
  })
  await new Promise<void>((r) => s.listen(socketPath, () => r()))
  t.teardown(() => {
    s.closeAllConnections()
    return new Promise<void>((r) => s.close(() => r()))
  })
  const send = await transport(t, `unix://${socketPath}`)
  t.same((await send({ path: 'secret/data/app' })).body, { ok: true })
  t.same(seen, ['/v1/secret/data/app'])
  const missing = await transport(t, `unix://${dir}/nothing.sock`)
  const err = await caught<VaultConnectionError>(missing({ path: 'x' }))
  t.equal(err.kind, 'refused', 'no Agent listening')
  t.equal(err.code, 'ENOENT')
})

t.test("consistency headers: learned from the transport's own answers, never from another address's", async (t) => {
  const cluster = 'fb4a823f-eed0-c44b-2108-b3412795e590'
  const index = (value: string, id = cluster): string =>
    Buffer.from(JSON.stringify({ cluster: id, value })).toString('base64')
  const vault = await server(t, (_req, res) => res.writeHead(200, { 'x-vault-index': index('50') }).end('{}'))
  const hostile = await server(t, (_req, res) =>
    res.writeHead(200, { 'x-vault-index': index('1', 'attacker-cluster') }).end('{}'),
  )
  const send = await transport(t, vault.url)
  const sendHostile = await transport(t, hostile.url)
  await sendHostile({ path: 'x', consistency: { mode: 'strong' } })
  await sendHostile({ path: 'x', consistency: { mode: 'strong' } })
  const told: string[] = []
  await send({ path: 'auth/jwt/login', method: 'POST', consistency: { onIndex: (i) => told.push(i) } })
  t.same(told, [index('50')], "the answer's index is told to the caller (read-your-writes)")
  await send({ path: 'secret/data/a', consistency: { mode: 'strong' } })
  await send({ path: 'secret/data/a', consistency: { mode: 'eventual' } })
  await send({ path: 'secret/data/a', consistency: { mode: 'eventual', after: index('50') } })
  const headers = vault.seen.map((s) => [s.headers['x-vault-index'], s.headers['x-vault-inconsistent']])
  t.same(headers[0], [undefined, undefined], 'the login states nothing')
  t.same(
    headers[1],
    [index('9223372036854775807'), 'forward-active-node'],
    "strong: an index of this address's own cluster that no node has reached",
  )
  t.same(headers[2], [undefined, undefined], 'eventual: nothing')
  t.same(headers[3], [index('50'), 'forward-active-node'], "eventual after the identity's own write: its index")
  t.same(hostile.seen[0]!.headers['x-vault-index'], undefined, 'nothing before its own first answer')
  t.same(
    JSON.parse(Buffer.from(String(hostile.seen[1]!.headers['x-vault-index']), 'base64').toString()),
    { cluster: 'attacker-cluster', value: '9223372036854775807' },
    'a tenant-chosen address gets back only its own format',
  )
})
