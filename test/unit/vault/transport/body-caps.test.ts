// Body and error-body caps (body-caps.ts) alone over a real pool: what of an answer is read.
import t from 'tap'
import { MAX_ERROR_BODY_BYTES, bodyCaps } from '../../../../src/vault/transport/body-caps.js'
import { composed, failed, outcome, serve } from '../../../support/dispatch.js'

const CAP = 1024

t.test('a Content-Length over the cap fails at once; a stream over it is cut', async (t) => {
  let written = 0
  const vault = await serve(t, (req, res) => {
    if (req.url === '/v1/declared')
      return void res.writeHead(200, { 'content-length': CAP + 1 }).end('x'.repeat(CAP + 1))
    if (req.url === '/v1/small') return void res.end('{"a":1}')
    // Chunked, without end: only the cut ends it.
    res.writeHead(200)
    const timer = setInterval(() => {
      written += 512
      res.write('y'.repeat(512))
    }, 1)
    res.on('close', () => clearInterval(timer))
  })
  const d = composed(t, vault.url, [bodyCaps(CAP)])
  const declared = failed(await outcome(d, { path: '/v1/declared' }))
  t.equal(declared.code, 'VAULT_RESPONSE_TOO_LARGE')
  t.equal(
    declared.message,
    `Vault's answer is larger than ${CAP} bytes (-max-vault-response-size); it was not read further`,
  )
  t.equal(failed(await outcome(d, { path: '/v1/stream' })).code, 'VAULT_RESPONSE_TOO_LARGE', 'an endless stream ends')
  t.ok(written > CAP)
  t.match(await outcome(d, { path: '/v1/small' }), { status: 200, body: '{"a":1}' })
})

t.test("a call's tighter cap applies, saying it is a token answer's", async (t) => {
  const vault = await serve(t, (_req, res) => res.end('z'.repeat(200)))
  const d = composed(t, vault.url, [bodyCaps(CAP)])
  const err = failed(await outcome(d, { maxResponseBytes: 100 } as object))
  t.match(err.message, 'larger than 100 bytes, the most a token answer (login, renewal) may be')
  t.match(await outcome(d, { maxResponseBytes: CAP * 10 } as object), { status: 200 }, 'a looser one does not')
})

t.test('an error text is read to MAX_ERROR_BODY_BYTES: past it, a note stands for it', async (t) => {
  const vault = await serve(t, (req, res) => {
    res.writeHead(req.url === '/v1/short' ? 403 : 500, { 'content-type': 'application/json' })
    res.end(
      req.url === '/v1/short'
        ? '{"errors":["permission denied"]}'
        : `{"errors":["${'e'.repeat(MAX_ERROR_BODY_BYTES)}"]}`,
    )
  })
  // The error cap holds whatever -max-vault-response-size says.
  const d = composed(t, vault.url, [bodyCaps(4 * MAX_ERROR_BODY_BYTES)])
  const long = await outcome(d, { path: '/v1/long' })
  t.match(long, { status: 500 })
  t.same(JSON.parse((long as { body: string }).body), {
    errors: [`(Vault's error text is longer than ${MAX_ERROR_BODY_BYTES} bytes and was not read)`],
  })
  t.match(await outcome(d, { path: '/v1/short' }), { status: 403, body: '{"errors":["permission denied"]}' })
})
