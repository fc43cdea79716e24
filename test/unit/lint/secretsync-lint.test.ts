// lint on SecretSyncs (src/lint/secretsync-lint.ts), through lintYaml as the command runs it: each
// SecretSync resolved to its class among every file read (same namespace), its sourcePaths against the
// files the class writes, what the API server refuses in it, and once per class what does not work
// under the Sync Controller (audience, secretObjects, no object version, objects read for nothing, one
// answer shared by one service account).
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { stringify } from 'yaml'
import type { VaultDefaults } from '../../../src/config/config.js'
import { SECRETSYNC_LINT_CODES, SecretSyncCollector } from '../../../src/lint/secretsync-lint.js'
import { lintMarkdown, lintYaml, type LintProblem, type LintResult } from '../../../src/lint/spc-lint.js'
import { PACKAGE_ROOT } from '../../../src/package-info.js'

const DEFAULTS: VaultDefaults = { authMount: 'kubernetes', tls: { skipVerify: false }, address: 'https://vault:8200' }

interface Linted {
  /** What spc-lint reported on the classes themselves. */
  classes: LintResult
  problems: LintProblem[]
  checked: number
  skipped: number
}

/** Every file into one collector, as `vault-csi-provider lint a.yaml b.yaml` reads them. */
function lintFiles(files: Record<string, string>, opts: { audiences?: string[]; provider?: string } = {}): Linted {
  const secretSyncs = new SecretSyncCollector({ audiences: opts.audiences ?? ['vault'], provider: opts.provider })
  const classes: LintResult = { problems: [], checked: 0, skipped: 0 }
  for (const [file, text] of Object.entries(files)) {
    lintYaml(text, file, { vaultDefaults: DEFAULTS, provider: opts.provider, secretSyncs }, classes)
  }
  return { classes, ...secretSyncs.lint() }
}

const codes = (l: Linted): string[] => l.problems.map((p) => p.code).sort()

function spc(o: {
  name?: string
  namespace?: string | null
  provider?: string
  objects?: unknown[]
  parameters?: Record<string, string>
  secretObjects?: unknown[]
}): string {
  return stringify({
    apiVersion: 'secrets-store.csi.x-k8s.io/v1',
    kind: 'SecretProviderClass',
    metadata: { name: o.name ?? 'app-db', ...(o.namespace === null ? {} : { namespace: o.namespace ?? 'shop' }) },
    spec: {
      provider: o.provider ?? 'vault',
      ...(o.secretObjects ? { secretObjects: o.secretObjects } : {}),
      parameters: {
        roleName: 'shop-sync',
        objects: stringify(o.objects ?? [{ objectName: 'password', secretPath: 'secret/data/db', secretKey: 'pw' }]),
        ...o.parameters,
      },
    },
  })
}

function sync(o: {
  name?: string
  namespace?: string | null
  className?: string
  serviceAccount?: string
  type?: string
  data?: Array<{ sourcePath?: string; targetKey?: string }>
  apiVersion?: string
}): string {
  return stringify({
    apiVersion: o.apiVersion ?? 'secret-sync.x-k8s.io/v1alpha1',
    kind: 'SecretSync',
    metadata: { name: o.name ?? 'app-db', ...(o.namespace === null ? {} : { namespace: o.namespace ?? 'shop' }) },
    spec: {
      serviceAccountName: o.serviceAccount ?? 'app',
      secretProviderClassName: o.className ?? 'app-db',
      secretObject: { type: o.type ?? 'Opaque', data: o.data ?? [{ sourcePath: 'password', targetKey: 'password' }] },
    },
  })
}

const docs = (...d: string[]): string => d.join('---\n')

t.test('the example of docs/sync-controller.md lints clean, its SecretSync counted', async (t) => {
  const file = join(PACKAGE_ROOT, 'docs', 'sync-controller.md')
  const secretSyncs = new SecretSyncCollector({ audiences: ['vault'] })
  const classes = lintMarkdown(await readFile(file, 'utf8'), file, { vaultDefaults: DEFAULTS, secretSyncs })
  const result = secretSyncs.lint()
  t.same([...classes.problems, ...result.problems], [])
  t.equal(result.checked, 1)
  t.ok(classes.checked >= 1)
})

