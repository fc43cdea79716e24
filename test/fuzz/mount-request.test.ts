// Property-based fuzzing of MountRequests (fast-check): at least 10,000
// generated requests through the real parse path (parseMountRequest, the
// function the gRPC adapter calls), then a sample through the real socket of
// the real daemon against a real OpenBao. Every case must get an answer:
// a MountSpec, or INVALID_ARGUMENT (FAILED_PRECONDITION for a missing pod
// token) with a message naming the field; never another exception, never a
// crash, and no case may allocate without bound.
import fc from 'fast-check'
import t from 'tap'
import { stringify } from 'yaml'
import { status as GrpcStatus } from '@grpc/grpc-js'
import type { VaultDefaults } from '../../src/config/config.js'
import { ProviderError } from '../../src/errors.js'
import { grpcStatusOf } from '../../src/server/grpc-status.js'
import { filePathProblem } from '../../src/request/file-paths.js'
import { parseMountRequest, type RawMountRequest } from '../../src/request/parse-request.js'
import { driverMount } from '../support/driver-client.js'
import { Fixture } from '../support/fixture.js'
import { connectProvider } from '../support/grpc-client.js'
import { findLeaks } from '../support/leaks.js'
import { makeTempDir } from '../support/tmp.js'

t.setTimeout(10 * 60_000)

const DEFAULTS: VaultDefaults = {
  address: 'http://127.0.0.1:8200',
  authMount: 'kubernetes',
  tls: { skipVerify: false },
}

const POD = {
  'csi.storage.k8s.io/pod.name': 'app-0',
  'csi.storage.k8s.io/pod.namespace': 'default',
  'csi.storage.k8s.io/pod.uid': '0b6c7f3e-1111-4a4a-9c9c-000000000001',
  'csi.storage.k8s.io/serviceAccount.name': 'app',
}

const FIELD_NAMES = [
  'objectName',
  'secretPath',
  'secretKey',
  'method',
  'secretArgs',
  'filePermission',
  'encoding',
  'objectVersion',
  // misspelt and unknown
  'objectname',
  'secretpath',
  'secret_key',
  'Method',
  'encodings',
  'permissions',
  'template',
  '',
]

const nastyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    '../etc/passwd',
    '/etc/passwd',
    'a//b',
    './a',
    'a/',
    '..data',
    '..',
    '.',
    'a/../b',
    'a\u0000b',
    'line\nbreak',
    'tab\there',
    '\u202ertl',
    '💥',
    'x'.repeat(300),
    'a/'.repeat(2100),
    '',
    ' ',
    'null',
    '~',
    '*alias',
    '&anchor x',
    '!!binary aGk=',
    '0640',
    '0o777',
    '99999999999999999999',
  ),
)

const yamlValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    nastyString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(nastyString, tie('value'), { maxKeys: 4 }),
  ),
})).value

const objectEntry = fc.oneof(
  // Mostly plausible objects with one or two fields off.
  fc.record(
    {
      objectName: nastyString,
      secretPath: fc.oneof(nastyString, fc.constantFrom('secret/data/app', 'v1/secret/data/app?version=2', '/v1/x')),
      secretKey: nastyString,
      method: fc.constantFrom('GET', 'get', 'PUT', 'POST', 'DELETE', 'PATCH', '', 'G E T'),
      encoding: fc.constantFrom('utf-8', 'base64', 'hex', 'rot13', 'UTF-8', ''),
      filePermission: fc.oneof(fc.integer({ min: -10, max: 70000 }), fc.constantFrom('0640', '0o640', 'rw', 0o644)),
      secretArgs: yamlValue,
    },
    { requiredKeys: ['objectName', 'secretPath'] },
  ),
  // Arbitrary maps with real, misspelt and unknown field names.
  fc.dictionary(fc.constantFrom(...FIELD_NAMES), yamlValue, { maxKeys: 6 }),
  // Not a map at all.
  yamlValue,
)

