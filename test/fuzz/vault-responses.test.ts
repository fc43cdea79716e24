// Odd Vault answers, generated with fast-check and served to the real daemon:
// empty bodies, 204, non-JSON, missing `data`, wrong types, huge and deeply
// nested bodies, truncated answers and hang-ups, any status code.
//
// The one place the suites use a hand-made HTTP server instead of OpenBao:
// a real OpenBao cannot be made to return malformed bodies, truncated
// answers or arbitrary status codes, which is exactly what this test needs.
// Everything else (the daemon, its socket, the gRPC client of the driver's
// proto) is real. Every case must get an answer with the proper code and a
// message naming the object or the Vault address; no crash, no INTERNAL, no
// unbounded memory.
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import t from 'tap'
import { connectProvider } from '../support/grpc-client.js'
import { signServiceAccountJwt } from '../support/jwt.js'
import { findLeaks } from '../support/leaks.js'
import { startProvider } from '../support/provider.js'

t.setTimeout(10 * 60_000)

const CASES = Number(process.env.VCP_FUZZ_VAULT_CASES ?? 300)
const FAKE_TOKEN = `fake-${randomUUID()}`
const VALUE = `value-${randomUUID()}`

interface OddAnswer {
  status: number
  contentType: string | undefined
  body: string | Buffer
  /** normal; truncate: promise more bytes than sent, then close; hangup: close before answering. */
  mode: 'normal' | 'truncate' | 'hangup'
}

