// -mode=sync-controller through the Mount service, with requests shaped as the Secrets Store
// Sync Controller v0.0.4 builds them (the class's parameters, its own pod's name and UID, the
// SecretSync's namespace and service account, tokens bound to no pod, secrets "{}", permission
// 420) against a fake Vault: who a session is for, the checks of the answer, the errors.
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import type { ProviderError } from '../../../src/errors.js'
import { loadConfig, SYNC_CONTROLLER_IDENTITY_IDLE_MS } from '../../../src/config/config.js'
import { ephemeralKey } from '../../../src/hmac/hmac-key.js'
import { NodeBudget } from '../../../src/mount/budget.js'
import { RememberedRefusals } from '../../../src/mount/refusals.js'
import { RenderTurns } from '../../../src/mount/render-turns.js'
import { MountService } from '../../../src/mount/service.js'
import {
  checkSecretSyncAnswer,
  KUBERNETES_SECRET_MAX_BYTES,
  MAX_NAMED_OBJECTS,
} from '../../../src/mount/sync-controller.js'
import { createLogger } from '../../../src/observability/logger.js'
import type { RenderedObject } from '../../../src/render/render.js'
import { ObjectsCache } from '../../../src/request/objects-cache.js'
import { Deadline } from '../../../src/util/deadline.js'
import { AddressAllowlist } from '../../../src/vault/transport/address-allowlist.js'
import { SessionPool } from '../../../src/vault/sessions/pool.js'
import { VaultHttpError } from '../../../src/vault/transport/call-errors.js'
import type { VaultAnswer, VaultCall } from '../../../src/vault/transport/transport.js'
import { ANY_ADDRESS, denied, FakeVault, fakePoolOptions, kvAnswer, NO_BREAKER } from '../../support/fake-vault.js'
import { decodeJwtPayload, signServiceAccountJwt } from '../../support/jwt.js'
import { ManualTime } from '../../support/manual-time.js'

const VAULT = 'https://vault.test:8200'
/** The pools' clock and the Mounts' deadlines': the tests sweep idle identities at times of their own. */
const time = new ManualTime()
/** The controller's --rotation-poll-interval when its chart sets none (its main.go: 12h). */
const CONTROLLER_DEFAULT_POLL_MS = 12 * 3_600_000
/** The controller's own pod, the same in every request it makes. */
const CONTROLLER = {
  name: 'secrets-store-sync-controller-manager-7d9f-x2x',
  uid: '0c1d0c1d-0000-4000-8000-00000000c0de',
}

/** A kubernetes-auth login answer for whoever the JWT in the call names (as OpenBao's TokenReview reports it). */
function loginAsCaller(c: VaultCall): VaultAnswer {
  const claims = decodeJwtPayload((c.body as { jwt: string }).jwt)
  const k8s = claims['kubernetes.io'] as { namespace: string; serviceaccount: { name: string } }
  return {
    status: 200,
    body: {
      auth: {
        client_token: `hvs.${k8s.namespace}-${k8s.serviceaccount.name}`,
        lease_duration: 600,
        renewable: true,
        metadata: {
          role: (c.body as { role: string }).role,
          service_account_namespace: k8s.namespace,
          service_account_name: k8s.serviceaccount.name,
        },
      },
    },
  }
}

interface Request {
  namespace: string
  serviceAccount?: string
  objects?: unknown[]
  /** Audiences the controller passes tokens for (its --token-request-audience). */
  audiences?: string[]
  controllerUid?: string
  parameters?: Record<string, string>
}