t.test('a SecretSync finds its class in its own namespace, in any file read', async (t) => {
  const two = lintFiles({ 'spc.yaml': spc({}), 'sync.yaml': sync({}) })
  t.same(two.problems, [], 'class and SecretSync in two files')
  t.equal(two.checked, 1)
  t.equal(two.classes.skipped, 0, 'a SecretSync is not an "other document"')

  const unset = lintFiles({ 'a.yaml': docs(spc({ namespace: null }), sync({ namespace: null })) })
  t.same(unset.problems, [], 'neither names a namespace: both go where they are applied')

  const missing = lintFiles({ 'a.yaml': sync({ className: 'nope' }) })
  t.match(missing.problems, [
    {
      file: 'a.yaml',
      line: 8,
      severity: 'error',
      code: 'SECRETSYNC_CLASS',
      secretSync: 'shop/app-db',
      message: /^spec.secretProviderClassName "nope": no SecretProviderClass of that name in namespace "shop"/,
    },
  ])

  const elsewhere = lintFiles({ 'a.yaml': docs(spc({ namespace: 'bank' }), sync({})) })
  t.match(elsewhere.problems, [{ code: 'SECRETSYNC_CLASS', message: /there is one in "bank"/ }])

  const foreign = lintFiles({ 'a.yaml': docs(spc({ provider: 'azure' }), sync({})) })
  t.same(foreign.problems, [], 'another provider’s class: not ours to check')
  t.equal(foreign.skipped, 1)
  t.equal(foreign.checked, 0)

  const told = lintFiles({ 'a.yaml': docs(spc({ provider: 'vault-eu' }), sync({})) }, { provider: 'vault-eu' })
  t.equal(told.checked, 1, '--provider names the class’s provider: checked')
})

t.test('sourcePath: a file the class writes, never a directory, an optional one warned', async (t) => {
  const objects = [
    { objectName: 'password', secretPath: 'secret/data/db', secretKey: 'pw' },
    { objectName: 'cert', secretPath: 'pki/issue/web', method: 'PUT', format: 'tls' },
    { objectName: 'maybe', secretPath: 'secret/data/maybe', optional: true },
    { objectName: 'dsn', template: 'postgres://app:{{@password}}@db/app' },
  ]
  const l = lintFiles({
    'a.yaml': docs(
      spc({ objects }),
      sync({
        data: [
          { sourcePath: 'password', targetKey: 'a' },
          { sourcePath: 'nothing', targetKey: 'b' },
          { sourcePath: 'cert', targetKey: 'c' },
          { sourcePath: 'maybe', targetKey: 'd' },
          { sourcePath: 'dsn', targetKey: 'e' },
        ],
      }),
    ),
  })
  const byCode = (code: string): LintProblem[] => l.problems.filter((p) => p.code === code)
  t.match(byCode('SECRETSYNC_SOURCE'), [
    {
      severity: 'error',
      message:
        'spec.secretObject.data[1].sourcePath "nothing" is not a file SecretProviderClass "shop/app-db" writes: ' +
        'its files are "password", "maybe", "dsn"',
    },
    { severity: 'error', message: /sourcePath "cert" .*object "cert" writes a directory \(format tls\)/ },
  ])
  t.match(byCode('SECRETSYNC_OPTIONAL'), [
    { severity: 'warning', message: /sourcePath "maybe" is the file of optional object "maybe"/ },
  ])
  t.equal(byCode('SECRETSYNC_UNUSED').length, 0, 'every object used, "password" by the template as well')
})

