// scripts/bundle.mjs: the daemon as the image runs it (dist/daemon.js), tsc's output joined by esbuild.
import { readFile } from 'node:fs/promises'
import { builtinModules } from 'node:module'
import { join } from 'node:path'
import t from 'tap'
import {
  DAEMON_BUNDLE,
  DAEMON_ENTRY,
  EAGER_PACKAGES,
  FLOOR_BUNDLE,
  FLOOR_ENTRY,
  NEVER_LOADED_DEPENDENCIES,
  bundle,
  bundleFloor,
  packageOf,
} from '../../../scripts/bundle.mjs'
import { PACKAGE_ROOT } from '../../../src/package-info.js'
import { makeTempDir } from '../../support/tmp.js'

const pkg = JSON.parse(await readFile(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>
}

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
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  const { metafile } = await bundle(join(tmp.path, 'daemon.js'))
  const output = Object.values(metafile.outputs).find((o) => o.entryPoint === DAEMON_ENTRY)
  const builtins = new Set(builtinModules)
  const esImports = (output?.imports ?? [])
    .filter((i) => i.kind !== 'require-call' && (i.path.startsWith('node:') || builtins.has(i.path)))
    .map((i) => `${i.kind} ${i.path}`)
  t.same(esImports, [], 'no built-in is imported by the bundled code')
  const text = await readFile(join(PACKAGE_ROOT, DAEMON_BUNDLE), 'utf8')
  t.match(
    text,
    /^import \{ createRequire as __vcpCreateRequire \} from 'node:module'$/m,
    'but node:module, in the banner, for its createRequire',
  )
  t.match(text, /__require\("node:http"\)/, 'node:http through require()')
})

t.test(
  'the bundle is minified but for its names: V8 keeps its whole text for as long as the daemon runs',
  async (t) => {
    const text = await readFile(join(PACKAGE_ROOT, DAEMON_BUNDLE), 'utf8')
    t.notMatch(text, /^\s*\/\/ /m, 'no line comments')
    t.notMatch(text, /\n {2}/, 'no indentation')
    t.match(text, /function runMount\(/, 'function names kept (stack traces name them)')
    t.match(text, /\n\/\/# sourceMappingURL=daemon\.js\.map\n?$/, 'with its source map')
  },
)

t.test('the bundle holds our modules and the packages loaded before the socket serves, and no other', async (t) => {
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  const { metafile } = await bundle(join(tmp.path, 'daemon.js'))
  const inputs = Object.keys(metafile.inputs)
  t.ok(inputs.includes(DAEMON_ENTRY), `${DAEMON_ENTRY} is the entry`)
  const fromPackages = inputs.filter((f) => !f.startsWith('dist/src/') && !f.startsWith('builtin:node:'))
  t.same(
    fromPackages.filter((f) => !f.startsWith('node_modules/')),
    ['proto/messages.cjs'],
    'everything else in it comes from node_modules, but the gRPC messages’ generated code',
  )
  const bundled = new Set(
    fromPackages.filter((f) => f.startsWith('node_modules/')).map((f) => packageOf(f.slice('node_modules/'.length))),
  )
  for (const p of EAGER_PACKAGES) t.ok(bundled.has(p), `${p} is inside (it loads before the socket serves)`)
  for (const p of ['undici', 'node-vault', 'yaml', 'mustache', 'prom-client', 'axios']) {
    t.notOk(bundled.has(p), `${p} is not inside (it loads when first needed, or never)`)
  }
  t.ok(inputs.includes('builtin:node:http'), 'Node’s built-ins go through the require() stand-ins')
  t.notOk(
    inputs.some((f) => f.startsWith('dist/src/cli/')),
    'the CLI is not part of the daemon',
  )
  const output = Object.entries(metafile.outputs).find(([file]) => file.endsWith('.js'))?.[1]
  const builtins = new Set(builtinModules)
  const packages = output!.imports
    .map((i) => i.path)
    .filter((p) => !p.startsWith('node:') && !builtins.has(p))
    .map(packageOf)
  // The image installs production dependencies with theirs: what an eager package requires is there.
  const eagerDependencies = new Set<string>()
  for (const p of EAGER_PACKAGES) {
    const manifest = JSON.parse(await readFile(join(PACKAGE_ROOT, 'node_modules', p, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>
    }
    for (const d of Object.keys(manifest.dependencies ?? {})) eagerDependencies.add(d)
  }
  for (const p of NEVER_LOADED_DEPENDENCIES) {
    t.ok(eagerDependencies.has(p), `${p} is a dependency of an eager package (installed with it)`)
    t.notOk(bundled.has(p), `${p} is not inside (never loaded by the daemon)`)
  }
  t.ok(bundled.has('protobufjs'), 'protobufjs/minimal is inside (the messages’ code requires it)')
  t.same(
    inputs.filter((f) => /^node_modules\/protobufjs\/src\/(parse|tokenize|root|type)\.js$/.test(f)),
    [],
    'but not its .proto parser or reflection (they come only with proto-loader)',
  )
  t.same(
    [...new Set(packages)].filter((p) => !(p in pkg.dependencies) && !NEVER_LOADED_DEPENDENCIES.includes(p)),
    [],
    'every package it imports is a production dependency (the image has no others)',
  )
  t.same(
    [...new Set(packages)].filter((p) => EAGER_PACKAGES.includes(p)),
    [],
    'no eager package is also imported from node_modules (one copy of each)',
  )
  const lazy = output!.imports.filter((i) => i.kind === 'dynamic-import').map((i) => packageOf(i.path))
  t.ok(lazy.includes('undici') && lazy.includes('node-vault'), 'undici and node-vault stay lazy (first Mount)')
})

t.test('the bench’s floor is bundled the same way: gRPC inside, undici and yaml at its first Mount', async (t) => {
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  const fresh = join(tmp.path, 'floor-provider.bundle.js')
  const { warnings, metafile } = await bundleFloor(fresh)
  t.same(warnings, [], 'esbuild warns about nothing')
  t.equal(
    await readFile(join(PACKAGE_ROOT, FLOOR_BUNDLE), 'utf8'),
    await readFile(fresh, 'utf8'),
    `${FLOOR_BUNDLE} is stale: run npm run build`,
  )
  t.ok(Object.keys(metafile.inputs).includes(FLOOR_ENTRY), `${FLOOR_ENTRY} is the entry`)
  const bundled = new Set(
    Object.keys(metafile.inputs)
      .filter((f) => f.startsWith('node_modules/'))
      .map((f) => packageOf(f.slice('node_modules/'.length))),
  )
  t.ok(bundled.has('@grpc/grpc-js'), 'grpc-js is inside, as in the daemon')
  for (const p of ['undici', 'yaml']) t.notOk(bundled.has(p), `${p} is not inside`)
  const output = Object.values(metafile.outputs).find((o) => o.entryPoint === FLOOR_ENTRY)
  const lazy = (output?.imports ?? []).filter((i) => i.kind === 'dynamic-import').map((i) => packageOf(i.path))
  t.same(lazy.sort(), ['undici', 'yaml'], 'undici and yaml load at the first Mount, as the daemon loads them')
})