/** The `objects` parameter: YAML of generated entries, or something pathological. */
const objectsParam = fc.oneof(
  { weight: 6, arbitrary: fc.array(objectEntry, { maxLength: 6 }).map((a) => stringify(a)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      // YAML alias bomb ("billion laughs").
      [
        'a: &a ["x","x","x","x","x","x","x","x","x"]',
        ...Array.from(
          { length: 9 },
          (_, i) =>
            `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`,
        ),
      ].join('\n'),
      // Deep nesting.
      `${'['.repeat(5000)}${']'.repeat(5000)}`,
      `- objectName: a\n  secretPath: x\n  secretArgs: ${'{a: '.repeat(2000)}1${'}'.repeat(2000)}`,
      // Thousands of objects.
      stringify(Array.from({ length: 5000 }, (_, i) => ({ objectName: `o${i}`, secretPath: 'secret/data/x' }))),
      stringify(
        Array.from({ length: 999 }, (_, i) => ({ objectName: `o${i}`, secretPath: 'secret/data/x', secretKey: 'k' })),
      ),
      // Oversized.
      `- objectName: a\n  secretPath: ${'x'.repeat(600 * 1024)}`,
      '- objectName: a\n  secretPath: x\n- objectName: a\n  secretPath: y',
      '- objectName: a\n  secretPath: x\n- objectName: a/b\n  secretPath: y',
      '',
      '[]',
      '{}',
      '- ',
      '- null',
      '%YAML 1.1\n---\n- objectName: a\n  secretPath: x\n  filePermission: 0640',
      '- !!js/function "function(){}"',
      '- objectName: a\n  secretPath: x\n  <<: *missing',
    ),
  },
)

const attributeMap = fc.record(
  {
    roleName: fc.oneof(fc.constant('app'), nastyString),
    objects: objectsParam,
    vaultAddress: fc.oneof(
      fc.constantFrom(
        'https://vault:8200',
        'http://127.0.0.1:8200',
        'unix:///run/agent.sock',
        'ftp://x',
        'https://u:p@h',
        'not a url',
        'https://h/?q=1',
        'unix://',
      ),
      nastyString,
    ),
    vaultSkipTLSVerify: fc.constantFrom('true', 'false', 'maybe', 'TRUE', '1', ''),
    vaultAuthMountPath: fc.oneof(fc.constant('jwt'), nastyString),
    vaultKubernetesMountPath: nastyString,
    audience: nastyString,
    vaultTLSClientCertPath: nastyString,
    'csi.storage.k8s.io/serviceAccount.tokens': fc.oneof(
      fc.constant('{"vault":{"token":"x.y.z","expirationTimestamp":"2030-01-01T00:00:00Z"}}'),
      fc.string({ maxLength: 50 }),
      fc.constant('{"vault":{"token":5}}'),
      fc.constant('[]'),
    ),
  },
  { requiredKeys: ['objects'] },
)

/** attributes: usually a JSON object of strings; sometimes wrong types, no pod info, or not JSON at all. */
const attributesText = fc.oneof(
  { weight: 8, arbitrary: attributeMap.map((a) => JSON.stringify({ ...POD, ...a })) },
  { weight: 1, arbitrary: attributeMap.map((a) => JSON.stringify(a)) },
  {
    weight: 1,
    arbitrary: fc
      .dictionary(fc.string({ maxLength: 20 }), yamlValue, { maxKeys: 5 })
      .map((d) => JSON.stringify({ ...POD, ...d })),
  },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.string({ maxLength: 100 }),
      fc.json(),
      fc.constantFrom(
        '',
        'null',
        '[]',
        '"x"',
        '{',
        `{"roleName":"${'x'.repeat(1100 * 1024)}"}`,
        `${'['.repeat(100000)}`,
      ),
    ),
  },
)

/** Valid requests with small variations, so the accepting path is fuzzed too. */
const safeName = fc
  .stringMatching(/^[A-Za-z0-9_-]{1,12}(\/[A-Za-z0-9_.-]{1,12})?$/)
  .filter((n) => !n.startsWith('..') && !n.endsWith('/..') && !n.includes('/../') && !/(^|\/)\.\.?$/.test(n))