t.test('what the API server refuses in a SecretSync (the CRD of v0.0.4)', async (t) => {
  const l = lintFiles({
    'a.yaml': docs(
      spc({}),
      sync({
        data: [
          { sourcePath: 'password', targetKey: 'password' },
          { sourcePath: 'dir/file', targetKey: 'x' },
          { sourcePath: 'password', targetKey: 'password' },
          { targetKey: 'key' },
        ],
      }),
      sync({ name: 'v2', apiVersion: 'secret-sync.x-k8s.io/v1beta1' }),
      sync({ name: 'sa', serviceAccount: 'App_1' }),
    ),
  })
  const messages = l.problems.filter((p) => p.code === 'MANIFEST').map((p) => p.message)
  t.same(messages, [
    'spec.secretObject.data[1].sourcePath "dir/file" is refused by the API server: letters, digits, "-", "_" and "." ' +
      '(no "/" except before digits), at most 253; so no file inside a directory (format files or tls) can be synced',
    'spec.secretObject.data[2].targetKey "password" is listed twice',
    'spec.secretObject.data[3].sourcePath is missing',
    'apiVersion "secret-sync.x-k8s.io/v1beta1": the controller\'s CRD (v0.0.4) serves secret-sync.x-k8s.io/v1alpha1 only',
    'spec.serviceAccountName "App_1" must be a Kubernetes name (lower-case letters, digits, "-" and ".", at most 253)',
  ])
  t.ok(
    l.problems.filter((p) => p.code === 'MANIFEST').every((p) => p.severity === 'error'),
    'all errors',
  )
  const indexed = lintFiles({
    'a.yaml': docs(
      spc({ objects: [{ objectName: 'certs/0', secretPath: 'secret/data/c' }] }),
      sync({ data: [{ sourcePath: 'certs/0', targetKey: 'ca.crt' }] }),
    ),
  })
  t.same(indexed.problems, [], 'the CRD allows "/" before digits, and such an objectName writes that file')
})

t.test('a kubernetes.io/tls Secret: the controller fills tls.crt and tls.key only', async (t) => {
  const objects = [{ objectName: 'bundle', secretPath: 'secret/data/web', secretKey: 'pem' }]
  const ok = lintFiles({
    'a.yaml': docs(
      spc({ objects }),
      sync({
        type: 'kubernetes.io/tls',
        data: [
          { sourcePath: 'bundle', targetKey: 'tls.crt' },
          { sourcePath: 'bundle', targetKey: 'tls.key' },
        ],
      }),
    ),
  })
  t.same(ok.problems, [], 'one PEM bundle, split by the controller')
  const bad = lintFiles({
    'a.yaml': docs(
      spc({ objects }),
      sync({ type: 'kubernetes.io/tls', data: [{ sourcePath: 'bundle', targetKey: 'ca.crt' }] }),
    ),
  })
  t.same(
    bad.problems.map((p) => [p.code, p.severity, p.message]),
    [
      [
        'SECRETSYNC_TYPE',
        'error',
        'a kubernetes.io/tls Secret: the controller fills only targetKey "tls.crt" and "tls.key" (each from a PEM ' +
          'bundle\'s certificates or its key), not "ca.crt"',
      ],
      ['SECRETSYNC_TYPE', 'error', 'a kubernetes.io/tls Secret needs the targetKey "tls.crt"'],
      ['SECRETSYNC_TYPE', 'error', 'a kubernetes.io/tls Secret needs the targetKey "tls.key"'],
    ],
  )
})

t.test('once per class: an audience the controller requests no token for', async (t) => {
  const openbao = lintFiles({
    'a.yaml': docs(spc({ provider: 'openbao' }), sync({}), sync({ name: 'second', serviceAccount: 'other' })),
  })
  t.match(openbao.problems, [
    {
      file: 'a.yaml',
      line: 8,
      severity: 'warning',
      code: 'NO_POD_TOKEN',
      secretProviderClass: 'shop/app-db',
      provider: 'openbao',
      message:
        'audience "openbao" (the default of provider "openbao"): the Sync Controller requests tokens only for "vault" ' +
        "(its --token-request-audience, as lint's --token-request-audience says), so every sync of SecretSyncs " +
        '"shop/app-db", "shop/second" fails with NO_POD_TOKEN; set parameter "audience" to one it requests, or add ' +
        '"openbao" to the chart\'s tokenRequestAudience',
    },
  ])
  t.equal(openbao.problems.length, 1, 'one warning for the class, not one per SecretSync')
  t.same(
    lintFiles({ 'a.yaml': docs(spc({ provider: 'openbao' }), sync({})) }, { audiences: ['openbao'] }).problems,
    [],
    'told the controller requests "openbao"',
  )
  const explicit = lintFiles({ 'a.yaml': docs(spc({ parameters: { audience: 'other' } }), sync({})) })
  t.match(explicit.problems, [{ code: 'NO_POD_TOKEN', line: 14, message: /^audience "other": / }])
  t.same(
    lintFiles({ 'a.yaml': docs(spc({ parameters: { audience: 'vault' } }), sync({})) }).problems,
    [],
    'an audience it requests',
  )
})