const deep = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`
const deepObject = (n: number): string => `{"data":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`

const bodyArb: fc.Arbitrary<string | Buffer> = fc.oneof(
  fc.constantFrom(
    '',
    'not json',
    '{',
    'null',
    '[]',
    '{}',
    '"just a string"',
    '42',
    '{"data":null}',
    '{"data":"str"}',
    '{"data":[]}',
    '{"data":{"data":null}}',
    '{"data":{"data":"x"}}',
    '{"data":{"password":5}}',
    '{"data":{"password":null}}',
    '{"data":{"password":{"nested":true}}}',
    `{"data":{"data":{"password":"${VALUE}"}}}`,
    `{"data":{"password":"${VALUE}"}}`,
    `\uFEFF{"data":{"password":"${VALUE}"}}`,
    '{"errors":[]}',
    `{"errors":["${'e'.repeat(5000)}"]}`,
    '{"errors":"not a list"}',
    '{"data":{"password":"\\ud800"}}',
    deep(100_000),
    deepObject(5_000),
    '{"__proto__":{"polluted":true},"data":{"password":"p"}}',
  ),
  fc.constantFrom(5, 6).map((mib) => `{"data":{"password":"${'x'.repeat(mib * 1024 * 1024)}"}}`),
  fc.json().map((j) => `{"data":${j}}`),
  fc.json(),
  fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
)

const answerArb: fc.Arbitrary<OddAnswer> = fc.record({
  status: fc.oneof(
    { weight: 8, arbitrary: fc.constant(200) },
    { weight: 1, arbitrary: fc.constant(204) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        201,
        202,
        206,
        301,
        302,
        304,
        400,
        401,
        403,
        404,
        405,
        409,
        412,
        418,
        422,
        429,
        451,
        499,
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom(500, 501, 502, 503, 504, 599) },
  ),
  contentType: fc.constantFrom('application/json', 'text/plain', 'application/octet-stream', undefined),
  body: bodyArb,
  mode: fc.oneof(
    { weight: 10, arbitrary: fc.constant('normal' as const) },
    { weight: 1, arbitrary: fc.constantFrom('truncate' as const, 'hangup' as const) },
  ),
})

const caseArb = fc.record({ answer: answerArb, secretKey: fc.constantFrom('password', undefined, 'data') })

function vmRssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) : 0
}

t.test(`${CASES} odd Vault answers through the real daemon`, async (t) => {
  const answers = new Map<string, OddAnswer>()
  const fake = http.createServer((req, res) => {
    const url = req.url ?? ''
    req.resume()
    if (url.startsWith('/v1/sys/health')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"initialized":true,"sealed":false}')
      return
    }
    if (url.startsWith('/v1/auth/jwt/login')) {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ auth: { client_token: FAKE_TOKEN, lease_duration: 3600, metadata: { role: 'app' } } }))
      return
    }
    // A redirect to another path (same server here): not a standby's (that keeps the path), never followed.
    if (url.startsWith('/v1/standby/')) {
      res.writeHead(307, { location: `http://127.0.0.1:${port}${url.replace('/standby/', '/active/')}` }).end()
      return
    }
    if (url.startsWith('/v1/active/')) {
      activeHits += 1
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const data = { password: VALUE, method: req.method, body: Buffer.concat(chunks).toString() }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data }))
      })
      return
    }
    const id = /^\/v1\/odd\/([\w-]+)/.exec(url)?.[1]
    const a = id ? answers.get(id) : undefined
    if (!a) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"errors":[]}')
      return
    }
    if (a.mode === 'hangup') {
      req.socket.destroy()
      return
    }
    const body = typeof a.body === 'string' ? Buffer.from(a.body) : a.body
    const headers: Record<string, string | number> = {}
    if (a.contentType) headers['content-type'] = a.contentType
    if (a.mode === 'truncate') {
      headers['content-length'] = body.length + 100
      res.writeHead(a.status, headers)
      res.write(body)
      setTimeout(() => req.socket.destroy(), 10)
      return
    }
    headers['content-length'] = a.status === 204 || a.status === 304 ? 0 : body.length
    res.writeHead(a.status, headers)
    res.end(a.status === 204 || a.status === 304 ? undefined : body)
  })
  let port = 0
  let activeHits = 0
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => fake.close(() => r())))
  fake.unref()
  port = (fake.address() as { port: number }).port

  const provider = await startProvider({ args: [`-vault-addr=http://127.0.0.1:${port}`] })
  t.teardown(() => provider.stop())
  const client = connectProvider(provider.socketPath, 64 * 1024 * 1024)
  t.teardown(() => client.close())

  const jwts: string[] = []
  const pod = { namespace: 'default', serviceAccount: 'app', podName: 'odd-0', podUid: randomUUID() }
  const jwt = signServiceAccountJwt({ ...pod, audience: 'vault', expiresInSec: 3600 })
  jwts.push(jwt)
  const attrsFor = (id: string, secretKey: string | undefined): string =>
    JSON.stringify({
      roleName: 'app',
      vaultAuthMountPath: 'jwt',
      objects: `- objectName: k\n  secretPath: odd/${id}\n${secretKey ? `  secretKey: ${secretKey}\n` : ''}`,
      'csi.storage.k8s.io/pod.name': pod.podName,
      'csi.storage.k8s.io/pod.namespace': pod.namespace,
      'csi.storage.k8s.io/pod.uid': pod.podUid,
      'csi.storage.k8s.io/serviceAccount.name': pod.serviceAccount,
      'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({
        vault: { token: jwt, expirationTimestamp: new Date(Date.now() + 3600_000).toISOString() },
      }),
    })

  // Not generated: a 307 to another path is refused, not followed (a token must not travel elsewhere).
  const activeBefore = activeHits
  const redirected = await client.mount({
    attributes: attrsFor('unused', undefined).replace(
      /"objects":"[^"]*"/,
      `"objects":${JSON.stringify('- objectName: k\n  secretPath: standby/x\n  secretKey: password\n')}`,
    ),
  })
  t.equal(redirected.grpcCode, 'FailedPrecondition', redirected.message)
  t.match(
    redirected.message,
    /object "k": GET standby\/x .*answered 307 with a redirect to "http:\/\/127\.0\.0\.1:\d+"; nothing was sent there/,
  )
  t.equal(activeHits, activeBefore, 'nothing reached the redirect target')

  const cases = fc.sample(caseArb, { numRuns: CASES, seed: Number(process.env.VCP_FUZZ_SEED ?? 20261129) })
  const codes = new Map<string, number>()
  const rssStart = vmRssKiB(provider.pid)
  let rssPeak = rssStart
  const allowed = new Set([
    'OK',
    'FailedPrecondition',
    'NotFound',
    'Unavailable',
    'ResourceExhausted',
    'InvalidArgument',
    'PermissionDenied',
    'DeadlineExceeded',
  ])
  let next = 0
  let failedFast = 0
  const worker = async (): Promise<void> => {
    while (next < cases.length) {
      const i = next++
      const c = cases[i]!
      const id = `c${i}`
      answers.set(id, c.answer)
      const r = await client.mount({ attributes: attrsFor(id, c.secretKey) }, 20_000)
      answers.delete(id)
      codes.set(r.grpcCode, (codes.get(r.grpcCode) ?? 0) + 1)
      // Answered by the breaker while the fake Vault counted as down: the odd answer was not exercised.
      if (/has been unreachable since/.test(r.message)) failedFast += 1
      const what = `case ${i} (status ${c.answer.status}, ${c.answer.mode}, body ${String(c.answer.body).slice(0, 60)}…)`
      if (!allowed.has(r.grpcCode)) t.fail(`${what}: ${r.grpcCode}: ${r.message}`)
      if (!r.ok && !/object "k"|Vault at|largest objects/.test(r.message))
        t.fail(`${what}: message names neither object nor Vault: ${r.message}`)
      if (r.ok && r.files.length !== 1) t.fail(`${what}: ${r.files.length} files`)
      if (r.ok && r.objectVersions.length !== 1) t.fail(`${what}: no object version`)
      if (i % 20 === 0) rssPeak = Math.max(rssPeak, vmRssKiB(provider.pid))
    }
  }
  await Promise.all(Array.from({ length: 6 }, worker))

  t.equal(provider.child.exitCode, null, 'the daemon is still running')
  t.ok(failedFast < cases.length / 4, `${failedFast} cases answered by the breaker instead of reaching the odd answer`)
  t.ok(
    rssPeak < 768 * 1024,
    `provider RSS peaked at ${(rssPeak / 1024).toFixed(0)} MiB (started at ${(rssStart / 1024).toFixed(0)} MiB)`,
  )
  const logs = await provider.logs()
  t.notMatch(logs, /unhandled promise rejection/)
  t.same(findLeaks(logs, [VALUE, FAKE_TOKEN, ...jwts]), [], 'no value, token or JWT in the log')
  t.comment(
    `fuzz (odd Vault answers): ${cases.length} cases (${failedFast} failed fast); codes ${JSON.stringify(Object.fromEntries(codes))}`,
  )
})
