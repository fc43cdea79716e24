// node-vault as the daemon loads it (the pool's own loader): the axios it never calls is the
// stand-in, not the real library, and Vault calls through node-vault still work.
import { createRequire } from 'node:module'
import { Writable } from 'node:stream'
import t from 'tap'
import { createLogger } from '../../../src/observability/logger.js'
import { Deadline } from '../../../src/util/deadline.js'
import { AXIOS_STAND_IN, axiosPathForNodeVault } from '../../../src/vault/no-axios.js'
import { SessionPool } from '../../../src/vault/sessions/pool.js'
import { FakeVault, fakePoolOptions, kvAnswer, loginAnswer } from '../../support/fake-vault.js'

const logger = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }))
const require = createRequire(import.meta.url)
const axiosFiles = (): string[] => Object.keys(require.cache).filter((f) => f.includes('/node_modules/axios/'))

t.test('node-vault gets the stand-in for axios; the real one is never loaded; calls work', async (t) => {
  const axiosFile = axiosPathForNodeVault()
  t.same(axiosFiles(), [], 'nothing in this test process loaded axios before node-vault')
  const vault = new FakeVault()
  vault.on(/login$/, () => loginAnswer('hvs.t1', 3600))
  vault.on(/^GET secret\/data\/app$/, () => kvAnswer('v'))
  // No loadNodeVault: the pool loads node-vault as the daemon does.
  const pool = new SessionPool(fakePoolOptions(logger, { get: async () => vault }))
  t.teardown(() => pool.close())
  const session = await pool.session({
    connection: { address: vault.address, tls: { skipVerify: false } },
    authMount: 'kubernetes',
    role: 'web',
    audience: 'vault',
    pod: { name: 'web-0', namespace: 'shop', uid: 'u1', serviceAccount: 'web' },
  })
  const body = await session.request(
    { method: 'GET', path: 'secret/data/app', query: [] },
    async () => 'pod-jwt',
    Deadline.in(10_000),
    'object "a"',
  )
  t.same(body, kvAnswer('v').body, 'a read through node-vault')
  t.same(
    vault.calls.map((c) => `${c.method} ${c.path}`),
    ['POST auth/kubernetes/login', 'GET secret/data/app'],
  )
  t.ok(
    Object.keys(require.cache).some((f) => f.includes('/node_modules/node-vault/')),
    'node-vault itself was loaded',
  )
  t.equal(require.cache[axiosFile]?.exports, AXIOS_STAND_IN, "node-vault's require('axios') got the stand-in")
  t.same(axiosFiles(), [axiosFile], 'no file of the real axios was loaded')
  t.throws(() => AXIOS_STAND_IN.create(), /axios is not loaded in the Vault provider.*'request-promise' option/)
})
