// The linter's own behaviour: every bad object at once (each with the message parseObjects gives
// when it is the only one), lines in the file, multi-document YAML and Markdown, what the API
// server would refuse, unknown parameters (the parameter table's names are the known ones), and
// secretObjects.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { VaultDefaults } from '../../../src/config/config.js'
import { ProviderError } from '../../../src/errors.js'
import { lintObjects } from '../../../src/lint/objects-lint.js'
import { LINT_CODES, lintMarkdown, lintYaml, type LintProblem } from '../../../src/lint/spc-lint.js'
import { PACKAGE_ROOT } from '../../../src/package-info.js'
import { PROVIDER_FLAVOURS } from '../../../src/config/flavour.js'
import { parseObjects } from '../../../src/request/objects.js'
import { knownParameterNames, legacyParameterNames, PARAMETERS } from '../../../src/request/parameters.js'
import { AddressAllowlist } from '../../../src/vault/transport/address-allowlist.js'

const DEFAULTS: VaultDefaults = { authMount: 'kubernetes', tls: { skipVerify: false } }
const WITH_ADDRESS: VaultDefaults = { ...DEFAULTS, address: 'https://vault.example:8200' }

function parseError(text: string): string {
  try {
    parseObjects(text)
  } catch (err) {
    if (err instanceof ProviderError) return err.message
    throw err
  }
  throw new Error('expected parseObjects to fail')
}

t.test('lintObjects: every bad object, each with the message it gets alone', async (t) => {
  const objects = [
    '- objectName: a', // 1
    '  secretPath: secret/data/a',
    '  secretkey: x', // unknown field
    '- objectName: ok',
    '  secretPath: secret/data/ok',
    '- secretPath: secret/data/nameless', // 6: no objectName
    '- objectName: /abs', // 7
    '  secretPath: secret/data/x',
    '- objectName: m', // 9
    '  secretPath: secret/data/m',
    '  method: DELETE',
    '- objectName: t', // 12
    '  template: "{{@missing}}"',
    '',
  ].join('\n')
  const result = lintObjects(objects)
  t.equal(result.objects, undefined, 'no objects when any is bad')
  t.same(result.lines, [1, 4, 6, 7, 9, 12])
  t.same(
    result.problems.map((p) => [p.line, p.index, p.code]),
    [
      [1, 0, 'BAD_OBJECT'],
      [6, 2, 'BAD_OBJECT'],
      [7, 3, 'BAD_OBJECT'],
      [9, 4, 'BAD_OBJECT'],
      [12, 5, 'BAD_OBJECT'],
    ],
  )
  t.equal(result.problems[0]!.message, parseError(objects), 'the first is exactly what the Mount says')
  t.equal(
    result.problems[1]!.message,
    'objects[2]: objectName is missing or not a string',
    'indexes stay the original ones',
  )
  t.equal(result.problems[2]!.message, parseError('- objectName: /abs\n  secretPath: secret/data/x\n'))
  t.equal(result.problems[3]!.message, parseError('- objectName: m\n  secretPath: secret/data/m\n  method: DELETE\n'))
  t.match(result.problems[4]!.message, /template references @"missing"/)
  t.notMatch(result.problems[4]!.message, /lint-placeholder/, 'stand-ins never show')

  const clean = lintObjects('- objectName: a\n  secretPath: secret/data/a\n')
  t.same(clean.problems, [])
  t.equal(clean.objects?.length, 1, 'the parsed objects when all are good')
})

t.test('lintObjects: duplicates and same-named objects are blamed on the right one', async (t) => {
  const text = [
    '- objectName: x', // 1
    '  secretPath: secret/data/1',
    '- objectName: x', // 3: duplicate, and bad
    '  secretPath: secret/data/2',
    '  method: DELETE',
    '- objectName: x', // 6: duplicate
    '  secretPath: secret/data/3',
  ].join('\n')
  const result = lintObjects(text)
  t.same(
    result.problems.map((p) => [p.line, p.message]),
    [
      [3, 'object "x": method must be one of GET, PUT, POST, got "DELETE"'],
      [3, 'objectName must be unique; duplicated: "x"'],
    ],
  )
})

