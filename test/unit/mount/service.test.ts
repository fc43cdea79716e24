// The Mount use case: the log line of a request that does not parse still names who asked (from the
// raw attributes, bounded), never the rest of the request; an answer larger than the driver accepts is
// refused by the Mount itself (one failure line, one failure metric), whoever drives it; and a Mount
// that would only be refused again is refused at once, for the same pod and objects only. Vault is
// the fake transport (test/support/fake-vault.ts): these are the service's own decisions.
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import type { ErrorCode } from '../../../src/errors.js'
import { ephemeralKey } from '../../../src/hmac/hmac-key.js'
import { NodeBudget } from '../../../src/mount/budget.js'
import { BUDGET_REFUSAL_MEMORY_MS, RememberedRefusals } from '../../../src/mount/refusals.js'
import { RenderTurns } from '../../../src/mount/render-turns.js'
import { MountService, type MountServiceOptions } from '../../../src/mount/service.js'
import { MAX_LOGGED_STRING_CHARS, createLogger } from '../../../src/observability/logger.js'
import { ObjectsCache } from '../../../src/request/objects-cache.js'
import { Deadline } from '../../../src/util/deadline.js'
import { SessionPool } from '../../../src/vault/sessions/pool.js'
import { ANY_ADDRESS, FakeVault, NO_BREAKER, fakePoolOptions, kvAnswer, loginAnswer } from '../../support/fake-vault.js'
import { signServiceAccountJwt } from '../../support/jwt.js'
import { ManualTime } from '../../support/manual-time.js'

const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
/** The services' clock, the pools' and the Mounts' deadlines': nothing here waits on it. */
const time = new ManualTime()

/** A Mount service logging into `lines`, with its own instance of every collaborator. */
function serviceWithLog(more: Partial<MountServiceOptions> = {}): {
  service: MountService
  lines: Array<Record<string, unknown>>
} {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l))
      cb()
    },
  })
  const service = new MountService({
    // Parsing fails before any of these is used, unless a test gives its own.
    pool: undefined as never,
    kube: undefined,
    allowlist: ANY_ADDRESS,
    breakers: NO_BREAKER,
    hmacKey: undefined as never,
    logger: createLogger('info', sink),
    vaultDefaults: { authMount: 'kubernetes', tls: { skipVerify: false } },
    objectsCache: new ObjectsCache(),
    budget: new NodeBudget({ mountBytes: 16 * 1024 * 1024, nodeBytes: 64 * 1024 * 1024 }),
    renderTurns: new RenderTurns(),
    refusals: new RememberedRefusals(time),
    time,
    maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
    ...more,
  })
  return { service, lines }
}

const pod = {
  'csi.storage.k8s.io/pod.name': 'web-0',
  'csi.storage.k8s.io/pod.namespace': 'shop',
  secretProviderClass: 'web-secrets',
}

t.test('a refused request’s log line names the pod and the SecretProviderClass', async (t) => {
  const { service, lines } = serviceWithLog()
  const attributes = JSON.stringify({
    ...pod,
    roleName: 'web',
    vaultAddress: 'https://vault.example:8200',
    objects: '- objectName: x\n  secretPath: secret/data/x\n  secretKeyz: y\n',
    'csi.storage.k8s.io/serviceAccount.tokens': '{"vault":{"token":"eyJhbGciOi.not-logged.x"}}',
  })
  await t.rejects(
    service.mount({ attributes, secrets: 'null', permission: '420' }, Deadline.in(5000, undefined, time)),
    {
      code: 'BAD_OBJECT',
    },
  )
  const line = lines.find((l) => l.msg === 'mount')
  t.match(line, { outcome: 'failure', pod: 'shop/web-0', secretProviderClass: 'web-secrets' })
  t.notMatch(JSON.stringify(lines), /eyJhbGciOi|secretKeyz: y|vault\.example/, 'nothing else of the request')
})

t.test('pod-controlled names are bounded; unparseable attributes log no names', async (t) => {
  const { service, lines } = serviceWithLog()
  const long = 'n'.repeat(5000)
  await t.rejects(
    service.mount(
      {
        attributes: JSON.stringify({ ...pod, secretProviderClass: long, 'csi.storage.k8s.io/pod.name': long }),
        secrets: 'null',
        permission: '420',
      },
      Deadline.in(5000, undefined, time),
    ),
  )
  await t.rejects(
    service.mount({ attributes: '{not json', secrets: 'null', permission: '420' }, Deadline.in(5000, undefined, time)),
  )
  const [first, second] = lines.filter((l) => l.msg === 'mount')
  const cut = `${'n'.repeat(MAX_LOGGED_STRING_CHARS)}…`
  t.equal(first!.secretProviderClass, cut, `${MAX_LOGGED_STRING_CHARS} characters and an ellipsis`)
  t.equal(first!.pod, `shop/${cut}`)
  t.equal(second!.pod, undefined)
  t.equal(second!.secretProviderClass, undefined)
  t.equal(second!.outcome, 'failure')
})

const VAULT = 'https://vault.test:8200'

