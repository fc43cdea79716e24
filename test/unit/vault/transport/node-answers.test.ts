// One node's answer closes its connection (node-answers.ts) alone over a real pool: a sealed node's
// 503, a standby's "no active node" 500 and an index check's empty 429 go up whole and their connection
// is not reused; any other answer keeps it.
import t, { type Test } from 'tap'
import { closeNodeAnswers, MAX_NODE_ANSWER_BYTES } from '../../../../src/vault/transport/node-answers.js'
import { composed, outcome, serve } from '../../../support/dispatch.js'

const NODE_ANSWERS: Array<[number, string]> = [
  [503, '{"errors":["Vault is sealed"]}'],
  [500, '{"errors":["local node not active but active cluster node not found"]}'],
  [429, '{"errors":[]}'],
]
const OTHER_ANSWERS: Array<[number, string]> = [
  [200, '{"data":{}}'],
  [503, '{"errors":["upstream connect error"]}'],
  [500, '{"errors":["1 error occurred:\\n\\t* internal error\\n\\n"]}'],
  [429, '{"errors":["request path \\"secret/data/a\\": rate limit quota exceeded"]}'],
  [503, '<html>Service Unavailable</html>'],
  [404, '{"errors":[]}'],
]

async function twoCalls(t: Test, status: number, body: string, chunked = false) {
  const server = await serve(t, (_req, res) => {
    if (chunked) {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.write(body.slice(0, 5))
      res.end(body.slice(5))
    } else res.writeHead(status, { 'content-length': Buffer.byteLength(body) }).end(body)
  })
  const d = composed(t, server.url, [closeNodeAnswers], { connections: 1 })
  const first = await outcome(d, { origin: server.url })
  const second = await outcome(d, { origin: server.url })
  return { first, second, connections: server.connections() }
}

t.test("a node's answer goes up whole, and the next call gets a new connection", async (t) => {
  for (const [status, body] of NODE_ANSWERS) {
    const { first, second, connections } = await twoCalls(t, status, body)
    t.match(first, { status, body }, `${status} ${body}: passed up as it came`)
    t.match(second, { status, body })
    t.equal(connections, 2, `${status}: its connection was closed, not reused`)
  }
})

t.test('any other answer keeps its connection', async (t) => {
  for (const [status, body] of OTHER_ANSWERS) {
    const { first, second, connections } = await twoCalls(t, status, body)
    t.match(first, { status, body }, `${status} ${body.slice(0, 30)}`)
    t.match(second, { status, body })
    t.equal(connections, 1, `${status} ${body.slice(0, 30)}: the connection was reused`)
  }
})

t.test('without a Content-Length, or longer than a node answer is, it passes as it comes', async (t) => {
  const [status, body] = NODE_ANSWERS[0]!
  const chunked = await twoCalls(t, status, body, true)
  t.match(chunked.first, { status, body })
  const long = `{"errors":["Vault is sealed","${'x'.repeat(MAX_NODE_ANSWER_BYTES)}"]}`
  const big = await twoCalls(t, 503, long)
  t.match(big.first, { status: 503, body: long })
  t.equal(big.connections, 1, 'not held, not closed')
})