/** The MountRequest the controller sends for a SecretSync of `namespace` (secretsync_controller.go). */
function controllerRequest(r: Request): { attributes: string; secrets: string; permission: string } {
  const sa = r.serviceAccount ?? 'app'
  const tokens: Record<string, { token: string; expirationTimestamp: string }> = {}
  for (const audience of r.audiences ?? ['vault']) {
    tokens[audience] = {
      token: signServiceAccountJwt({
        namespace: r.namespace,
        serviceAccount: sa,
        podName: '',
        podUid: '',
        audience,
        expiresInSec: 600,
        unbound: true,
      }),
      expirationTimestamp: new Date(Date.now() + 600_000).toISOString(),
    }
  }
  return {
    attributes: JSON.stringify({
      roleName: 'app',
      vaultAddress: VAULT,
      objects: JSON.stringify(
        r.objects ?? [{ objectName: 'password', secretPath: 'secret/data/app', secretKey: 'value' }],
      ),
      ...(r.parameters ?? {}),
      'csi.storage.k8s.io/pod.name': CONTROLLER.name,
      'csi.storage.k8s.io/pod.uid': r.controllerUid ?? CONTROLLER.uid,
      'csi.storage.k8s.io/pod.namespace': r.namespace,
      'csi.storage.k8s.io/serviceAccount.name': sa,
      ...(Object.keys(tokens).length > 0 ? { 'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify(tokens) } : {}),
    }),
    secrets: '{}',
    permission: '420',
  }
}

function world(
  t: Test,
  o: { allowlist?: string[]; budget?: NodeBudget; idleRevokeMs?: number } = {},
): { service: MountService; vault: FakeVault; lines: Array<Record<string, unknown>>; pool: SessionPool } {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l))
      cb()
    },
  })
  const logger = createLogger('info', sink)
  const vault = new FakeVault(VAULT)
  vault.on(/login$/, loginAsCaller)
  vault.on(/^GET secret\/data\//, (c) => kvAnswer(`value of ${c.path}`))
  const pool = new SessionPool(
    fakePoolOptions(
      logger,
      { get: async () => vault },
      time,
      // The test sweeps idle identities itself (sweepIdle with a time of its choosing).
      { scope: 'serviceaccount', idleRevokeMs: o.idleRevokeMs ?? 0, autoSweep: false },
    ),
  )
  t.teardown(() => pool.close())
  const service = new MountService({
    pool,
    kube: undefined,
    hmacKey: ephemeralKey(),
    logger,
    vaultDefaults: { authMount: 'kubernetes', tls: { skipVerify: false } },
    mode: 'sync-controller',
    allowlist: o.allowlist ? new AddressAllowlist(o.allowlist) : ANY_ADDRESS,
    breakers: NO_BREAKER,
    budget: o.budget ?? new NodeBudget({ mountBytes: 16 * 1024 * 1024, nodeBytes: 64 * 1024 * 1024 }),
    objectsCache: new ObjectsCache(),
    renderTurns: new RenderTurns(),
    refusals: new RememberedRefusals(time),
    time,
    maxResponseBytes: 4 * 1024 * 1024,
  })
  return { service, vault, lines, pool }
}

const deadline = (): Deadline => Deadline.in(30_000, undefined, time)

t.test(
  'identity and sessions: the SecretSync’s namespace and service account, never the controller’s pod',
  async (t) => {
    const { service, vault, lines } = world(t)
    await service.mount(controllerRequest({ namespace: 'shop' }), deadline())
    await service.mount(controllerRequest({ namespace: 'bank' }), deadline())
    t.equal(vault.count(/login$/), 2, 'two namespaces, one controller pod: two identities, two logins')
    const tokensUsed = new Set(vault.calls.filter((c) => c.method === 'GET').map((c) => c.token))
    t.same([...tokensUsed].sort(), ['hvs.bank-app', 'hvs.shop-app'], 'each namespace reads with its own Vault token')

    await service.mount(controllerRequest({ namespace: 'shop', controllerUid: 'another-controller-pod' }), deadline())
    t.equal(vault.count(/login$/), 2, 'another controller pod (a restart, a second replica) is the same identity')
    await service.mount(controllerRequest({ namespace: 'shop', serviceAccount: 'billing' }), deadline())
    t.equal(vault.count(/login$/), 3, 'another service account of the namespace is another identity')

    const line = lines.find((l) => l.msg === 'mount' && l.outcome === 'success')
    t.match(line, { namespace: 'shop', serviceAccount: 'app', role: 'app', podToken: 'sync-controller' })
    t.notOk('pod' in (line ?? {}), 'the log line names no pod')
    t.notMatch(JSON.stringify(lines), CONTROLLER.name, 'nor the controller’s pod name anywhere')
  },
)

