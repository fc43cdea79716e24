// node-vault's request layer: every call goes through the Vault transport, and nothing of the
// provider's own environment (VAULT_TOKEN, VAULT_NAMESPACE, VAULT_PREFIX, VAULT_ADDR) reaches a
// pod's call: a pod must never borrow the provider's identity. Against a real HTTP server.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import nodeVault from 'node-vault'
import t from 'tap'
import { createLogger } from '../../../src/observability/logger.js'
import { Deadline } from '../../../src/util/deadline.js'
import { createNodeVaultClient, createVaultRequester } from '../../../src/vault/http.js'
import { VaultSession } from '../../../src/vault/sessions/session.js'
import { VaultTransport, defaultTransportOptions } from '../../../src/vault/transport/transport.js'

const PROVIDER_TOKEN = 'hvs.PROVIDER-OWN-TOKEN-never-sent'
const logger = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }))

t.test("a pod's calls never carry the provider's VAULT_* environment", async (t) => {
  const seen: Array<{ url: string; headers: http.IncomingHttpHeaders; body: string }> = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body })
      if (req.url?.includes('/login')) {
        res.end(
          JSON.stringify({ auth: { client_token: 'hvs.pod-token', lease_duration: 60, metadata: { role: 'web' } } }),
        )
      } else res.end(JSON.stringify({ data: { data: { a: 'b' } } }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  // The provider's own environment, as an operator might have set it for the daemon.
  const saved = { ...process.env }
  t.teardown(() => {
    for (const k of ['VAULT_TOKEN', 'VAULT_NAMESPACE', 'VAULT_PREFIX', 'VAULT_ADDR']) {
      if (saved[k] === undefined) delete process.env[k]
      else process.env[k] = saved[k]
    }
  })
  process.env.VAULT_TOKEN = PROVIDER_TOKEN
  process.env.VAULT_NAMESPACE = 'provider-namespace'
  process.env.VAULT_PREFIX = '/provider-prefix'
  process.env.VAULT_ADDR = 'http://127.0.0.1:1'

  const transport = await VaultTransport.create(
    { address, tls: { skipVerify: false } },
    defaultTransportOptions(1 << 20),
  )
  t.teardown(() => transport.close())
  const session = new VaultSession(
    {
      // No namespace of its own: the provider's must not fill the gap.
      connection: { address, tls: { skipVerify: false } },
      authMount: 'kubernetes',
      role: 'web',
      audience: 'vault',
      pod: { name: 'web-0', namespace: 'shop', uid: 'u', serviceAccount: 'web' },
    },
    createNodeVaultClient(nodeVault, transport),
    { logger, staticFreshnessMs: 0, shareDynamic: false },
  )
  const body = await session.request(
    { method: 'GET', path: 'secret/data/app', query: [] },
    async () => 'pod-jwt',
    Deadline.in(10_000),
    'object "a"',
  )
  t.same(body, { data: { data: { a: 'b' } } })
  t.same(
    seen.map((s) => s.url),
    ['/v1/auth/kubernetes/login', '/v1/secret/data/app'],
    "the transport's address, without VAULT_PREFIX",
  )
  t.equal(seen[0]!.headers['x-vault-token'], undefined, 'the login carries no token at all')
  t.equal(seen[1]!.headers['x-vault-token'], 'hvs.pod-token', "the read carries the pod's token")
  for (const s of seen) {
    t.equal(s.headers['x-vault-namespace'], undefined, 'no VAULT_NAMESPACE')
    t.notMatch(JSON.stringify(s), PROVIDER_TOKEN)
  }
})

t.test('node-vault helpers that do not state their call are refused, not sent', async (t) => {
  const sent: unknown[] = []
  const requester = createVaultRequester({
    address: 'http://127.0.0.1:1',
    call: async (c) => {
      sent.push(c)
      return { status: 200, body: {} }
    },
  })
  const client = nodeVault({ endpoint: 'http://127.0.0.1:1', 'request-promise': { defaults: () => requester } })
  await t.rejects(client.read('secret/data/app'), /must state its token and time limit/)
  t.equal(sent.length, 0)
})
