// Issue 9, classes 2 and 4 and variations: what a pod can put in its Mount request (the
// `objects` YAML, free-text parameters, the attributes and secrets fields, many or deep file
// names) is bounded before it is used, against the real daemon and a real OpenBao while a
// victim pod mounts.
import t, { type Test } from 'tap'
import { exclusiveSuite } from '../support/adversary.js'
import { expectAttack, finishSuite, startWorld, ANY_ROLE, type World } from '../support/adversary-world.js'

t.setTimeout(20 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

const OBJECTS_CAP = 256 * 1024
const obj = [{ objectName: 'password', secretPath: 'secret/data/victim', secretKey: 'password' }]

interface Case {
  klass: string
  name: string
  /** Attributes for attempt i (built before the attack starts). */
  attributes: (w: World) => string | ((i: number) => string)
  secrets?: string
  code: string
  message: RegExp[]
  concurrency?: number
  repeat?: boolean | number
}

function raw(w: World, params: Record<string, string>): string {
  return w.attrs({ objects: obj, ...params })
}

/** YAML text of `n` objects, each `line(i)`. */
function objectsText(n: number, line: (i: number) => string): string {
  const out: string[] = []
  for (let i = 0; i < n; i++) out.push(line(i))
  return out.join('\n')
}

const billionLaughs = [
  'a: &a ["x","x","x","x","x","x","x","x","x","x"]',
  'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]',
  'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]',
  'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]',
  'e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]',
  'f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]',
  'g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]',
  'h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]',
  'objects: [*h]',
].join('\n')

const CASES: Case[] = [
  {
    klass: '2',
    name: 'objects: 250 KB of nested flow collections ([[[…]]])',
    attributes: (w) => raw(w, { objects: `${'['.repeat(125_000)}${']'.repeat(125_000)}` }),
    code: 'InvalidArgument',
    message: [/parameter "objects"/],
  },
  {
    klass: '2',
    name: 'objects: 250 KB of nested maps ({a: {a: …}})',
    attributes: (w) => raw(w, { objects: `${'{a: '.repeat(50_000)}1${'}'.repeat(50_000)}` }),
    code: 'InvalidArgument',
    message: [/parameter "objects"/],
  },
  {
    klass: '2',
    name: 'objects: 120,000 tiny flow nodes ([a,a,a,…])',
    attributes: (w) => raw(w, { objects: `[${'a,'.repeat(120_000)}a]` }),
    code: 'InvalidArgument',
    message: [/parameter "objects"/],
  },
  {
    klass: 'own',
    name: 'objects: a YAML alias bomb (10^8 nodes from 9 lines)',
    attributes: (w) => raw(w, { objects: billionLaughs }),
    code: 'InvalidArgument',
    message: [/parameter "objects"/],
  },
  {
    klass: '2',
    name: 'objects: 300 KB (over -max-objects-size)',
    attributes: (w) =>
      raw(w, { objects: `# ${'x'.repeat(300 * 1024)}\n- objectName: a\n  secretPath: secret/data/victim\n` }),
    code: 'InvalidArgument',
    message: [/parameter "objects"/, new RegExp(`larger than ${OBJECTS_CAP} bytes \\(-max-objects-size\\)`)],
  },
  {
    klass: '2',
    name: 'objects: 60 distinct 200 KB texts, one per attempt (parse cache bounded in bytes)',
    attributes: (w) => {
      const texts = Array.from(
        { length: 60 },
        (_, i) =>
          `# ${String(i).repeat(1)}${'y'.repeat(200 * 1024)}\n- objectName: a\n  secretPath: secret/data/missing-${i}\n`,
      )
      const attrs = texts.map((objects) => raw(w, { objects }))
      return (i: number) => attrs[i % attrs.length]!
    },
    code: 'NotFound',
    message: [/object "a"/],
  },
  {
    klass: 'own',
    name: 'attributes: 2 MiB (over the 1 MiB attribute cap)',
    attributes: (w) => raw(w, { padding: 'p'.repeat(2 * 1024 * 1024) }),
    code: 'InvalidArgument',
    message: [/attributes are larger than/],
  },
  {
    klass: 'own',
    name: 'secrets field: 3 MiB',
    attributes: (w) => raw(w, {}),
    secrets: JSON.stringify({ junk: 's'.repeat(3 * 1024 * 1024) }),
    code: 'InvalidArgument',
    message: [/secrets are larger than/],
  },
  {
    klass: 'own',
    name: 'a 6 MiB MountRequest (over gRPC’s 4 MiB receive limit)',
    attributes: (w) => raw(w, { padding: 'p'.repeat(6 * 1024 * 1024) }),
    code: 'ResourceExhausted',
    message: [/larger than max/i],
    // A bounded burst: 20 oversized requests back to back (the pod's retries are minutes apart).
    repeat: 20,
  },
  {
    klass: 'own',
    name: 'attributes: 5000 keys',
    attributes: (w) => {
      const extra: Record<string, string> = {}
      for (let i = 0; i < 5000; i++) extra[`k${i}`] = 'v'
      return raw(w, extra)
    },
    code: 'InvalidArgument',
    message: [/attributes has 50\d\d keys; at most 512/],
  },
  {
    klass: '4',
    name: 'roleName: 200,000 characters',
    attributes: (w) => raw(w, { roleName: `r${'\n a'.repeat(66_666)}` }),
    code: 'InvalidArgument',
    message: [/parameter "roleName" is longer than 256 characters/],
  },
  ...(['vaultNamespace', 'audience', 'vaultAuthMountPath', 'vaultTLSServerName'] as const).map((p): Case => ({
    klass: '4',
    name: `${p}: 100,000 characters`,
    attributes: (w) => raw(w, { [p]: 'n'.repeat(100_000) }),
    code: 'InvalidArgument',
    message: [new RegExp(`parameter "${p}" is longer than 256 characters`)],
  })),
  {
    klass: '4',
    name: 'vaultAddress: 100,000 characters',
    attributes: (w) => raw(w, { vaultAddress: `http://127.0.0.1:1/${'v'.repeat(100_000)}` }),
    code: 'InvalidArgument',
    message: [/parameter "vaultAddress" is longer than 2048 characters/],
  },
  {
    klass: '4',
    name: 'file paths: 120 nested names (a, a/a, a/a/a, …)',
    attributes: (w) =>
      raw(w, {
        objects: objectsText(
          120,
          (i) =>
            `- objectName: "${Array.from({ length: i + 1 }, () => 'a').join('/')}"\n  secretPath: secret/data/victim`,
        ),
      }),
    code: 'InvalidArgument',
    message: [/object "a(\/a)*"/, /directory/],
  },
  {
    klass: 'own',
    name: 'file paths: 990 distinct 30-deep names (no conflict; the pod’s role may read nothing)',
    attributes: (w) =>
      raw(w, {
        roleName: ANY_ROLE,
        objects: objectsText(
          990,
          (i) =>
            `- objectName: "${Array.from({ length: 30 }, (_, j) => String.fromCharCode(97 + ((i >> (j % 11)) % 26))).join('/')}${i}"\n  secretPath: secret/data/victim`,
        ),
      }),
    code: 'PermissionDenied',
    message: [/objects "a\/a\/a/],
  },
  {
    klass: 'own',
    name: 'objects: 4000 tiny objects',
    attributes: (w) =>
      raw(w, { objects: objectsText(4000, (i) => `- {objectName: o${i}, secretPath: secret/data/victim}`) }),
    code: 'InvalidArgument',
    message: [/parameter "objects"/],
  },
  {
    klass: 'own',
    name: 'objectName ../../etc/passwd',
    attributes: (w) => raw(w, { objects: '- objectName: ../../etc/passwd\n  secretPath: secret/data/victim\n' }),
    code: 'InvalidArgument',
    message: [/objectName|file path/i, /\.\.\/\.\.\/etc\/passwd/],
  },
  {
    klass: 'own',
    name: 'objectName with a NUL byte',
    attributes: (w) => raw(w, { objects: '- objectName: "a\\0b"\n  secretPath: secret/data/victim\n' }),
    code: 'InvalidArgument',
    message: [/objectName|file path/i],
  },
  {
    klass: 'own',
    name: 'secretArgs: 200 KB of nested maps',
    attributes: (w) =>
      raw(w, {
        objects: `- objectName: a\n  secretPath: secret/data/victim\n  method: PUT\n  secretArgs: ${'{a: '.repeat(40_000)}1${'}'.repeat(40_000)}\n`,
      }),
    code: 'InvalidArgument',
    message: [/parameter "objects"|secretArgs/],
  },
  // Issue 37, class 7: parameters that become a request header or a TLS name are checked where
  // they are parsed (on 3964ba9 a CR/LF came back as UNAVAILABLE, a retryable outage, from the
  // HTTP library, and non-Latin-1 text went out as raw bytes).
  {
    klass: '37.7',
    name: 'vaultNamespace with CR/LF and a header after it',
    attributes: (w) => raw(w, { vaultNamespace: 'team-a\r\nX-Injected: yes' }),
    code: 'InvalidArgument',
    message: [/parameter "vaultNamespace"/, /\\r\\n/],
  },
  {
    klass: '37.7',
    name: 'vaultNamespace in non-Latin-1 letters',
    attributes: (w) => raw(w, { vaultNamespace: 'команда/团队' }),
    code: 'InvalidArgument',
    message: [/parameter "vaultNamespace"/],
  },
  {
    klass: '37.7',
    name: 'vaultTLSServerName with CR/LF',
    attributes: (w) => raw(w, { vaultTLSServerName: 'vault.example.com\r\nX-Injected: yes' }),
    code: 'InvalidArgument',
    message: [/parameter "vaultTLSServerName"/],
  },
  // Issue 37, class 6: a secret nested thousands of levels deep (OpenBao keeps it: Go's JSON reader
  // allows 10,000 levels) once overflowed a recursive walk: INTERNAL, and a stack trace in the log.
  ...(
    [
      ['arrays 5000 levels deep', 'deep-arrays', undefined],
      ['arrays 5000 levels deep, one key selected', 'deep-arrays', 'x'],
      ['maps 500 levels deep', 'deep-maps', undefined],
    ] as const
  ).map(([what, path, secretKey]): Case => ({
    klass: '37.6',
    name: `a secret value of ${what}`,
    attributes: (w) =>
      raw(w, {
        objects: `- objectName: deep\n  secretPath: secret/data/${path}\n${secretKey ? `  secretKey: ${secretKey}\n` : ''}`,
      }),
    code: 'FailedPrecondition',
    message: [/object "deep"/, /nested more than \d+ levels/],
  })),
  {
    klass: 'own',
    name: '16 attackers at once: nested flow collections',
    attributes: (w) => raw(w, { objects: `${'['.repeat(100_000)}${']'.repeat(100_000)}` }),
    code: 'InvalidArgument',
    message: [/parameter "objects"/],
    concurrency: 16,
  },
]

t.test('hostile Mount requests', async (t) => {
  const w = await startWorld()
  t.teardown(() => w.stop())
  // With the root token: what a tenant with write access to its own KV path can store.
  const deep = (open: string, close: string, levels: number): string => `${open.repeat(levels)}1${close.repeat(levels)}`
  for (const [path, value] of [
    ['deep-arrays', deep('[', ']', 5000)],
    ['deep-maps', deep('{"k":', '}', 500)],
  ] as const) {
    const put = await w.bao.api('POST', `/v1/secret/data/${path}`, `{"data":{"x":${value}}}`)
    t.equal(put.status, 200, `kv put ${path}`)
  }
  for (const c of CASES) {
    await t.test(c.name, async (t: Test) => {
      const built = c.attributes(w)
      const attributes = typeof built === 'string' ? () => built : built
      await expectAttack(t, w, {
        klass: c.klass,
        name: c.name,
        attempt: (i) => w.mount(attributes(i), c.secrets ?? 'null', 20_000),
        expect: { code: c.code, message: c.message },
        concurrency: c.concurrency ?? 1,
        ...(c.repeat === undefined ? {} : { repeat: c.repeat }),
      })
    })
  }
  await t.test('deep answers left no internal error and no stack trace in the log', async (t) => {
    const lines = await w.daemon.provider.logLines()
    t.same(
      lines.filter((l) => l.msg === 'unexpected error during mount' || l.level === 'error' || l.level === 'fatal'),
      [],
      'no error line',
    )
    t.notOk((await w.daemon.provider.logs()).includes('RangeError'), 'no RangeError (stack overflow) anywhere')
  })
  await t.test('roleName is never logged at full length', async (t) => {
    const logs = await w.daemon.provider.logs()
    t.notMatch(logs, /(\\n a){300}/, 'no log line carries 300+ characters of the hostile roleName')
  })
  await finishSuite(t, w, 'input')
})