t.test(
  'identity idle timeout: a SecretSync polled at the controller’s interval keeps its token and its credential',
  async (t) => {
    const HOUR = 3_600_000
    const syncArgs = ['-mode=sync-controller', '-hmac-key-file=/etc/vault-csi-provider/hmac/key']
    const byDefault = loadConfig(syncArgs, {}).identityIdleMs
    t.equal(byDefault, SYNC_CONTROLLER_IDENTITY_IDLE_MS, 'the default beside the controller')
    t.equal(byDefault, 2 * CONTROLLER_DEFAULT_POLL_MS, 'twice the controller’s default --rotation-poll-interval')
    t.equal(loadConfig(['-hmac-key-file=/k'], {}).identityIdleMs, 15 * 60_000, 'on a node: 15 m, as before')
    t.equal(loadConfig([...syncArgs, '-identity-idle-timeout=2h'], {}).identityIdleMs, 2 * HOUR, 'as told')

    // A database credential: leased for 8 h, renewable.
    const creds = () => {
      const t0 = time.now()
      const { service, vault, pool } = world(t, { idleRevokeMs: loadConfig(syncArgs, {}).identityIdleMs })
      let issued = 0
      vault.on(/^GET database\/creds\//, () => ({
        status: 200,
        body: {
          lease_id: `database/creds/app/${++issued}`,
          lease_duration: 8 * 3600,
          renewable: true,
          data: { username: `v-app-${issued}`, password: 'pw' },
        },
      }))
      vault.on(/revoke-self$/, () => ({ status: 204, body: null }))
      const sync = () =>
        service.mount(
          controllerRequest({
            namespace: 'shop',
            objects: [{ objectName: 'user', secretPath: 'database/creds/app', secretKey: 'username' }],
          }),
          deadline(),
        )
      return { vault, pool, sync, t0 }
    }

    const polled = creds()
    const first = await polled.sync()
    // The controller's default poll is 12 h: the sweeps in between find the identity in use.
    t.equal(await polled.pool.sweepIdle(polled.t0 + CONTROLLER_DEFAULT_POLL_MS), 0, 'not revoked before the next poll')
    const second = await polled.sync()
    t.equal(polled.vault.count(/login$/), 1, 'one login, reused by the next poll')
    t.equal(polled.vault.count(/revoke-self$/), 0, 'the token (and with it the lease) never revoked')
    t.equal(polled.vault.count(/^GET database\/creds\//), 1, 'one credential')
    t.same(
      second.objects.map((o) => o.version),
      first.objects.map((o) => o.version),
      'the Secret keeps the same credential',
    )

    // A SecretSync deleted: its identity goes after the idle time, its credential with it.
    const gone = creds()
    await gone.sync()
    t.equal(await gone.pool.sweepIdle(gone.t0 + SYNC_CONTROLLER_IDENTITY_IDLE_MS + 1000), 1, 'revoked once idle')
    t.equal(gone.vault.count(/revoke-self$/), 1)
  },
)

t.test('every object is answered with a version', async (t) => {
  const { service } = world(t)
  const objects = ['a', 'b', 'c'].map((n) => ({ objectName: n, secretPath: `secret/data/${n}`, secretKey: 'value' }))
  const result = await service.mount(controllerRequest({ namespace: 'shop', objects }), deadline())
  t.same(
    result.objects.map((o) => o.id),
    ['a', 'b', 'c'],
  )
  for (const o of result.objects) t.ok(o.version.length > 0, `${o.id} has a version`)
})

t.test('no object answered (all optional, none in Vault): refused, not an answer the controller rejects', async (t) => {
  const { service, vault } = world(t)
  vault.on(/^GET secret\/data\/gone/, () => {
    // Vault's own "nothing stored here": a 404 with an empty errors[].
    throw new VaultHttpError(404, [], undefined, { kind: 'errors', entries: 0 })
  })
  const objects = [{ objectName: 'maybe', secretPath: 'secret/data/gone', secretKey: 'value', optional: true }]
  const err = (await service
    .mount(controllerRequest({ namespace: 'shop', objects }), deadline())
    .catch((e) => e)) as ProviderError
  t.equal(err.code, 'NO_OBJECT_VERSIONS')
  t.match(err.message, /answers no object .*refuses an answer without object versions/)
})

t.test('files over 1 MiB: refused, naming the objects and their sizes', async (t) => {
  const { service, vault } = world(t)
  const big = 'x'.repeat(600 * 1024)
  vault.on(/^GET secret\/data\/big/, () => kvAnswer(big))
  const objects = [
    { objectName: 'small', secretPath: 'secret/data/small', secretKey: 'value' },
    { objectName: 'cert', secretPath: 'secret/data/big1', secretKey: 'value' },
    { objectName: 'bundle', secretPath: 'secret/data/big2', secretKey: 'value' },
  ]
  const err = (await service
    .mount(controllerRequest({ namespace: 'shop', objects }), deadline())
    .catch((e) => e)) as ProviderError
  t.equal(err.code, 'SECRET_TOO_LARGE')
  t.match(
    err.message,
    /the objects come to 1\.2 MiB \(\d+ bytes\), more than the 1\.0 MiB of the one Kubernetes Secret/,
  )
  t.match(
    err.message,
    /"cert" \(600\.0 KiB\), "bundle" \(600\.0 KiB\), "small" \(\d+ B\)/,
    'every object, largest first',
  )
  const fits = await service.mount(controllerRequest({ namespace: 'shop', objects: objects.slice(0, 2) }), deadline())
  t.equal(fits.objects.length, 2, '600 KiB and a little fit')
})