t.test('once per class: secretObjects, no object version possible, objects read for nothing', async (t) => {
  const l = lintFiles({
    'a.yaml': docs(
      spc({
        objects: [
          { objectName: 'password', secretPath: 'secret/data/db', optional: true },
          { objectName: 'extra', secretPath: 'secret/data/extra', optional: true },
        ],
        secretObjects: [{ secretName: 'db', type: 'Opaque', data: [{ objectName: 'password', key: 'pw' }] }],
      }),
      sync({}),
    ),
  })
  t.same(codes(l), ['NO_OBJECT_VERSIONS', 'SECRETSYNC_OPTIONAL', 'SECRETSYNC_SECRET_OBJECTS', 'SECRETSYNC_UNUSED'])
  const of = (code: string): LintProblem | undefined => l.problems.find((p) => p.code === code)
  t.match(of('SECRETSYNC_SECRET_OBJECTS'), {
    line: 8,
    severity: 'warning',
    message:
      /^spec.secretObjects is the CSI driver's sync, for pods that mount this class: the Sync Controller ignores it/,
  })
  t.match(of('NO_OBJECT_VERSIONS'), {
    severity: 'warning',
    message: /^every object is optional: .* which the Sync Controller refuses, so SecretSync "shop\/app-db" fails/,
  })
  t.match(of('SECRETSYNC_UNUSED'), {
    severity: 'warning',
    message: /^object "extra" is in no sourcePath of SecretSync "shop\/app-db": .* toward the 1.0 MiB/,
  })
  t.same(lintFiles({ 'a.yaml': spc({ secretObjects: [] }) }).problems, [], 'no SecretSync: nothing said of the class')
})

t.test('one service account, one request: one answer for two SecretSyncs', async (t) => {
  const shared = lintFiles({ 'a.yaml': docs(spc({}), sync({}), sync({ name: 'copy' })) })
  t.match(shared.problems, [
    {
      code: 'SECRETSYNC_SHARED',
      severity: 'warning',
      secretSync: 'shop/copy',
      message:
        'reads the same Vault request as SecretSync "shop/app-db" (object "password", GET "secret/data/db") with the ' +
        'same service account "app": under the controller both get one answer, so a dynamic secret (a database ' +
        'credential, an issued certificate) is one credential in both Secrets; give them separate service accounts ' +
        'for separate ones',
    },
  ])
  t.equal(shared.problems.length, 1)
  const apart = lintFiles({
    'a.yaml': docs(
      spc({}),
      spc({ namespace: 'bank' }),
      sync({}),
      sync({ name: 'copy', serviceAccount: 'other' }),
      sync({ namespace: 'bank' }),
    ),
  })
  t.same(apart.problems, [], 'another service account, another namespace: identities of their own')
})

t.test('each SecretSync code has the severity of its table', async (t) => {
  const l = lintFiles({
    'a.yaml': docs(
      spc({
        objects: [
          { objectName: 'a', secretPath: 'secret/data/a', optional: true },
          { objectName: 't', secretPath: 'pki/issue/x', method: 'PUT', format: 'tls' },
        ],
        secretObjects: [{ secretName: 'x', type: 'Opaque', data: [{ objectName: 'a', key: 'a' }] }],
      }),
      sync({
        type: 'kubernetes.io/tls',
        data: [
          { sourcePath: 'a', targetKey: 'x' },
          { sourcePath: 'zz', targetKey: 'tls.crt' },
        ],
      }),
      sync({ name: 'b', data: [{ sourcePath: 'a', targetKey: 'a' }] }),
      sync({ name: 'c', className: 'none' }),
    ),
  })
  const found = new Set(l.problems.map((p) => p.code))
  for (const [code, severity] of Object.entries(SECRETSYNC_LINT_CODES)) {
    t.ok(found.has(code as LintProblem['code']), `${code} is reported here`)
    t.ok(
      l.problems.filter((p) => p.code === code).every((p) => p.severity === severity),
      `${code}: ${severity}`,
    )
  }
})
