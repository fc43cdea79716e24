// `vault-csi-provider lint` against the real Mount, on the same bad SecretProviderClasses: each
// file below has one mistake of one kind, covering every refusal the Mount's parse makes for a
// SecretProviderClass (parameters, the objects YAML, every object field, path rules, formats,
// templates, references between objects), the -vault-addr-allowlist refusal, and a file collision
// only the finished volume shows. Each is mounted through the driver's own client against the real
// daemon and a real OpenBao, and linted through the built CLI with the daemon's own flags: both
// must refuse it, lint with the Mount's very message (so the same field is named). A good
// SecretProviderClass passes both.
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { stringify } from 'yaml'
import { readSecretProviderClass } from '../../src/cli/spc.js'
import { allowDefaultApp, DEFAULT_ROLE, Fixture, JWT_MOUNT } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'
import { startOpenBao } from '../support/openbao.js'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { CLI_MAIN, startProvider } from '../support/provider.js'
import { makeTempDir } from '../support/tmp.js'

interface Case {
  name: string
  /** Parameters replacing the good ones (a value of undefined removes the parameter). */
  params: Record<string, string | undefined>
  /** The provider's error code, which both must report. */
  code: string
  grpc: 'InvalidArgument' | 'PermissionDenied'
}

const GOOD_OBJECTS = '- objectName: password\n  secretPath: secret/data/lint\n  secretKey: pw\n'
const obj = (yaml: string): Record<string, string> => ({ objects: yaml })
const one = (fields: string): Record<string, string> =>
  obj(`- objectName: x\n  secretPath: secret/data/lint\n${fields}`)