const validRequest: fc.Arbitrary<RawMountRequest> = fc
  .record({
    objects: fc.uniqueArray(
      fc.record(
        {
          objectName: safeName,
          secretPath: fc.constantFrom('secret/data/app', '/v1/secret/data/app?version=1', 'kv1/x', 'pki/issue/web'),
          secretKey: fc.constantFrom('password', 'a.b', 'x'),
          method: fc.constantFrom('GET', 'put', 'POST'),
          encoding: fc.constantFrom('utf-8', 'base64', 'hex'),
          filePermission: fc.constantFrom(0, 0o400, 0o640, 0o777),
          secretArgs: fc.dictionary(
            fc.constantFrom('common_name', 'ttl', 'x'),
            fc.oneof(fc.string({ maxLength: 10 }), fc.integer()),
          ),
        },
        { requiredKeys: ['objectName', 'secretPath'] },
      ),
      { minLength: 1, maxLength: 8, selector: (o) => o.objectName },
    ),
    audience: fc.constantFrom(undefined, 'vault', 'other'),
    vaultAuthMountPath: fc.constantFrom(undefined, 'jwt', 'kubernetes', 'auth/k8s-east'),
  })
  .filter(({ objects }) => {
    // No object may be both a file and the directory of another.
    const names = new Set(objects.map((o) => o.objectName))
    return objects.every((o) => !o.objectName.includes('/') || !names.has(o.objectName.split('/')[0]!))
  })
  .map(({ objects, audience, vaultAuthMountPath }) => {
    const attrs: Record<string, string> = { ...POD, roleName: 'app', objects: stringify(objects) }
    if (audience !== undefined) attrs.audience = audience
    if (vaultAuthMountPath !== undefined) attrs.vaultAuthMountPath = vaultAuthMountPath
    return { attributes: JSON.stringify(attrs), secrets: 'null', permission: '420' }
  })