/** A node Mount of pod shop/<name> (service account web) with the driver's token for it. */
function podRequest(
  name: string,
  uid: string,
  objects: string,
): { attributes: string; secrets: string; permission: string } {
  const token = signServiceAccountJwt({
    namespace: 'shop',
    serviceAccount: 'web',
    podName: name,
    podUid: uid,
    audience: 'vault',
  })
  return {
    attributes: JSON.stringify({
      roleName: 'web',
      vaultAddress: VAULT,
      objects,
      'csi.storage.k8s.io/pod.name': name,
      'csi.storage.k8s.io/pod.uid': uid,
      'csi.storage.k8s.io/pod.namespace': 'shop',
      'csi.storage.k8s.io/serviceAccount.name': 'web',
      'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({ vault: { token } }),
    }),
    secrets: 'null',
    permission: '420',
  }
}

/** A service over a fake Vault whose secret/data/<name> holds `sizes[name]` bytes; Mount outcomes recorded. */
function overVault(t: Test, sizes: Record<string, number>, more: Partial<MountServiceOptions> = {}) {
  const vault = new FakeVault(VAULT)
  vault.on(/login$/, () => loginAnswer('hvs.web'))
  vault.on(/^GET secret\/data\//, (c) => kvAnswer('x'.repeat(sizes[c.path.slice('secret/data/'.length)] ?? 0)))
  const finished: Array<[string, ErrorCode | undefined]> = []
  const mountObserver = {
    mountStarted: () => undefined,
    mountFinished: (outcome: 'success' | 'failure', code: ErrorCode | undefined) => finished.push([outcome, code]),
  }
  const logger = createLogger('off')
  const pool = new SessionPool(fakePoolOptions(logger, { get: async () => vault }, time))
  t.teardown(() => pool.close())
  const world = serviceWithLog({ pool, hmacKey: ephemeralKey(), mountObserver, ...more })
  return { ...world, vault, finished }
}

const OBJECTS = '- objectName: big\n  secretPath: secret/data/big\n  secretKey: value\n'

t.test('an answer over -max-response-size: one failure line and one failure metric, RESPONSE_TOO_LARGE', async (t) => {
  const budget = new NodeBudget({ mountBytes: 16 * 1024 * 1024, nodeBytes: 64 * 1024 * 1024 })
  const { service, lines, finished } = overVault(t, { big: 2048, small: 10 }, { maxResponseBytes: 1024, budget })
  const err = await service
    .mount(podRequest('web-0', 'uid-0', OBJECTS), Deadline.in(30_000, undefined, time))
    .catch((e: unknown) => e)
  t.match(err, { code: 'RESPONSE_TOO_LARGE' })
  t.match(
    (err as Error).message,
    /^the Mount's files come to 2\.\d KiB \(\d+ bytes\), more than the 1\.0 KiB the driver accepts \(provider flag -max-response-size, matching the driver's --max-call-recv-msg-size\); largest objects: "big" \(2\.0 KiB\)$/,
  )
  const mountLines = lines.filter((l) => l.msg === 'mount')
  t.equal(mountLines.length, 1, 'logged once')
  t.match(mountLines[0], { outcome: 'failure', code: 'RESPONSE_TOO_LARGE', pod: 'shop/web-0' })
  t.same(finished, [['failure', 'RESPONSE_TOO_LARGE']], 'counted as a failure, never as a success')
  t.equal(budget.bytesInUse, 0, "the Mount's budget is returned")

  const fits = await service.mount(
    podRequest('web-0', 'uid-0', '- objectName: small\n  secretPath: secret/data/small\n  secretKey: value\n'),
    Deadline.in(30_000, undefined, time),
  )
  t.equal(fits.objects.length, 1, 'an answer within the limit goes through')
  t.same(finished[1], ['success', undefined])
})

t.test(
  'a Mount over its own budget is refused again at once: the same pod and objects only, for a while',
  async (t) => {
    let now = 1_000_000
    const { service, vault, finished } = overVault(
      t,
      { big: 4096 },
      {
        budget: new NodeBudget({ mountBytes: 1024, nodeBytes: 64 * 1024 }),
        refusals: new RememberedRefusals({ now: () => now }),
      },
    )
    const reads = (): number => vault.count(/^GET secret\/data\/big/)
    const mount = (name: string, uid: string, objects = OBJECTS) =>
      service.mount(podRequest(name, uid, objects), Deadline.in(30_000, undefined, time)).catch((e: unknown) => e)
    const first = await mount('web-0', 'uid-0')
    t.match(first, { code: 'MOUNT_BUDGET_EXCEEDED' })
    t.equal(reads(), 1)
    // The same objects in another text (JSON, not YAML): parsed apart, and still the same request.
    const again = await mount(
      'web-0',
      'uid-0',
      JSON.stringify([{ objectName: 'big', secretPath: 'secret/data/big', secretKey: 'value' }]),
    )
    t.equal(again, first, 'the same refusal')
    t.equal(reads(), 1, 'without reading Vault again')
    t.same(finished.slice(0, 2), [
      ['failure', 'MOUNT_BUDGET_EXCEEDED'],
      ['failure', 'MOUNT_BUDGET_EXCEEDED'],
    ])
    await mount('web-1', 'uid-1')
    t.equal(reads(), 2, 'another pod is not answered by it')
    now += BUDGET_REFUSAL_MEMORY_MS
    await mount('web-0', 'uid-0')
    t.equal(reads(), 3, 'forgotten after the memory time')
  },
)
