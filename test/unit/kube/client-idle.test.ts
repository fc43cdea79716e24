// How long the Kubernetes client keeps an idle connection to the API server, which (Go's
// net/http) sends no Keep-Alive hint (test/support/idle-server.ts). Time is Node's mocked
// timers, which also drive undici's own: nothing here waits for the clock.
import { mock } from 'node:test'
import t from 'tap'
import { KUBE_IDLE_CONNECTION_MS, KubeClient } from '../../../src/kube/client.js'
import { advance, startIdleServer } from '../../support/idle-server.js'
import { tempDirFor } from '../../support/tmp.js'

t.beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }))
t.afterEach(() => mock.timers.reset())

t.test('an idle connection is kept for the next call well past undici’s 4 s default', async (t) => {
  const secret = JSON.stringify({ kind: 'Secret', data: { key: Buffer.from('k').toString('base64') } })
  const s = await startIdleServer(t, secret)
  const client = await KubeClient.discover({ apiUrl: s.url, serviceAccountDir: await tempDirFor(t), env: {} })
  t.teardown(() => client?.close())
  await client!.getSecret('ns', 'hmac')
  t.equal(s.sockets.length, 1)

  await advance(KUBE_IDLE_CONNECTION_MS - 5_000)
  await client!.getSecret('ns', 'hmac')
  t.equal(s.sockets.length, 1, '25 s idle: the second call reused the connection')

  await advance(KUBE_IDLE_CONNECTION_MS + 2_000)
  await s.settle(0)
  t.notOk(s.isOpen(0), 'closed by the client once idle past the timeout')
  await client!.getSecret('ns', 'hmac')
  t.equal(s.sockets.length, 2, 'the next call opens a new one')
})
