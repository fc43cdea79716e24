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
import { ERROR_CATALOGUE } from '../../src/errors.js'
import { PACKAGE_ROOT } from '../../src/package-info.js'

const read = (rel: string): Promise<string> => readFile(join(PACKAGE_ROOT, rel), 'utf8')

/** Names matched by `pattern` (group 1) inside the block of `source` that starts at `start`. */
function namesIn(source: string, start: string, end: string, pattern: RegExp): string[] {
  const from = source.indexOf(start)
  if (from === -1) throw new Error(`${start} not found`)
  const block = source.slice(from, source.indexOf(end, from + start.length))
  return [...block.matchAll(pattern)].map((m) => m[1]!)
}

t.test('every flag is in docs/configuration.md', async (t) => {
  const config = await read('src/config/config.ts')
  const doc = await read('docs/configuration.md')
  const strings = namesIn(config, 'const FLAG_SPEC = {', '} as const', /'?([a-z][a-z-]*)'?: \{ type: 'string' \}/g)
  const bools = namesIn(config, 'const BOOL_FLAGS = new Set([', '])', /'([a-z-]+)'/g)
  t.ok(strings.length >= 15 && bools.length >= 3, `flags found: ${[...strings, ...bools].join(', ')}`)
  for (const flag of [...strings, ...bools]) t.match(doc, `\`-${flag}\``, `-${flag} documented`)
})

t.test('every SecretProviderClass parameter and object field is in docs/configuration.md', async (t) => {
  const doc = await read('docs/configuration.md')
  const request = await read('src/request/parse-request.ts')
  const params = [...new Set([...request.matchAll(/(?:attrs\.get|pick)\('([A-Za-z]+)'/g)].map((m) => m[1]!))]
  t.ok(params.length >= 13, `parameters found: ${params.join(', ')}`)
  for (const p of params) {
    t.match(doc, `\`${p}\``, `parameter ${p} documented`)
  }
  const objects = await read('src/request/objects.ts')
  const fields = namesIn(objects, 'const KNOWN_FIELDS = new Set([', '])', /'([A-Za-z]+)'/g)
  t.ok(fields.length >= 7, `object fields found: ${fields.join(', ')}`)
  for (const f of fields) t.match(doc, `| \`${f}\``, `object field ${f} documented`)
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