t.test('lintObjects: problems of the whole list', async (t) => {
  for (const text of ['- [unclosed', 'objectName: x', '[]', '~']) {
    const result = lintObjects(text)
    t.same(
      result.problems.map((p) => p.message),
      [parseError(text)],
      `${JSON.stringify(text)}: one problem, the Mount's`,
    )
    t.equal(result.problems[0]!.index, undefined)
  }
})

const SPC = (params: string, extra = ''): string =>
  [
    'apiVersion: secrets-store.csi.x-k8s.io/v1',
    'kind: SecretProviderClass',
    'metadata:',
    '  name: app',
    '  namespace: web',
    'spec:',
    '  provider: vault',
    extra,
    '  parameters:',
    params,
  ]
    .filter((l) => l !== '')
    .join('\n') + '\n'

/** The same manifest for another spec.provider. */
function asProvider(provider: string, manifest: string): string {
  return manifest.replace('  provider: vault\n', `  provider: ${provider}\n`)
}

function lines(problems: readonly LintProblem[]): Array<[number, string, string]> {
  return problems.map((p) => [p.line, p.severity, p.message])
}

t.test('every parameter of the table is known to lint; any other is warned about, naming them all', async (t) => {
  for (const flavour of PROVIDER_FLAVOURS) {
    const known = [...knownParameterNames(flavour), ...legacyParameterNames(flavour)]
    t.ok(known.length >= 15, `${flavour} parameters: ${known.join(', ')}`)
    const params = PARAMETERS.flatMap((p) =>
      p.names[flavour].map(
        (name) => `    ${name}: ${p.key === 'objects' ? "'- {objectName: a, secretPath: s}'" : 'x'}`,
      ),
    )
    const everyName = lintYaml(asProvider(flavour, SPC(params.join('\n'))), 'f', { vaultDefaults: WITH_ADDRESS })
    t.equal(everyName.checked, 1)
    t.same(
      everyName.problems.filter((p) => p.code === 'UNKNOWN_PARAMETER'),
      [],
      `${flavour}: no table name is unknown`,
    )
    const typo = lintYaml(
      asProvider(flavour, SPC("    roleName: app\n    rolename: app\n    objects: '- {objectName: a, secretPath: s}'")),
      'f',
      { vaultDefaults: WITH_ADDRESS },
    )
    t.same(
      typo.problems.map((p) => [p.code, p.parameter, p.provider, p.message]),
      [
        [
          'UNKNOWN_PARAMETER',
          'rolename',
          flavour,
          `parameter "rolename" is not read by the provider (a misspelling? known parameters: ${knownParameterNames(flavour).join(', ')})`,
        ],
      ],
    )
    for (const legacy of legacyParameterNames(flavour))
      t.notOk(knownParameterNames(flavour).includes(legacy), `${legacy} is not listed`)
  }
  // Each flavour's own names: an OpenBao name means nothing to a vault class.
  const vaultClass = lintYaml(
    SPC("    roleName: app\n    baoAddress: https://b:8200\n    objects: '- {objectName: a, secretPath: s}'"),
    'f',
    {
      vaultDefaults: WITH_ADDRESS,
    },
  )
  t.same(
    vaultClass.problems.map((p) => [p.code, p.parameter]),
    [['UNKNOWN_PARAMETER', 'baoAddress']],
  )
})

t.test('lintYaml: lines in the file, the Mount’s messages, and what only the API server refuses', async (t) => {
  const text = [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata: {name: other}',
    '---',
    SPC(
      [
        '    roleName: app', // 13
        '    vaultSkipTLSVerify: yes', // 14: a YAML 1.1 boolean, as kubectl reads it
        '    vaultAdress: https://vault:8200', // 15: typo
        '    objects: |', // 16
        '      - objectName: a', // 17
        '        secretPath: secret/data/a',
        '      - objectName: b', // 19
        '        secretPath: secret/data/b',
        '        encoding: rot13',
      ].join('\n'),
    ),
  ].join('\n')
  const result = lintYaml(text, 'spc.yaml', { vaultDefaults: WITH_ADDRESS })
  t.equal(result.checked, 1)
  t.equal(result.skipped, 1, 'the ConfigMap is skipped')
  t.same(lines(result.problems), [
    [
      14,
      'error',
      'parameter "vaultSkipTLSVerify" must be a string, got yes (a YAML boolean): the API server refuses other types; quote it: "yes"',
    ],
    [
      15,
      'warning',
      'parameter "vaultAdress" is not read by the provider (a misspelling? known parameters: roleName, vaultAddress, vaultNamespace, vaultAuthNamespace, vaultReadConsistency, vaultAuthMountPath, vaultKubernetesMountPath, audience, vaultSkipTLSVerify, vaultCACertPath, vaultCADirectory, vaultTLSServerName, vaultTLSClientCertPath, vaultTLSClientKeyPath, objects)',
    ],
    [19, 'error', 'object "b": encoding must be one of utf-8, base64, hex, got "rot13"'],
  ])
  t.match(result.problems[2], {
    file: 'spc.yaml',
    secretProviderClass: 'web/app',
    code: 'BAD_OBJECT',
    object: 'b',
    parameter: 'objects',
  })
})