t.test('the size check: exactly 1 MiB fits, one byte more does not; long lists are bounded', async (t) => {
  const obj = (id: string, bytes: number): RenderedObject => ({
    id,
    version: 'v',
    files: [{ path: id, mode: 0o644, contents: Buffer.alloc(bytes) }],
  })
  t.doesNotThrow(() => checkSecretSyncAnswer([obj('a', KUBERNETES_SECRET_MAX_BYTES - 10), obj('b', 10)]))
  const many = Array.from({ length: MAX_NAMED_OBJECTS + 5 }, (_, i) => obj(`o${i}`, 80 * 1024))
  t.throws(() => checkSecretSyncAnswer(many), { code: 'SECRET_TOO_LARGE', message: /and 5 more;/ })
  t.throws(() => checkSecretSyncAnswer([obj('a', KUBERNETES_SECRET_MAX_BYTES + 1)]), { code: 'SECRET_TOO_LARGE' })
  t.throws(() => checkSecretSyncAnswer([{ ...obj('a', 1), version: '' }, obj('b', 1)]), {
    code: 'NO_OBJECT_VERSIONS',
    message: /objects "a" have no version/,
  })
})

t.test(
  'a class without a token for its audience: refused, naming the audience and the controller’s flag',
  async (t) => {
    const { service, vault } = world(t)
    const err = (await service
      .mount(
        controllerRequest({ namespace: 'shop', audiences: ['vault'], parameters: { audience: 'bao' } }),
        deadline(),
      )
      .catch((e) => e)) as ProviderError
    t.equal(err.code, 'NO_POD_TOKEN')
    t.match(
      err.message,
      /tokens for audiences "vault" but not for audience "bao"; the controller's --token-request-audience/,
    )
    const none = (await service
      .mount(controllerRequest({ namespace: 'shop', audiences: [] }), deadline())
      .catch((e) => e)) as ProviderError
    t.match(none.message, /passed no service-account token/)
    t.equal(vault.calls.length, 0, 'nothing reached Vault')
  },
)

t.test('as on a node: the allow-list, budgets and errors naming object, path, role and cause', async (t) => {
  const allowed = world(t, { allowlist: ['https://other.vault:8200'] })
  const refused = (await allowed.service
    .mount(controllerRequest({ namespace: 'shop' }), deadline())
    .catch((e) => e)) as ProviderError
  t.equal(refused.code, 'VAULT_ADDRESS_NOT_ALLOWED')
  t.equal(allowed.vault.calls.length, 0, 'no token sent to an address outside the allow-list')

  const { service, vault } = world(t, { budget: new NodeBudget({ mountBytes: 64 * 1024, nodeBytes: 1024 * 1024 }) })
  vault.on(/^GET secret\/data\/forbidden/, () => denied())
  const err = (await service
    .mount(
      controllerRequest({
        namespace: 'shop',
        objects: [{ objectName: 'db-password', secretPath: 'secret/data/forbidden', secretKey: 'value' }],
      }),
      deadline(),
    )
    .catch((e) => e)) as ProviderError
  t.equal(err.code, 'VAULT_PERMISSION_DENIED')
  t.match(err.message, /object "db-password"/)
  t.match(err.message, /secret\/data\/forbidden/)
  t.match(err.message, /role "app"/)
  t.match(err.message, /permission denied/)

  vault.on(/^GET secret\/data\/huge/, () => kvAnswer('y'.repeat(200 * 1024)))
  const over = (await service
    .mount(
      controllerRequest({
        namespace: 'shop',
        objects: [{ objectName: 'huge', secretPath: 'secret/data/huge', secretKey: 'value' }],
      }),
      deadline(),
    )
    .catch((e) => e)) as ProviderError
  t.equal(over.code, 'MOUNT_BUDGET_EXCEEDED', 'the Mount budget applies before the Secret’s limit')
})