const CASES: Case[] = [
  // Parameters
  { name: 'roleName missing', params: { roleName: undefined }, code: 'BAD_PARAMETER', grpc: 'InvalidArgument' },
  {
    name: 'vaultAddress not a URL',
    params: { vaultAddress: 'not a url' },
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  {
    name: 'vaultAddress scheme',
    params: { vaultAddress: 'ftp://vault:8200' },
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  {
    name: 'vaultAddress credentials',
    params: { vaultAddress: 'https://user:pw@vault:8200' },
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  {
    name: 'vaultAddress query',
    params: { vaultAddress: 'https://vault:8200/?x=1' },
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  {
    name: 'vaultAddress unix without path',
    params: { vaultAddress: 'unix://' },
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  {
    name: 'both auth mount aliases',
    params: { vaultAuthMountPath: 'jwt', vaultKubernetesMountPath: 'kubernetes' },
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  { name: 'auth mount path', params: { vaultAuthMountPath: 'a/../b' }, code: 'BAD_PARAMETER', grpc: 'InvalidArgument' },
  {
    name: 'vaultSkipTLSVerify',
    params: { vaultSkipTLSVerify: 'maybe' },
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  {
    name: 'client certificate without key',
    params: { vaultTLSClientCertPath: '/etc/tls/client.crt' },
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  // The objects parameter as a whole
  { name: 'objects missing', params: { objects: undefined }, code: 'BAD_PARAMETER', grpc: 'InvalidArgument' },
  { name: 'objects not YAML', params: obj('- [unclosed'), code: 'BAD_PARAMETER', grpc: 'InvalidArgument' },
  { name: 'objects not a list', params: obj('objectName: x'), code: 'BAD_PARAMETER', grpc: 'InvalidArgument' },
  { name: 'objects empty list', params: obj('[]'), code: 'BAD_PARAMETER', grpc: 'InvalidArgument' },
  { name: 'objects null', params: obj('~'), code: 'BAD_PARAMETER', grpc: 'InvalidArgument' },
  {
    name: 'objects alias bomb',
    params: obj(`- &a {objectName: a, secretPath: x}\n${'- *a\n'.repeat(51)}`),
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  {
    name: 'too many objects',
    params: obj(Array.from({ length: 1001 }, (_, i) => `- {objectName: o${i}, secretPath: s}`).join('\n')),
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  {
    name: 'objects too large',
    params: obj(`${GOOD_OBJECTS}${`# ${'x'.repeat(1000)}\n`.repeat(530)}`),
    code: 'BAD_PARAMETER',
    grpc: 'InvalidArgument',
  },
  // One object
  { name: 'object not a map', params: obj('- just-a-string'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  {
    name: 'objectName missing',
    params: obj('- secretPath: secret/data/lint'),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  { name: 'unknown field', params: one('  secretkey: pw\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  ...[
    ['absolute', '/etc/passwd'],
    ['traversal', 'a/../../b'],
    ['driver-reserved', '..data'],
    ['trailing slash', 'a/'],
    ['empty element', 'a//b'],
    ['dot element', './a'],
    ['control character', '"a\\x01b"'],
    ['long element', 'y'.repeat(256)],
    ['long path', Array.from({ length: 17 }, () => 'z'.repeat(250)).join('/')],
  ].map(([what, name]) => ({
    name: `objectName ${what}`,
    params: obj(`- objectName: ${name}\n  secretPath: secret/data/lint\n`),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument' as const,
  })),
  { name: 'secretPath missing', params: obj('- objectName: x\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  {
    name: 'secretPath a map',
    params: obj('- objectName: x\n  secretPath: {a: b}\n'),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  {
    name: 'secretPath no path',
    params: obj('- objectName: x\n  secretPath: /v1/\n'),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  {
    name: 'secretPath control character',
    params: obj('- objectName: x\n  secretPath: "secret/data/a\\x01"\n'),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  {
    name: 'secretPath dot-dot',
    params: obj('- objectName: x\n  secretPath: secret/../sys\n'),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  {
    name: 'field needs secretPath',
    params: obj('- objectName: x\n  template: "a"\n  method: PUT\n'),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  { name: 'method', params: one('  method: DELETE\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  { name: 'secretKey a list', params: one('  secretKey: [a]\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  {
    name: 'secretKeyPath a map',
    params: one('  secretKeyPath: {a: b}\n'),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  {
    name: 'secretKey and secretKeyPath',
    params: one('  secretKey: a\n  secretKeyPath: b\n'),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  { name: 'secretKeyPath syntax', params: one('  secretKeyPath: "a["\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  { name: 'format', params: one('  format: xml\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  {
    name: 'format and template',
    params: one('  format: json\n  template: "a"\n'),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  { name: 'encoding', params: one('  encoding: rot13\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  { name: 'secretArgs a list', params: one('  secretArgs: [a]\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  { name: 'filePermission', params: one('  filePermission: 0999\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  { name: 'template a list', params: one('  template: [a]\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  { name: 'template empty', params: one('  template: ""\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  { name: 'template partial', params: one('  template: "{{> other}}"\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  { name: 'template unclosed', params: one('  template: "{{#a}}x"\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  { name: 'template bad name', params: one('  template: "{{@}}"\n'), code: 'BAD_OBJECT', grpc: 'InvalidArgument' },
  // Between objects
  {
    name: 'duplicate objectName',
    params: obj(`${GOOD_OBJECTS}- objectName: password\n  secretPath: secret/data/other\n`),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  {
    name: 'file where a directory is needed',
    params: obj(`${GOOD_OBJECTS}- objectName: password/inner\n  secretPath: secret/data/lint\n`),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  {
    name: 'template references nothing',
    params: obj(`${GOOD_OBJECTS}- objectName: t\n  template: "{{@nope}}"\n`),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  {
    name: 'template references a template',
    params: obj(`${GOOD_OBJECTS}- objectName: t1\n  template: "a"\n- objectName: t2\n  template: "{{@t1}}"\n`),
    code: 'BAD_OBJECT',
    grpc: 'InvalidArgument',
  },
  // The provider's own refusal, before any token is sent
  {
    name: 'address outside the allowlist',
    params: { vaultAddress: 'https://vault.elsewhere.example:8200' },
    code: 'VAULT_ADDRESS_NOT_ALLOWED',
    grpc: 'PermissionDenied',
  },
  // Only the finished volume shows it (the Mount reads the secret first)
  {
    name: 'file written twice',
    params: obj(
      '- objectName: web\n  secretPath: secret/data/lint-cert\n  secretKey: bundle\n  format: tls\n' +
        '- objectName: web/tls.key\n  secretPath: secret/data/lint\n  secretKey: pw\n',
    ),
    code: 'BAD_FILE_PATH',
    grpc: 'InvalidArgument',
  },
]

function spcYaml(name: string, params: Record<string, string>): string {
  return stringify(
    {
      apiVersion: 'secrets-store.csi.x-k8s.io/v1',
      kind: 'SecretProviderClass',
      metadata: { name, namespace: 'default' },
      spec: { provider: 'vault', parameters: params },
    },
    { lineWidth: 0 },
  )
}

/** A certificate and its key, as a PEM bundle stored in KV (openssl, thrown away after). */
function certBundle(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vcp-lint-cert-'))
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=web.lint.test', '-days', '1'].concat([
        '-keyout',
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
      ]),
      { stdio: 'ignore' },
    )
    return readFileSync(join(dir, 'c.pem'), 'utf8') + readFileSync(join(dir, 'k.pem'), 'utf8')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

interface LintJson {
  ok: boolean
  checked: number
  problems: Array<{ file: string; line: number; severity: string; code: string; message: string; parameter?: string }>
}

function lint(args: string[]): Promise<{ code: number; json: LintJson; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI_MAIN, 'lint', '--json', ...args],
      { timeout: 120_000, maxBuffer: 32 * 1024 * 1024 },
      (err, stdout, stderr) => {
        resolve({
          code: err ? (typeof err.code === 'number' ? err.code : -1) : 0,
          json: JSON.parse(stdout) as LintJson,
          stderr,
        })
      },
    )
  })
}

t.test('lint refuses every SecretProviderClass the Mount refuses, with the Mount’s message', async (t) => {
  const bao = await startOpenBao()
  await allowDefaultApp(bao)
  // The daemon's flags, and lint told the same ones.
  const daemonFlags = [`-vault-addr=${bao.addr}`, `-vault-addr-allowlist=${bao.addr}`]
  const fixture = Fixture.attach(bao, await startProvider({ args: daemonFlags }))
  t.teardown(() => fixture.stop())
  const secret = 'lint-pa55-Kx81'
  await fixture.kvPut('lint', { pw: secret })
  await fixture.kvPut('lint-cert', { bundle: certBundle() })

  const dir = await makeTempDir('vcp-lint-cases-')
  t.teardown(dir.cleanup)
  const good: Record<string, string> = {
    roleName: DEFAULT_ROLE,
    vaultAuthMountPath: JWT_MOUNT,
    vaultAddress: bao.addr,
    objects: GOOD_OBJECTS,
  }
  const files = new Map<string, string>()
  const write = async (name: string, params: Record<string, string | undefined>): Promise<string> => {
    const merged = Object.fromEntries(
      Object.entries({ ...good, ...params }).filter((e): e is [string, string] => e[1] !== undefined),
    )
    const file = join(dir.path, `${name.replace(/[^a-z0-9]+/gi, '-')}.yaml`)
    await writeFile(file, spcYaml('lint-case', merged))
    files.set(name, file)
    return file
  }
  await write('good', {})
  for (const c of CASES) await write(c.name, c.params)

  const mount = async (file: string): Promise<{ ok: boolean; grpcCode: string; message: string }> => {
    const spc = await readSecretProviderClass(file)
    const attrs = { ...spc.parameters, secretProviderClass: spc.name, ...fixture.podAttributes() }
    const { result } = await fixture.mountRaw(attrs)
    // The driver wraps the provider's status: "rpc error: code = X desc = <the provider's message>".
    return {
      ok: result.ok,
      grpcCode: result.grpcCode,
      message: /desc = ([\s\S]*)$/.exec(result.message)?.[1] ?? result.message,
    }
  }

  const linted = await lint([`--vault-addr=${bao.addr}`, `--vault-addr-allowlist=${bao.addr}`, dir.path])
  t.equal(linted.json.checked, CASES.length + 1, 'every file linted')
  const problemsOf = (file: string): LintJson['problems'] => linted.json.problems.filter((p) => p.file === file)

  const goodMount = await mount(files.get('good')!)
  t.ok(goodMount.ok, `the good SecretProviderClass mounts (${goodMount.message})`)
  t.same(problemsOf(files.get('good')!), [], 'and lints clean')

  const codes = new Set<string>()
  for (const c of CASES) {
    const file = files.get(c.name)!
    const m = await mount(file)
    t.notOk(m.ok, `${c.name}: the Mount refuses it`)
    t.equal(m.grpcCode, c.grpc, `${c.name}: ${m.message}`)
    const errors = problemsOf(file).filter((p) => p.severity === 'error')
    t.ok(errors.length > 0, `${c.name}: lint refuses it`)
    t.ok(
      errors.some((p) => p.message === m.message && p.code === c.code),
      `${c.name}: lint reports the Mount's message and code ${c.code} (lint: ${errors.map((e) => `${e.code} ${e.message}`).join(' | ')})`,
    )
    codes.add(c.code)
  }
  t.same([...codes].sort(), ['BAD_FILE_PATH', 'BAD_OBJECT', 'BAD_PARAMETER', 'VAULT_ADDRESS_NOT_ALLOWED'])
  t.equal(linted.code, 1, 'lint exits 1 when any file has an error')
  t.same(findLeaks(JSON.stringify(linted.json), [secret]), [], 'no secret in lint output')
})

function lintText(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI_MAIN, 'lint', ...args],
      { timeout: 120_000, cwd: PACKAGE_ROOT },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    )
  })
}

t.test('lint over the project: examples/, docs/ snippets, and the deployment files', async (t) => {
  const res = await lintText(['examples/', 'docs/', 'daemonset/', 'README.md'])
  t.equal(res.code, 0, `no errors (${res.stdout}${res.stderr})`)
  t.same(
    res.stdout.split('\n').filter(Boolean),
    [
      'examples/outputs-secretproviderclass.yaml:24: warning: spec.secretObjects[1].data[0].objectName "web/ca.crt" is written only when the certificate material holds a CA; the Secret cannot be synced for secrets without one',
    ],
    'one line per problem, file:line: message',
  )
  // Helm templates and kustomize files are not SecretProviderClasses: skipped, not errors.
  t.match(
    res.stderr,
    /^\d+ SecretProviderClasses, \d+ SecretSyncs? in \d+ files: 0 errors, 1 warning \(\d+ other documents skipped\)\n$/,
  )
  t.ok(Number(/^(\d+) SecretProviderClasses/.exec(res.stderr)?.[1]) >= 11, 'the examples and the docs snippets')
  t.ok(Number(/, (\d+) SecretSyncs? in/.exec(res.stderr)?.[1]) >= 1, 'docs/sync-controller.md’s SecretSync')
})

t.test('lint: output, exit codes, usage errors', async (t) => {
  const dir = await makeTempDir('vcp-lint-cli-')
  t.teardown(dir.cleanup)
  const bad = join(dir.path, 'bad.yaml')
  await writeFile(
    bad,
    [
      'apiVersion: secrets-store.csi.x-k8s.io/v1',
      'kind: SecretProviderClass',
      'metadata: {name: app}',
      'spec:',
      '  provider: vault',
      '  parameters:',
      '    roleName: app',
      '    vaultAddress: https://vault.example:8200',
      '    objects: |',
      '      - objectName: db-password',
      '        secretPath: database/creds/app',
      '        secretkey: password',
      '',
    ].join('\n'),
  )
  const res = await lintText([bad])
  t.equal(res.code, 1, 'an error: exit 1')
  t.equal(
    res.stdout,
    `${bad}:10: object "db-password": unknown field "secretkey" (known fields: objectName, secretPath, secretKey, method, secretArgs, filePermission, encoding, secretKeyPath, format, template, passwordObject, optional, namespace)\n`,
  )
  t.equal(res.stderr, '1 SecretProviderClass in 1 file: 1 error, 0 warnings\n')
  const json = await lintText(['--json', bad])
  t.equal(json.code, 1)
  t.match(JSON.parse(json.stdout), {
    ok: false,
    errors: 1,
    problems: [
      { file: bad, line: 10, severity: 'error', code: 'BAD_OBJECT', object: 'db-password', parameter: 'objects' },
    ],
  })
  const missing = await lintText([join(dir.path, 'nope.yaml')])
  t.equal(missing.code, 2, 'a path that does not exist: usage error')
  t.match(missing.stderr, /cannot read .*nope\.yaml: ENOENT/)
  t.equal((await lintText([])).code, 2, 'no path: usage error')
  const badFlag = await lintText(['--vault-addr-allowlist=vault:8200', bad])
  t.equal(badFlag.code, 2, 'a bad daemon flag: usage error')
  t.match(badFlag.stderr, /-vault-addr-allowlist entry/)
})

t.test('lint: SecretSyncs beside their classes, across files', async (t) => {
  const dir = await makeTempDir('vcp-lint-secretsync-')
  t.teardown(dir.cleanup)
  const classFile = join(dir.path, 'classes.yaml')
  const syncFile = join(dir.path, 'syncs.yaml')
  const klass = (name: string, provider: string): Record<string, unknown> => ({
    apiVersion: 'secrets-store.csi.x-k8s.io/v1',
    kind: 'SecretProviderClass',
    metadata: { name, namespace: 'shop' },
    spec: {
      provider,
      parameters: {
        vaultAddress: 'https://vault.example:8200',
        roleName: 'shop-sync',
        objects: '- objectName: password\n  secretPath: secret/data/shop/db\n  secretKey: password\n',
      },
    },
  })
  const secretSync = (name: string, className: string, sourcePath: string): Record<string, unknown> => ({
    apiVersion: 'secret-sync.x-k8s.io/v1alpha1',
    kind: 'SecretSync',
    metadata: { name, namespace: 'shop' },
    spec: {
      serviceAccountName: name,
      secretProviderClassName: className,
      secretObject: { type: 'Opaque', data: [{ sourcePath, targetKey: 'password' }] },
    },
  })
  await writeFile(
    classFile,
    [klass('app-db', 'vault'), klass('bao-db', 'openbao')].map((d) => stringify(d)).join('---\n'),
  )
  await writeFile(
    syncFile,
    [
      secretSync('app-db', 'app-db', 'password'),
      secretSync('typo', 'app-db', 'pasword'),
      secretSync('lost', 'gone', 'password'),
      secretSync('bao-db', 'bao-db', 'password'),
    ]
      .map((d) => stringify(d))
      .join('---\n'),
  )
  const res = await lintText([dir.path])
  t.equal(res.code, 1, 'errors: exit 1')
  t.same(res.stdout.split('\n').filter(Boolean), [
    `${classFile}:23: warning: audience "openbao" (the default of provider "openbao"): the Sync Controller requests tokens only for "vault" (its --token-request-audience, as lint's --token-request-audience says), so every sync of SecretSync "shop/bao-db" fails with NO_POD_TOKEN; set parameter "audience" to one it requests, or add "openbao" to the chart's tokenRequestAudience`,
    `${syncFile}:26: spec.secretObject.data[0].sourcePath "pasword" is not a file SecretProviderClass "shop/app-db" writes: its files are "password"`,
    `${syncFile}:36: spec.secretProviderClassName "gone": no SecretProviderClass of that name in namespace "shop" among the files linted; the controller fails every sync of it (ControllerSPCError)`,
  ])
  t.equal(
    res.stderr,
    '2 SecretProviderClasses (1 for provider vault, 1 for provider openbao), 4 SecretSyncs in 2 files: 2 errors, 1 warning\n',
  )
  const told = await lintText(['--json', '--token-request-audience=vault,openbao', dir.path])
  const json = JSON.parse(told.stdout) as {
    secretSyncs: number
    problems: Array<{ code: string; secretSync?: string }>
  }
  t.equal(json.secretSyncs, 4)
  t.same(
    json.problems.map((p) => [p.code, p.secretSync]),
    [
      ['SECRETSYNC_SOURCE', 'shop/typo'],
      ['SECRETSYNC_CLASS', 'shop/lost'],
    ],
    'the controller told to request "openbao" too: no audience warning',
  )
})