t.test('lintYaml: the provider’s defaults and allowlist, as the daemon would apply them', async (t) => {
  const text = SPC("    roleName: app\n    objects: '- {objectName: a, secretPath: s}'")
  const noDefault = lintYaml(text, 'f', { vaultDefaults: DEFAULTS })
  t.same(
    noDefault.problems.map((p) => [p.severity, p.code]),
    [['warning', 'NO_VAULT_ADDRESS']],
  )
  t.same(lintYaml(text, 'f', { vaultDefaults: WITH_ADDRESS }).problems, [], 'clean with the provider’s -vault-addr')
  const refused = lintYaml(text, 'f', {
    vaultDefaults: WITH_ADDRESS,
    allowlist: new AddressAllowlist(['https://other.example:8200']),
  })
  t.same(
    refused.problems.map((p) => p.code),
    ['VAULT_ADDRESS_NOT_ALLOWED'],
  )
  const mountDefault = lintYaml(SPC("    roleName: app\n    objects: '- {objectName: a, secretPath: s}'"), 'f', {
    vaultDefaults: { ...WITH_ADDRESS, authMount: 'a/../b' },
  })
  t.match(mountDefault.problems[0]!.message, /-vault-mount "a\/\.\.\/b" is not a valid auth mount path/)
})

t.test('lintYaml: several parameter problems at once', async (t) => {
  const text = SPC(
    [
      '    vaultAddress: ftp://vault', // 9
      '    vaultAuthMountPath: jwt', // 10
      '    vaultKubernetesMountPath: kubernetes', // 11
      '    vaultTLSClientCertPath: /c.pem', // 12
      '    objects: "- {objectName: a, secretPath: s}"',
    ].join('\n'),
  )
  const result = lintYaml(text, 'f', { vaultDefaults: WITH_ADDRESS })
  t.same(
    result.problems.map((p) => [p.line, p.parameter, p.code]),
    [
      [8, 'roleName', 'BAD_PARAMETER'],
      [9, 'vaultAddress', 'BAD_PARAMETER'],
      [10, 'vaultAuthMountPath', 'BAD_PARAMETER'],
      [12, 'vaultTLSClientCertPath', 'BAD_PARAMETER'],
    ],
  )
})

t.test('lintYaml: one class with many problems, every one reported in one pass', async (t) => {
  const text = SPC(
    [
      '    roleName: app', // 9
      '    vaultNamespace: "team a"', // 10
      '    vaultTLSServerName: bad name', // 11
      '    objects: |', // 12
      '      - objectName: a', // 13
      '        secretPath: secret/data/a',
      '      - objectName: a/b', // 15: inside the file "a"
      '        secretPath: secret/data/b',
      '      - objectName: a/c', // 17: so is this one
      '        secretPath: secret/data/c',
      '      - objectName: t', // 19
      "        template: '{{@missing}}'",
      '      - objectName: m', // 21
      '        secretPath: secret/data/m',
      '        method: DELETE',
    ].join('\n'),
  )
  // The provider's own -vault-mount is wrong too: no parameter is at fault, and the others still count.
  const result = lintYaml(text, 'f', { vaultDefaults: { ...WITH_ADDRESS, authMount: 'a/../b' } })
  t.same(
    result.problems.map((p) => [p.line, p.code, p.parameter, p.object, p.message]),
    [
      [
        8,
        'BAD_PARAMETER',
        undefined,
        undefined,
        '-vault-mount "a/../b" is not a valid auth mount path (e.g. "kubernetes" or "jwt")',
      ],
      [
        10,
        'BAD_PARAMETER',
        'vaultNamespace',
        undefined,
        'parameter "vaultNamespace" "team a" may hold only visible ASCII characters (no spaces, controls or non-ASCII letters)',
      ],
      [
        11,
        'BAD_PARAMETER',
        'vaultTLSServerName',
        undefined,
        'parameter "vaultTLSServerName" "bad name" must be a DNS name such as "vault.example.com"',
      ],
      [15, 'BAD_OBJECT', 'objects', 'a/b', 'object "a/b" needs "a" to be a directory, but object "a" is a file'],
      [17, 'BAD_OBJECT', 'objects', 'a/c', 'object "a/c" needs "a" to be a directory, but object "a" is a file'],
      [
        19,
        'BAD_OBJECT',
        'objects',
        't',
        'object "t": template references @"missing", which is not an objectName of this SecretProviderClass (objects it can reference: "a", "a/b", "a/c", "m")',
      ],
      [21, 'BAD_OBJECT', 'objects', 'm', 'object "m": method must be one of GET, PUT, POST, got "DELETE"'],
    ],
  )
})

