// The HTTP layer under node-vault against local HTTP servers: a real Vault cannot be
// made to redirect or to stream an endless body, which is what these cases need.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import type { ProviderError } from '../../../src/errors.js'
import {
  MAX_ERROR_BODY_BYTES,
  MAX_TOKEN_ANSWER_BYTES,
  createVaultRequester,
  redirectOrigin,
} from '../../../src/vault/http.js'

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
  t.teardown(() => new Promise<void>((r) => s.close(() => r())))
  s.unref()
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen }
}

const MAX = 64 * 1024

t.test('JSON answers pass through; non-JSON as text; empty as ""', async (t) => {
  const { url } = await server(t, (req, res) => {
    if (req.url === '/json') res.writeHead(200, { 'content-type': 'application/json' }).end('\uFEFF{"a":1}')
    else if (req.url === '/text') res.writeHead(500).end('oops')
    else res.writeHead(204).end()
  })
  const send = createVaultRequester({ maxResponseBytes: MAX })
  t.same(await send({ uri: `${url}/json`, method: 'GET' }), {
    statusCode: 200,
    body: { a: 1 },
    request: { path: '/json' },
  })
  t.same((await send({ uri: `${url}/text`, method: 'GET' })).body, 'oops')
  t.same((await send({ uri: `${url}/none`, method: 'GET' })).body, '')
})

t.test('a redirect is refused and never followed; the token never reaches the target', async (t) => {
  const target = await server(t, (_req, res) => res.writeHead(200).end('{}'))
  for (const status of [301, 302, 303, 307, 308]) {
    const front = await server(t, (_req, res) =>
      res.writeHead(status, { location: `${target.url}/v1/secret/x?token=abc` }).end(),
    )
    const send = createVaultRequester({ maxResponseBytes: MAX })
    const err = (await send({
      uri: `${front.url}/v1/auth/jwt/login`,
      method: 'POST',
      headers: { 'X-Vault-Token': 'hvs.secret-token-value' },
      json: { jwt: 'x', role: 'r' },
    }).catch((e) => e)) as ProviderError
    t.equal(err.code, 'VAULT_REDIRECT_REFUSED', `${status}`)
    t.match(err.message, new RegExp(`answered ${status} with a redirect to "${target.url}"; .*set vaultAddress`))
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
  let streamClosed = false
  const { url } = await server(t, (req, res) => {
    if (req.url === '/declared') {
      res.writeHead(200, { 'content-length': String(MAX * 100) })
      res.write('x'.repeat(1024))
      return
    }
    // Chunked, endless: only a cut stream stops it.
    res.writeHead(200, { 'content-type': 'application/json' })
    const chunk = Buffer.alloc(16 * 1024, 'x')
    const pump = (): void => {
      while (!res.destroyed && res.write(chunk)) streamed += chunk.length
      if (!res.destroyed) res.once('drain', pump)
    }
    res.on('close', () => (streamClosed = true))
    pump()
  })
  const send = createVaultRequester({ maxResponseBytes: MAX })
  const declared = (await send({ uri: `${url}/declared`, method: 'GET' }).catch((e) => e)) as ProviderError
  t.equal(declared.code, 'VAULT_RESPONSE_TOO_LARGE')
  t.match(declared.message, /larger than 65536 bytes \(-max-vault-response-size\)/)
  const endless = (await send({ uri: `${url}/endless`, method: 'GET' }).catch((e) => e)) as ProviderError
  t.equal(endless.code, 'VAULT_RESPONSE_TOO_LARGE')
  await new Promise((r) => setImmediate(r))
  t.ok(streamed < 64 * MAX, `the stream was cut (${streamed} bytes written by the server)`)
  t.ok(streamClosed || streamed < 64 * MAX, 'the connection was closed')
})

t.test(
  'an error answer is read only up to MAX_ERROR_BODY_BYTES, whatever -max-vault-response-size allows',
  async (t) => {
    const TOTAL = 64 * 1024 * 1024
    let written = 0
    let closed: Promise<void> = Promise.resolve()
    const { url } = await server(t, (req, res) => {
      if (req.url === '/short') {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"errors":["role not found"]}')
        return
      }
      // Megabytes of error text, declared or streamed: only the status matters past the cap.
      closed = new Promise((r) => res.on('close', () => r()))
      res.writeHead(400, req.url === '/declared' ? { 'content-length': String(TOTAL) } : {})
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
    const send = createVaultRequester({ maxResponseBytes: 128 * 1024 * 1024 })
    t.same((await send({ uri: `${url}/short`, method: 'POST' })).body, { errors: ['role not found'] })
    for (const path of ['/declared', '/streamed']) {
      written = 0
      const answer = await send({ uri: `${url}${path}`, method: 'POST' })
      t.equal(answer.statusCode, 400, path)
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
  const send = createVaultRequester({ maxResponseBytes: 4 * 1024 * 1024 })
  t.equal((await send({ uri: `${url}/v1/secret`, method: 'GET' })).statusCode, 200, 'a secret of 100 KiB is read')
  const login = (await send({
    uri: `${url}/v1/auth/jwt/login`,
    method: 'POST',
    maxResponseBytes: MAX_TOKEN_ANSWER_BYTES,
  }).catch((e) => e)) as ProviderError
  t.equal(login.code, 'VAULT_RESPONSE_TOO_LARGE')
  t.match(login.message, /larger than 65536 bytes, the most a token answer \(login, renewal\) may be/)
  const small = createVaultRequester({ maxResponseBytes: 1024 })
  const capped = (await small({ uri: `${url}/x`, method: 'GET', maxResponseBytes: MAX_TOKEN_ANSWER_BYTES }).catch(
    (e) => e,
  )) as ProviderError
  t.match(capped.message, /larger than 1024 bytes \(-max-vault-response-size\)/, 'the flag stays the upper bound')
})

t.test('the whole call is bounded by the timeout (code ECONNABORTED, as the retry policy expects)', async (t) => {
  const { url } = await server(t, () => undefined)
  const send = createVaultRequester({ maxResponseBytes: MAX })
  const err = (await send({ uri: `${url}/silent`, method: 'GET', timeout: 50 }).catch((e) => e)) as { code?: string }
  t.equal(err.code, 'ECONNABORTED')
})

t.test('a peer that hangs up mid-answer is a connection failure', async (t) => {
  const { url } = await server(t, (req, res) => {
    res.writeHead(200, { 'content-length': '100' })
    res.write('{"a":')
    setTimeout(() => req.socket.destroy(), 5)
  })
  const send = createVaultRequester({ maxResponseBytes: MAX })
  const err = (await send({ uri: `${url}/cut`, method: 'GET' }).catch((e) => e)) as { code?: string }
  t.equal(err.code, 'ECONNRESET')
})
