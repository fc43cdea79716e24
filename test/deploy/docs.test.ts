// The operator docs stay complete as the code grows: every flag, SecretProviderClass
// parameter and object field the code reads is in docs/configuration.md, every error code
// of the catalogue has its section in docs/troubleshooting.md, every alert of
// docs/prometheus-alerts.yaml is explained there, every committed benchmark sample is in
// bench/results/README.md, and relative links resolve (the benchmark's notes included).
import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { envAsIn, flagAsIn, FLAGS } from '../../src/config/flags.js'
import { FLAVOURS, PROVIDER_FLAVOURS } from '../../src/config/flavour.js'
import { ERROR_CATALOGUE } from '../../src/errors.js'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { OBJECT_FIELDS } from '../../src/request/object-fields.js'
import { parameter, PARAMETERS } from '../../src/request/parameters.js'

const read = (rel: string): Promise<string> => readFile(join(PACKAGE_ROOT, rel), 'utf8')

t.test('every flag and its environment variable are in docs/configuration.md and the README', async (t) => {
  const doc = await read('docs/configuration.md')
  const readme = await read('README.md')
  t.ok(FLAGS.length >= 30, `${FLAGS.length} flags`)
  for (const flag of FLAGS) {
    t.ok(doc.includes(`\`-${flag.name}\``), `-${flag.name} in docs/configuration.md`)
    t.ok(readme.includes(`\`-${flag.name}\``), `-${flag.name} in README.md`)
  }
  // OpenBao's names of the same settings: in docs/configuration.md.
  const openbaoFlags = FLAGS.flatMap((f) => (f.openbaoName === undefined ? [] : [f.openbaoName]))
  const openbaoVariables = FLAGS.flatMap((f) => (f.openbaoEnv === undefined ? [] : [f.openbaoEnv]))
  t.ok(openbaoFlags.length >= 9 && openbaoVariables.length >= 8, 'OpenBao flags and variables')
  for (const name of openbaoFlags) t.ok(doc.includes(`\`-${name}\``), `-${name} in docs/configuration.md`)
  for (const name of openbaoVariables) t.ok(doc.includes(`\`${name}\``), `${name} in docs/configuration.md`)
  const variables = FLAGS.flatMap((f) => (f.env === undefined ? [] : [f.env]))
  t.ok(variables.length >= 8, `variables: ${variables.join(', ')}`)
  for (const variable of variables) {
    t.ok(doc.includes(`\`${variable}\``), `${variable} in docs/configuration.md`)
    t.ok(readme.includes(`\`${variable}\``), `${variable} in README.md`)
  }
})

t.test('every SecretProviderClass parameter is in docs/configuration.md and the README', async (t) => {
  const doc = await read('docs/configuration.md')
  const readme = await read('README.md')
  t.ok(PARAMETERS.length >= 15, `${PARAMETERS.length} parameters`)
  for (const flavour of PROVIDER_FLAVOURS) {
    for (const name of PARAMETERS.flatMap((p) => p.names[flavour])) {
      t.ok(doc.includes(`\`${name}\``), `${flavour} parameter ${name} in docs/configuration.md`)
    }
  }
  // The README has vault-csi-provider's names; docs/configuration.md OpenBao's too.
  for (const name of PARAMETERS.flatMap((p) => p.names.vault)) {
    t.ok(readme.includes(`\`${name}\``), `parameter ${name} in README.md`)
  }
})

t.test('docs/configuration.md has the table of where the two references differ', async (t) => {
  const doc = await read('docs/configuration.md')
  const heading = '### Where the two references differ'
  t.ok(doc.includes(heading), heading)
  const section = doc.slice(doc.indexOf(heading), doc.indexOf('\n## ', doc.indexOf(heading)))
  for (const flavour of PROVIDER_FLAVOURS) {
    const facts = FLAVOURS[flavour]
    const expected = [
      `\`provider: ${facts.provider}\``,
      `\`${facts.reference}\``,
      `\`${facts.socketName}\``,
      `\`${facts.defaultAudience}\``,
      `\`${facts.defaultHmacSecretName}\``,
      `\`${parameter('address').names[flavour][0]}\``,
      `\`${flagAsIn('vault-addr', flavour)}\``,
      `\`${envAsIn('vault-addr', flavour)}\``,
    ]
    for (const text of expected) t.ok(section.includes(text), `${flavour}: ${text}`)
  }
})

t.test('every object field is in docs/configuration.md and the README', async (t) => {
  const doc = await read('docs/configuration.md')
  const readme = await read('README.md')
  t.ok(OBJECT_FIELDS.length >= 11, `${OBJECT_FIELDS.length} object fields`)
  for (const field of OBJECT_FIELDS) {
    t.ok(doc.includes(`| \`${field.name}\``), `object field ${field.name}: a row in docs/configuration.md`)
    // The README's table has the reference provider's fields; its "Output formats" paragraph names ours.
    const inReadme = field.added ? `\`${field.name}` : `| \`${field.name}\``
    t.ok(readme.includes(inReadme), `object field ${field.name} in README.md`)
  }
})

t.test('every error code has a troubleshooting section with an example message', async (t) => {
  const doc = await read('docs/troubleshooting.md')
  for (const code of Object.keys(ERROR_CATALOGUE)) {
    const heading = `### \`${code}\``
    t.ok(doc.includes(heading), `${heading} in docs/troubleshooting.md`)
    const section = doc.slice(doc.indexOf(heading), doc.indexOf('\n### ', doc.indexOf(heading) + 1))
    t.match(section, /```\n[^`]+\n```/, `${code}: an example message`)
    t.match(section, /\*\*Fix\*\*/, `${code}: a fix`)
  }
})

t.test('every example alert is explained in docs/troubleshooting.md', async (t) => {
  const alerts = parse(await read('docs/prometheus-alerts.yaml')) as {
    groups: Array<{ rules: Array<{ alert?: string }> }>
  }
  const names = alerts.groups.flatMap((g) => g.rules.map((r) => r.alert).filter((a): a is string => !!a))
  t.ok(names.length > 0, `alerts: ${names.join(', ')}`)
  const doc = await read('docs/troubleshooting.md')
  for (const name of names) t.ok(doc.includes(`### \`${name}\``), `${name} explained`)
})

t.test('relative links in the operator and benchmark docs resolve', async (t) => {
  for (const file of [
    'README.md',
    'docs/configuration.md',
    'docs/troubleshooting.md',
    'docs/migration.md',
    'docs/architecture.md',
    'docs/vault-economy.md',
    'docs/outputs.md',
    'docs/cli.md',
    'docs/failure-behaviour.md',
    'docs/sync-controller.md',
    'bench/README.md',
    'bench/NOTES.md',
    'bench/results/README.md',
  ]) {
    const text = await read(file)
    for (const m of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      const target = m[1]!
      if (/^[a-z]+:/.test(target)) continue
      t.ok(existsSync(join(PACKAGE_ROOT, dirname(file), target)), `${file}: ${target} exists`)
    }
  }
})

t.test('every committed benchmark sample is in bench/results/README.md', async (t) => {
  const samples = (await readdir(join(PACKAGE_ROOT, 'bench', 'results'))).filter((f) => /^sample-.*\.md$/.test(f))
  t.ok(samples.length > 0, `${samples.length} samples`)
  const index = await read('bench/results/README.md')
  for (const sample of samples) t.ok(index.includes(`](${sample})`), `${sample} is listed`)
})