t.test('lintYaml: secretObjects name files the SecretProviderClass writes', async (t) => {
  const objects = [
    '    objects: |',
    '      - {objectName: web, secretPath: pki/issue/web, method: PUT, format: tls}',
    '      - {objectName: app, secretPath: secret/data/app, format: files}',
    '      - {objectName: pw, secretPath: secret/data/app, secretKey: pw}',
  ].join('\n')
  const secretObjects = [
    '  secretObjects:',
    '    - secretName: ok', // 9
    '      type: Opaque',
    '      data:',
    '        - {objectName: pw, key: pw}',
    '        - {objectName: app/USER, key: user}',
    '        - {objectName: web/tls.crt, key: crt}',
    '    - secretName: bad', // 15
    '      type: kubernetes.io/tls',
    '      data:',
    '        - {objectName: web, key: tls.crt}', // 18
    '        - {objectName: passwd, key: x}', // 19
    '        - {objectName: web/ca.crt, key: ca}', // 20
  ].join('\n')
  const result = lintYaml(SPC(`    roleName: app\n${objects}`, secretObjects), 'f', { vaultDefaults: WITH_ADDRESS })
  t.same(
    result.problems.map((p) => [p.line, p.severity, p.code]),
    [
      [15, 'error', 'SECRET_OBJECTS'],
      [18, 'error', 'SECRET_OBJECTS'],
      [19, 'error', 'SECRET_OBJECTS'],
      [20, 'warning', 'SECRET_OBJECTS_MAYBE'],
    ],
  )
  t.match(result.problems[0]!.message, 'needs the key "tls.key"')
  t.match(result.problems[1]!.message, 'object "web" is a directory; name a file in it ("web/tls.crt"')
  t.match(result.problems[2]!.message, '"passwd" is not a file this SecretProviderClass writes')
  t.match(result.problems[2]!.message, '"web/tls-combined.pem", "pw", "app/<key>"')
})

t.test('lintYaml: YAML errors, other providers, non-string and collection parameters', async (t) => {
  const broken = 'kind: SecretProviderClass\nspec: [unclosed\n'
  t.same(
    lintYaml(broken, 'f', { vaultDefaults: DEFAULTS }).problems.map((p) => p.code),
    ['YAML'],
    'a broken manifest that says SecretProviderClass',
  )
  t.same(
    lintYaml('a: [', 'f', { vaultDefaults: DEFAULTS }).problems,
    [],
    'a broken file found in a directory is not ours',
  )
  t.same(
    lintYaml('a: [', 'f', { vaultDefaults: DEFAULTS, strictYaml: true }).problems.map((p) => p.code),
    ['YAML'],
    'a broken file named on the command line is reported',
  )
  const azure = SPC('    keyvaultName: x').replace('provider: vault', 'provider: azure')
  t.same(lintYaml(azure, 'f', { vaultDefaults: DEFAULTS }), { problems: [], checked: 0, skipped: 1 })
  const collection = SPC(
    '    roleName: app\n    vaultAddress: https://v:8200\n    objects:\n      - objectName: a\n        secretPath: s',
  )
  const r = lintYaml(collection, 'f', { vaultDefaults: DEFAULTS })
  t.same(
    lines(r.problems),
    [
      [
        11,
        'error',
        'parameter "objects" must be a string, got a YAML list: the API server refuses other types; write it as a block string (objects: |)',
      ],
    ],
    'objects written as a list: one clear problem, not a cascade',
  )
})

