// scripts/bundle.mjs: the daemon as the image runs it (dist/daemon.js), tsc's output joined by esbuild.
import { readFile } from 'node:fs/promises'
import { builtinModules } from 'node:module'
import { join } from 'node:path'
import t from 'tap'
import { DAEMON_BUNDLE, DAEMON_ENTRY, bundle } from '../../../scripts/bundle.mjs'
import { PACKAGE_ROOT } from '../../../src/package-info.js'
import { makeTempDir } from '../../support/tmp.js'

const pkg = JSON.parse(await readFile(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>
}

/** The package a bare import names: `@scope/name/...` or `name/...`. */
const packageOf = (spec: string): string =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/')

t.test('dist/daemon.js is the bundle of the current dist/src (npm run build writes both)', async (t) => {
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  // Same file name, so that the sourceMappingURL comment at its end is the same too.
  const fresh = join(tmp.path, 'daemon.js')
  const { warnings } = await bundle(fresh)
  t.same(warnings, [], 'esbuild warns about nothing')
  t.equal(
    await readFile(join(PACKAGE_ROOT, DAEMON_BUNDLE), 'utf8'),
    await readFile(fresh, 'utf8'),
    `${DAEMON_BUNDLE} is stale: run npm run build`,
  )
})

t.test('Node’s built-ins are required, not imported: no ES facade runs their lazy loaders', async (t) => {
  const text = await readFile(join(PACKAGE_ROOT, DAEMON_BUNDLE), 'utf8')
  const esImports = [...text.matchAll(/^import\b[^;'"]*?from\s*['"](node:[^'"]+)['"]/gm)].map((m) => m[1])
  t.same(esImports, ['node:module'], 'only node:module, for the banner’s createRequire')
  t.match(text, /__require\("node:http"\)/, 'node:http through require()')
})

t.test('the bundle holds only our modules and imports only production packages and Node built-ins', async (t) => {
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  const { metafile } = await bundle(join(tmp.path, 'daemon.js'))
  const inputs = Object.keys(metafile.inputs)
  t.ok(inputs.includes(DAEMON_ENTRY), `${DAEMON_ENTRY} is the entry`)
  t.same(
    inputs.filter((f) => !f.startsWith('dist/src/') && !f.startsWith('builtin:node:')),
    [],
    'no package is copied into it (they load from node_modules, lazily where the source says so)',
  )
  t.ok(inputs.includes('builtin:node:http'), 'Node’s built-ins go through the require() stand-ins')
  t.notOk(
    inputs.some((f) => f.startsWith('dist/src/cli/')),
    'the CLI is not part of the daemon',
  )
  const output = Object.entries(metafile.outputs).find(([file]) => file.endsWith('.js'))?.[1]
  const imported = output!.imports.map((i) => i.path)
  const builtins = new Set(builtinModules)
  const packages = imported.filter((p) => !p.startsWith('node:') && !builtins.has(p)).map(packageOf)
  t.ok(packages.includes('@grpc/grpc-js'), 'imports what it serves with')
  t.same(
    [...new Set(packages)].filter((p) => !(p in pkg.dependencies)),
    [],
    'every package it imports is a production dependency (the image has no others)',
  )
  const lazy = output!.imports.filter((i) => i.kind === 'dynamic-import').map((i) => packageOf(i.path))
  t.ok(lazy.includes('undici') && lazy.includes('node-vault'), 'undici and node-vault stay lazy (first Mount)')
})
