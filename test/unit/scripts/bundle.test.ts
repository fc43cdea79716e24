// scripts/bundle.mjs: the daemon as the image runs it: the launcher (dist/daemon.js) and tsc's
// output of the daemon's modules joined by esbuild (dist/daemon-main.cjs).
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { builtinModules, createRequire } from 'node:module'
import { basename, join } from 'node:path'
import t, { type Test } from 'tap'
import {
  DAEMON_BUNDLE,
  DAEMON_ENTRY,
  EAGER_PACKAGES,
  FLOOR_BUNDLE,
  FLOOR_ENTRY,
  FLOOR_MAIN_BUNDLE,
  LAUNCHER_BUNDLE,
  LAUNCHER_ENTRY,
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

/** The files npm run build wrote are those just built into `fresh` (same names). */
async function sameAsBuilt(t: Test, fresh: string, files: string[]): Promise<void> {
  for (const file of files) {
    t.equal(
      await readFile(join(PACKAGE_ROOT, file), 'utf8'),
      await readFile(join(fresh, basename(file)), 'utf8'),
      `${file} is stale: run npm run build`,
    )
  }
}

t.test(
  'dist/daemon.js and dist/daemon-main.cjs are those of the current dist/src (npm run build writes them)',
  async (t) => {
    const tmp = await makeTempDir('vcp-bundle-')
    t.teardown(tmp.cleanup)
    // Same file names, so that the sourceMappingURL comment and the launcher's reference are the same too.
    const { warnings } = await bundle(tmp.path)
    t.same(warnings, [], 'esbuild warns about nothing')
    await sameAsBuilt(t, tmp.path, [DAEMON_BUNDLE, LAUNCHER_BUNDLE])
  },
)

t.test('the launcher names the joined modules’ file and its SHA-256, and loads nothing but built-ins', async (t) => {
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  const { launcherMetafile } = await bundle(tmp.path)
  const main = await readFile(join(tmp.path, basename(DAEMON_BUNDLE)))
  const sha256 = createHash('sha256').update(main).digest('hex')
  const launcher = await readFile(join(tmp.path, basename(LAUNCHER_BUNDLE)), 'utf8')
  t.match(launcher, `"${basename(DAEMON_BUNDLE)}"`, 'the joined modules’ file')
  t.match(launcher, `"${sha256}"`, 'the SHA-256 of their text: the cache’s name will name this text')
  const inputs = Object.keys(launcherMetafile.inputs)
  t.same(
    inputs.filter((f) => !f.startsWith('builtin:node:')).sort(),
    [LAUNCHER_ENTRY, 'dist/src/launcher/code-cache.js', 'dist/src/package-info.js'].sort(),
    'its own two modules and the package’s name, nothing of the daemon',
  )
  const output = Object.values(launcherMetafile.outputs).find((o) => o.entryPoint === LAUNCHER_ENTRY)
  t.same(
    (output?.imports ?? []).filter((i) => i.kind !== 'require-call').map((i) => `${i.kind} ${i.path}`),
    [],
    'built-ins through require() stand-ins: no ES facade runs their lazy loaders',
  )
  t.match(
    launcher,
    /^import \{ createRequire as __vcpCreateRequire \} from 'node:module'$/m,
    'but node:module, for its createRequire',
  )
})

t.test('the joined modules are one strict CommonJS module, with built-ins required', async (t) => {
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  const { metafile } = await bundle(tmp.path)
  const output = Object.values(metafile.outputs).find((o) => o.entryPoint === DAEMON_ENTRY)
  t.same(
    (output?.imports ?? []).filter((i) => i.kind !== 'require-call'),
    [],
    'only require(): a node:vm script has no ES imports, and its import() finds no loader once from V8’s code cache',
  )
  const text = await readFile(join(PACKAGE_ROOT, DAEMON_BUNDLE), 'utf8')
  t.match(text, /^'use strict';/, 'the strict directive first (ES modules were strict), no #! line')
  t.notMatch(text, /import\.meta/, 'import.meta.url replaced by the file’s URL')
  t.match(text, /require\("node:http"\)/, 'node:http through require()')
  // A CommonJS module Node's own loader can run as well, here in this process.
  const main = createRequire(import.meta.url)(join(PACKAGE_ROOT, DAEMON_BUNDLE)) as Record<string, unknown>
  t.type(main['startDaemon'], 'function', 'it exports startDaemon (src/main.ts)')
})

t.test(
  'the joined modules are minified but for their names: V8 keeps the whole text for as long as the daemon runs',
  async (t) => {
    const text = await readFile(join(PACKAGE_ROOT, DAEMON_BUNDLE), 'utf8')
    t.notMatch(text, /^\s*\/\/ /m, 'no line comments')
    t.notMatch(text, /\n {2}/, 'no indentation')
    t.match(text, /function runMount\(/, 'function names kept (stack traces name them)')
    t.match(text, /\n\/\/# sourceMappingURL=daemon-main\.cjs\.map\n?$/, 'with its source map')
  },
)

t.test('the joined modules hold ours and the packages loaded before the socket serves, and no other', async (t) => {
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  const { metafile } = await bundle(tmp.path)
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
  t.notOk(
    inputs.some((f) => f.startsWith('dist/src/cli/')),
    'the CLI is not part of the daemon',
  )
  const output = Object.entries(metafile.outputs).find(([file]) => file.endsWith('.cjs'))?.[1]
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
})

t.test('the bench’s floor is built the same way: gRPC inside, undici and yaml at its first Mount', async (t) => {
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  const { warnings, metafile, launcherMetafile } = await bundleFloor(tmp.path)
  t.same(warnings, [], 'esbuild warns about nothing')
  await sameAsBuilt(t, tmp.path, [FLOOR_BUNDLE, FLOOR_MAIN_BUNDLE])
  t.ok(Object.keys(metafile.inputs).includes(FLOOR_ENTRY), `${FLOOR_ENTRY} is the entry`)
  t.ok(Object.keys(launcherMetafile.inputs).includes(LAUNCHER_ENTRY), 'run by the daemon’s launcher')
  const sha256 = createHash('sha256')
    .update(await readFile(join(tmp.path, basename(FLOOR_MAIN_BUNDLE))))
    .digest('hex')
  t.match(await readFile(join(tmp.path, basename(FLOOR_BUNDLE)), 'utf8'), `"${sha256}"`, 'named by its own text')
  const bundled = new Set(
    Object.keys(metafile.inputs)
      .filter((f) => f.startsWith('node_modules/'))
      .map((f) => packageOf(f.slice('node_modules/'.length))),
  )
  t.ok(bundled.has('@grpc/grpc-js'), 'grpc-js is inside, as in the daemon')
  for (const p of ['undici', 'yaml']) t.notOk(bundled.has(p), `${p} is not inside`)
  const output = Object.values(metafile.outputs).find((o) => o.entryPoint === FLOOR_ENTRY)
  t.same(
    (output?.imports ?? []).filter((i) => i.kind !== 'require-call'),
    [],
    'only require(), as in the daemon (its import() would find no loader once from V8’s code cache)',
  )
})