t.test('lintMarkdown: yaml blocks where they stand, parameter fragments included', async (t) => {
  const md = [
    '# Doc', // 1
    '',
    '```yaml', // 3
    'objects: |', // 4
    '  - objectName: a', // 5
    '    secretPath: s',
    '  - objectName: a/', // 7
    '    secretPath: s',
    '```',
    '',
    '```sh',
    'objects: not yaml we read',
    '```',
    '',
    '```yaml', // 15
    SPC("    objects: '- {objectName: x, secretPath: s}'").trimEnd(), // SPC starts on 16; parameters on 23
    '```',
  ].join('\n')
  const result = lintMarkdown(md, 'doc.md', { vaultDefaults: WITH_ADDRESS })
  t.equal(result.checked, 2)
  t.same(
    result.problems.map((p) => [p.line, p.message]),
    [
      [7, 'object "a/": objectName ends with "/"'],
      [23, 'parameter "roleName" is required: the Vault role the pod logs in with'],
    ],
  )
})

t.test('the project’s examples and docs lint clean', async (t) => {
  const result = { problems: [] as LintProblem[], checked: 0, skipped: 0 }
  const { readdir } = await import('node:fs/promises')
  for (const f of (await readdir(join(PACKAGE_ROOT, 'examples'))).filter((f) => f.endsWith('.yaml'))) {
    lintYaml(
      await readFile(join(PACKAGE_ROOT, 'examples', f), 'utf8'),
      `examples/${f}`,
      { vaultDefaults: DEFAULTS, strictYaml: true },
      result,
    )
  }
  for (const f of (await readdir(join(PACKAGE_ROOT, 'docs'))).filter((f) => f.endsWith('.md'))) {
    lintMarkdown(
      await readFile(join(PACKAGE_ROOT, 'docs', f), 'utf8'),
      `docs/${f}`,
      { vaultDefaults: DEFAULTS },
      result,
    )
  }
  t.ok(result.checked >= 11, `${result.checked} SecretProviderClasses and snippets checked`)
  t.same(
    result.problems.map((p) => `${p.file}:${p.line}: ${p.code}`),
    // ca.crt exists only when the certificate material holds a CA: true for a PKI issue, but not
    // something the SecretProviderClass alone can promise.
    ['examples/outputs-secretproviderclass.yaml:24: SECRET_OBJECTS_MAYBE'],
  )
})

t.test('lintYaml: an openbao class is checked with OpenBao’s names, precedence and messages', async (t) => {
  const text = asProvider(
    'openbao',
    SPC(
      [
        '    baoRoleName: app', // 9
        '    baoAddress: ftp://bao', // 10
        '    vaultAddress: https://ignored.example:8200', // 11: baoAddress wins
        '    openbaoAuthMountPath: jwt', // 12
        '    vaultKubernetesMountPath: kubernetes', // 13
        '    baoSkipTLSVerify: "yes"', // 14
        '    baoTLSClientCertPath: /c.pem', // 15
        '    baoReadConsistency: consistent', // 16
        '    objects: "- {objectName: a, secretPath: s}"',
      ].join('\n'),
    ),
  )
  const result = lintYaml(text, 'f', { vaultDefaults: DEFAULTS })
  t.same(
    result.problems.map((p) => [p.line, p.parameter, p.provider, p.message]),
    [
      [10, 'baoAddress', 'openbao', 'parameter "baoAddress" "ftp://bao" must start with https://, http:// or unix://'],
      [
        12,
        'openbaoAuthMountPath',
        'openbao',
        'set only one of parameters "openbaoAuthMountPath" and "vaultKubernetesMountPath" (they are aliases)',
      ],
      [14, 'baoSkipTLSVerify', 'openbao', 'parameter "baoSkipTLSVerify" must be true or false, got "yes"'],
      [
        15,
        'baoTLSClientCertPath',
        'openbao',
        'parameters "baoTLSClientCertPath" and "baoTLSClientKeyPath" go together: set both or neither',
      ],
      [16, 'baoReadConsistency', 'openbao', 'parameter "baoReadConsistency" "consistent" must be strong or eventual'],
    ],
  )
  const noAddress = lintYaml(
    asProvider('openbao', SPC("    roleName: app\n    objects: '- {objectName: a, secretPath: s}'")),
    'f',
    {
      vaultDefaults: DEFAULTS,
    },
  )
  t.same(
    noAddress.problems.map((p) => [p.code, p.parameter, p.message]),
    [
      [
        'NO_VAULT_ADDRESS',
        'baoAddress',
        'no parameter "baoAddress": Mounts use the provider\'s -openbao-addr / BAO_ADDR, and fail without one (lint --vault-addr=… checks against yours)',
      ],
    ],
  )
  const refused = lintYaml(
    asProvider(
      'openbao',
      SPC(
        "    roleName: app\n    openbaoAddress: https://bao.example:8200\n    objects: '- {objectName: a, secretPath: s}'",
      ),
    ),
    'f',
    { vaultDefaults: DEFAULTS, allowlist: new AddressAllowlist(['https://other.example:8200']) },
  )
  t.same(
    refused.problems.map((p) => [p.line, p.code, p.parameter]),
    [[10, 'VAULT_ADDRESS_NOT_ALLOWED', 'openbaoAddress']],
  )
})

