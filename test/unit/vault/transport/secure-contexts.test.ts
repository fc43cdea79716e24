// TLS contexts, one per distinct TLS material: pods naming copies of one CA at different paths share
// one context (what it holds is OpenSSL memory, per context, not per pool or connection).
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { copyFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ProviderError } from '../../../../src/errors.js'
import { SecureContexts } from '../../../../src/vault/transport/secure-contexts.js'
import { TransportRegistry, callThrough } from '../../../../src/vault/transport/registry.js'
import { makeTestPki } from '../../../support/adversary.js'
import { tempDirFor } from '../../../support/tmp.js'
import { testTransportOptions } from '../../../support/transport-options.js'

t.test('the same material shares a context; other material has its own', async (t) => {
  const contexts = new SecureContexts()
  const pki = makeTestPki(join(await tempDirFor(t, 'vcp-ctx-'), 'pki'))
  const caPem = readFileSync(pki.caCertPath)
  const a = contexts.connectOptions({ ca: [caPem], rejectUnauthorized: true }, 'https://a:8200')
  const b = contexts.connectOptions(
    { ca: [Buffer.from(caPem)], rejectUnauthorized: false, servername: 'v' },
    'https://b',
  )
  t.equal(a.secureContext, b.secureContext, 'equal bytes, one context')
  t.equal(b.rejectUnauthorized, false, 'per-transport settings stay its own')
  t.equal(b.servername, 'v')
  t.notOk('servername' in a, 'no server name unless set')
  const client = contexts.connectOptions(
    {
      ca: [caPem],
      cert: readFileSync(pki.clientCertPath),
      key: readFileSync(pki.clientKeyPath),
      rejectUnauthorized: true,
    },
    'https://a:8200',
  )
  t.not(client.secureContext, a.secureContext, 'a client certificate is other material')
  t.equal(contexts.size, 2)
})

t.test('material TLS cannot use fails with BAD_PARAMETER naming the address', async (t) => {
  const contexts = new SecureContexts()
  const err = (() => {
    try {
      contexts.connectOptions(
        { cert: Buffer.from('not a certificate'), key: Buffer.from('not a key'), rejectUnauthorized: true },
        'https://vault.example:8200',
      )
      return undefined
    } catch (e) {
      return e
    }
  })()
  t.type(err, ProviderError)
  t.equal((err as ProviderError).code, 'BAD_PARAMETER')
  t.match((err as ProviderError).message, 'the TLS files for Vault at "https://vault.example:8200" cannot be used')
  t.equal(contexts.size, 0, 'nothing kept')
})

t.test('pools of CA copies at different paths share a context and still verify the server', async (t) => {
  const dir = await tempDirFor(t, 'vcp-ctx-')
  const pki = makeTestPki(join(dir, 'pki'))
  const server = https.createServer({ cert: pki.serverCertPem, key: pki.serverKeyPem }, (_req, res) =>
    res.end('{"data":{}}'),
  )
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  const address = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
  const registry = new TransportRegistry(
    testTransportOptions(1 << 20, { maxTlsFileBytes: 64 * 1024 }),
    new SecureContexts(),
  )
  t.teardown(() => registry.close())
  for (let i = 0; i < 3; i++) {
    const caCertPath = join(dir, `ca-${i}.pem`)
    copyFileSync(pki.caCertPath, caCertPath)
    const conn = { address, tls: { skipVerify: false, caCertPath } }
    const answer = await callThrough(registry, conn, { tenant: 'tenant', method: 'GET', path: 'x', timeoutMs: 5000 })
    t.equal(answer.status, 200, `pool ${i} verifies the server with its CA`)
  }
  t.equal(registry.heldBy('tenant'), 3, 'three pools (one per CA path)')
  // Without the CA the server is not trusted: the shared context is not a blanket trust.
  const untrusted = await callThrough(
    registry,
    { address, tls: { skipVerify: false } },
    {
      tenant: 'tenant',
      method: 'GET',
      path: 'x',
      timeoutMs: 5000,
    },
  ).then(
    () => 'answered',
    (e: Error) => e.message,
  )
  t.match(untrusted, /UNABLE_TO_VERIFY_LEAF_SIGNATURE/, 'a pool without the CA does not trust the server')
})
