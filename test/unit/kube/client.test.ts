// The provider's Kubernetes client behind -kube-api-url=https://…: it trusts the cluster's CA
// from ca.crt in the service-account directory, as it does in-cluster (an API server with a
// cluster-private CA is the normal case; found by the e2e suite against a real one).
import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import https from 'node:https'
import { join } from 'node:path'
import t from 'tap'
import { KubeClient } from '../../../src/kube/client.js'
import { ManualTime } from '../../support/manual-time.js'
import { selfSignedServerCert } from '../../support/tls.js'
import { tempDirFor } from '../../support/tmp.js'

async function apiServer(
  t: { teardown(fn: () => unknown): void },
  dir: string,
): Promise<{ url: string; auth: string[] }> {
  const pem = selfSignedServerCert(dir, '127.0.0.1-ca')
  const auth: string[] = []
  const server = https.createServer({ key: readFileSync(pem.key), cert: readFileSync(pem.cert) }, (req, res) => {
    auth.push(req.headers.authorization ?? '')
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ kind: 'Secret', data: { key: Buffer.from('k'.repeat(32)).toString('base64') } }))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  return { url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, auth }
}

t.test('-kube-api-url with https reads ca.crt and the token from the service-account directory', async (t) => {
  const dir = await tempDirFor(t)
  const { url, auth } = await apiServer(t, dir)
  const sa = join(dir, 'sa')
  const { mkdir } = await import('node:fs/promises')
  await mkdir(sa)
  await writeFile(join(sa, 'token'), 'provider-token\n')

  const untrusted = await KubeClient.discover({ apiUrl: url, serviceAccountDir: sa, env: {} })
  t.teardown(() => untrusted?.close())
  await t.rejects(untrusted!.getSecret('ns', 'hmac'), {
    code: 'KUBERNETES_API',
    message: /unreachable \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)\)/,
  })

  await writeFile(join(sa, 'ca.crt'), readFileSync(join(dir, 'server.crt')))
  const client = await KubeClient.discover({ apiUrl: url, serviceAccountDir: sa, env: {} })
  t.teardown(() => client?.close())
  const data = await client!.getSecret('ns', 'hmac')
  t.equal(data?.get('key')?.length, 32)
  t.equal(auth[auth.length - 1], 'Bearer provider-token', 'the provider’s own token')
})

t.test("a call made for a Mount ends when the Mount's caller leaves (TokenRequest included)", async (t) => {
  const http = await import('node:http')
  let arrived!: () => void
  const reached = new Promise<void>((r) => (arrived = r))
  // An API server that never answers: only the caller's signal can end the call.
  const server = http.createServer(() => arrived())
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  const dir = await tempDirFor(t)
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const client = await KubeClient.discover({ apiUrl: url, serviceAccountDir: dir, env: {} })
  t.teardown(() => client?.close())
  const { Deadline } = await import('../../../src/util/deadline.js')
  const driver = new AbortController()
  const pending = client!
    .createPodToken('shop', 'web', {
      audience: 'vault',
      podName: 'web-0',
      podUid: 'u',
      expirationSeconds: 600,
      deadline: Deadline.in(60_000, driver.signal, new ManualTime()),
    })
    .catch((e: unknown) => e)
  await reached
  driver.abort()
  t.match(await pending, {
    code: 'CANCELLED',
    message: /^TokenRequest for service account shop\/web \(audience "vault"\): the driver cancelled the Mount/,
  })
})