t.test('lintYaml: which classes are ours, and with which names they are checked', async (t) => {
  const vault = SPC("    roleName: app\n    objects: '- {objectName: a, secretPath: s}'")
  const all = [vault, asProvider('openbao', vault), asProvider('azure', vault), asProvider('custom', vault)].join(
    '---\n',
  )
  const byDefault = lintYaml(all, 'f', { vaultDefaults: WITH_ADDRESS })
  t.same([byDefault.checked, byDefault.skipped, byDefault.providers], [2, 2, { vault: 1, openbao: 1 }])
  const onlyOpenbao = lintYaml(all, 'f', { vaultDefaults: WITH_ADDRESS, provider: 'openbao' })
  t.same([onlyOpenbao.checked, onlyOpenbao.skipped, onlyOpenbao.providers], [1, 3, { openbao: 1 }])
  // A provider deployed under a name of its own is checked as vault-csi-provider's drop-in, as before.
  const custom = lintYaml(all, 'f', { vaultDefaults: DEFAULTS, provider: 'custom' })
  t.same([custom.checked, custom.providers], [1, { custom: 1 }])
  t.same(
    custom.problems.map((p) => [p.provider, p.parameter]),
    [['custom', 'vaultAddress']],
    'vault names: the missing address is "vaultAddress"',
  )
})

t.test('lint-only codes always carry their documented severity', async (t) => {
  const text = [
    'kind: SecretProviderClass',
    'metadata: {}',
    'spec:',
    '  provider: vault',
    '  secretObjects:',
    '    - {secretName: s, type: Opaque, data: [{objectName: w/ca.crt, key: ca}, {objectName: nope, key: x}]}',
    '  parameters:',
    '    roleName: 1',
    '    typo: x',
    "    objects: '- {objectName: w, secretPath: p, format: tls}'",
  ].join('\n')
  const problems = lintYaml(text, 'f', { vaultDefaults: DEFAULTS }).problems
  const lintOnly = problems.filter((p) => p.code in LINT_CODES)
  t.same([...new Set(lintOnly.map((p) => p.code))].sort(), [
    'MANIFEST',
    'NO_VAULT_ADDRESS',
    'SECRET_OBJECTS',
    'SECRET_OBJECTS_MAYBE',
    'UNKNOWN_PARAMETER',
  ])
  for (const p of lintOnly)
    t.equal(p.severity, LINT_CODES[p.code as keyof typeof LINT_CODES], `${p.code}: ${p.message}`)
})

t.test('lintObjects: an object’s namespace is checked as a Mount checks it', async (t) => {
  const text = ['- objectName: a', '  secretPath: secret/data/a', '  namespace: "team a"', ''].join('\n')
  const result = lintObjects(text)
  t.same(
    result.problems.map((p) => [p.line, p.code, p.message]),
    [[1, 'BAD_OBJECT', parseError(text)]],
  )
  t.match(parseError(text), /namespace "team a" may hold only visible ASCII/)
  t.equal(lintObjects('- {objectName: a, secretPath: secret/data/a, namespace: team-a/apps}\n').problems.length, 0)
})