const anyRequest: fc.Arbitrary<RawMountRequest> = fc.record({
  attributes: attributesText,
  // Mostly what the driver sends, so most cases reach the attributes and objects.
  secrets: fc.oneof(
    { weight: 6, arbitrary: fc.constant('null') },
    { weight: 1, arbitrary: fc.constantFrom('', '{}', '[]', '{"a":1}', 'nope', '{"a":"b"}') },
    { weight: 1, arbitrary: fc.json() },
  ),
  permission: fc.oneof(
    { weight: 6, arbitrary: fc.constant('420') },
    { weight: 1, arbitrary: fc.constantFrom('0', '511', '512', '-1', '"420"', '4.2', '', ' 420 ', '0644') },
    { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
  ),
})

const rawRequest = fc.oneof({ weight: 1, arbitrary: validRequest }, { weight: 3, arbitrary: anyRequest })

const NAMES_THE_FIELD =
  /attributes|secrets|permission|parameter|object|roleName|vault[A-Za-z]+|Vault address|audience|mount|csi\.storage\.k8s\.io|token|field|key|YAML|encoding|method/i

interface Tally {
  cases: number
  accepted: number
  refused: Map<string, number>
}

/** The property: an answer, of the right kind, quickly, within bounded memory. */
function checkOne(raw: RawMountRequest, tally: Tally): void {
  tally.cases += 1
  const started = process.hrtime.bigint()
  let spec: ReturnType<typeof parseMountRequest> | undefined
  let refusal: unknown
  try {
    spec = parseMountRequest(raw, DEFAULTS)
  } catch (err) {
    refusal = err
  }
  if (spec) {
    tally.accepted += 1
    if (spec.objects.length === 0) throw new Error('accepted a Mount without objects')
    for (const o of spec.objects) {
      const problem = filePathProblem(o.objectName)
      if (problem) throw new Error(`accepted object name ${JSON.stringify(o.objectName)} which ${problem}`)
    }
  } else {
    const err = refusal
    if (!(err instanceof ProviderError)) throw new Error(`not a ProviderError: ${String(err)}`, { cause: err })
    const status = grpcStatusOf(err.code)
    if (status !== GrpcStatus.INVALID_ARGUMENT && status !== GrpcStatus.FAILED_PRECONDITION) {
      throw new Error(`wrong status ${status} (${err.code}): ${err.message}`, { cause: err })
    }
    if (!NAMES_THE_FIELD.test(err.message)) throw new Error(`message names no field: ${err.message}`, { cause: err })
    if (err.message.length > 2_000) throw new Error(`message of ${err.message.length} chars`, { cause: err })
    tally.refused.set(err.code, (tally.refused.get(err.code) ?? 0) + 1)
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  if (ms > 2_000) throw new Error(`one case took ${ms.toFixed(0)} ms`)
}

const SEED = Number(process.env.VCP_FUZZ_SEED ?? 20261129)

t.test('10,000+ generated MountRequests through the real parse path', async (t) => {
  const tally: Tally = { cases: 0, accepted: 0, refused: new Map() }
  const heapBefore = process.memoryUsage().heapUsed
  let peakHeap = heapBefore
  const details = fc.check(
    fc.property(rawRequest, (raw) => {
      checkOne(raw, tally)
      if (tally.cases % 500 === 0) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
    }),
    { numRuns: 10_000, seed: SEED, endOnFailure: true },
  )
  // Counterexamples can be megabytes (that is the point); report the cause and a prefix.
  const example = JSON.stringify(details.counterexample ?? null).slice(0, 600)
  t.notOk(
    details.failed,
    `seed ${details.seed}: ${(details.errorInstance as Error | null)?.message ?? 'no failure'}; counterexample: ${example}`,
  )
  // Plus every pathological constant at least once, whatever the generator drew.
  t.ok(tally.cases >= 10_000, `${tally.cases} cases`)
  t.ok(tally.accepted > 100, `${tally.accepted} accepted (the generator also makes valid requests)`)
  t.ok(
    peakHeap - heapBefore < 512 * 1024 * 1024,
    `heap grew at most ${((peakHeap - heapBefore) / 1048576).toFixed(0)} MiB`,
  )
  t.comment(
    `fuzz (parse): ${tally.cases} cases, ${tally.accepted} accepted, refused ${JSON.stringify(Object.fromEntries(tally.refused))}`,
  )
})

t.test('a sample through the real socket of the daemon (real OpenBao behind it)', async (t) => {
  // Its own sample, drawn with the same generator and seed: the test checks as much run alone.
  const samples = fc.sample(rawRequest, { numRuns: 400, seed: SEED })
  const sampleTally: Tally = { cases: 0, accepted: 0, refused: new Map() }
  for (const raw of samples) checkOne(raw, sampleTally)
  t.equal(samples.length, 400, '400 generated requests')
  t.ok(sampleTally.accepted > 0, `${sampleTally.accepted} of them parse as a Mount (they reach Vault)`)
  t.ok(sampleTally.refused.size > 0, `the others are refused with ${[...sampleTally.refused.keys()].join(', ')}`)
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  const client = connectProvider(fx.provider.socketPath)
  t.teardown(() => client.close())
  const codes = new Map<string, number>()
  const bad: string[] = []
  for (const raw of samples) {
    const r = await client.mount(
      { attributes: raw.attributes, secrets: raw.secrets, permission: raw.permission },
      20_000,
    )
    codes.set(r.grpcCode, (codes.get(r.grpcCode) ?? 0) + 1)
    if (r.grpcCode === 'Unknown' || r.grpcCode === 'Internal') bad.push(`${r.grpcCode}: ${r.message}`)
  }
  // And some through the driver's own client (one process per Mount).
  const target = await makeTempDir('vcp-fuzz-target-')
  t.teardown(() => target.cleanup())
  // (The driver always sends a permission; the client tool refuses an empty one.)
  const viaDriver = samples.filter((r) => r.permission.trim() !== '').slice(0, 40)
  t.equal(viaDriver.length, 40, '40 samples for the driver client')
  let driverAnswers = 0
  for (const raw of viaDriver) {
    const r = await driverMount({
      socketDir: fx.provider.socketDir,
      provider: 'vault',
      targetPath: target.path,
      permission: raw.permission,
      attributes: raw.attributes,
      secrets: raw.secrets,
      timeoutMs: 20_000,
    })
    driverAnswers += 1
    // Unknown with GRPCProviderError would be a provider status without a real code.
    if (r.grpcCode === 'Unknown' && r.errorCode === 'GRPCProviderError') bad.push(`driver client: ${r.message}`)
    if (r.grpcCode === 'Internal') bad.push(`driver client: ${r.message}`)
  }
  t.equal(driverAnswers, 40, 'the driver client got an answer for each')
  t.same(bad.slice(0, 5), [], 'no answer without a real status, no INTERNAL')
  t.equal(
    [...codes.values()].reduce((a, b) => a + b, 0),
    400,
    'every socket Mount was answered',
  )
  t.equal(fx.provider.child.exitCode, null, 'the daemon is still running')
  t.comment(
    `fuzz (socket): ${samples.length} via gRPC + 40 via the driver client; codes ${JSON.stringify(Object.fromEntries(codes))}`,
  )
  const logs = await fx.provider.logs()
  t.same(findLeaks(logs, fx.issuedJwts), [], 'no JWT or token in the log')
  t.notMatch(logs, /unhandled promise rejection/)
})
