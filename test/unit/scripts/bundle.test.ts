// scripts/bundle.mjs: the daemon as the image runs it, dist/daemon.js, src/main.ts and every package
// it imports joined by esbuild into one file with its source map, less the TRIMMED packages.
import { readFile } from 'node:fs/promises'
import { builtinModules } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import t from 'tap'
import { DAEMON_BUNDLE, DAEMON_ENTRY, TRIMMED, bundle } from '../../../scripts/bundle.mjs'
import { PACKAGE_ROOT } from '../../../src/package-info.js'
import { makeTempDir } from '../../support/tmp.js'

/** The package a node_modules path belongs to: `@scope/name` or `name`. */
function packageOf(input: string): string {
  const parts = input.slice('node_modules/'.length).split('/')
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!
}

interface SourceMapFile {
  sources: string[]
  names: string[]
  mappings: string
}

/**
 * A map's file sources as absolute paths: maps built into another folder name the same files by other
 * relative paths. A trimmed package's stand-in is a source with a namespace (`trimmed:axios`), not a file.
 */
async function readMap(file: string): Promise<SourceMapFile> {
  const map = JSON.parse(await readFile(file, 'utf8')) as SourceMapFile
  const absolute = (s: string): string => (s.includes(':') ? s : resolve(dirname(file), s))
  return { sources: map.sources.map(absolute), names: map.names, mappings: map.mappings }
}

let built: Awaited<ReturnType<typeof bundle>>
let fresh: string
t.before(async () => {
  const tmp = await makeTempDir('vcp-bundle-')
  t.teardown(tmp.cleanup)
  // The same file name, so that the sourceMappingURL comment is the same too.
  fresh = join(tmp.path, 'daemon.js')
  built = await bundle(fresh)
})

t.test(
  'dist/daemon.js and its map are what bundle() builds from the current src/ (npm run build writes them)',
  async (t) => {
    t.same(built.warnings, [], 'esbuild warns about nothing')
    t.equal(
      await readFile(join(PACKAGE_ROOT, DAEMON_BUNDLE), 'utf8'),
      await readFile(fresh, 'utf8'),
      `${DAEMON_BUNDLE} is stale: run npm run build`,
    )
    t.same(
      await readMap(join(PACKAGE_ROOT, `${DAEMON_BUNDLE}.map`)),
      await readMap(`${fresh}.map`),
      `${DAEMON_BUNDLE}.map is stale: run npm run build`,
    )
  },
)

t.test('the bundle holds src/main.ts and the packages it imports, not the CLI', async (t) => {
  const inputs = Object.keys(built.metafile.inputs)
  t.ok(inputs.includes(DAEMON_ENTRY), `${DAEMON_ENTRY} is the entry`)
  const packages = new Set(inputs.filter((f) => f.startsWith('node_modules/')).map(packageOf))
  for (const p of ['@grpc/grpc-js', '@grpc/proto-loader', 'pino', 'prom-client', 'undici', 'yaml', 'lru-cache']) {
    t.ok(packages.has(p), `${p} is inside`)
  }
  t.notOk(
    inputs.some((f) => f.startsWith('src/cli/')),
    'the CLI is not part of the daemon',
  )
})

t.test('each TRIMMED package is left out, its dependant is inside, and its gain is written down', async (t) => {
  const inputs = Object.keys(built.metafile.inputs)
  const packages = new Set(inputs.filter((f) => f.startsWith('node_modules/')).map(packageOf))
  const notes = await readFile(join(PACKAGE_ROOT, 'bench', 'NOTES.md'), 'utf8')
  const leftOut = notes.slice(notes.indexOf('## What the bundle leaves out'))
  t.ok(TRIMMED.length > 0, 'something is trimmed (axios, for node-vault)')
  for (const p of TRIMMED) {
    t.notOk(packages.has(p.name), `${p.name} is not inside`)
    t.ok(packages.has(p.requiredBy), `${p.requiredBy}, which requires it, is inside`)
    t.ok(leftOut.includes(p.name), `bench/NOTES.md, "What the bundle leaves out", measures leaving ${p.name} out`)
  }
})

t.test('at run time the bundle imports nothing but Node built-ins', async (t) => {
  const output = Object.values(built.metafile.outputs).find((o) => o.entryPoint === DAEMON_ENTRY)
  t.ok(output, 'the entry has an output')
  const builtins = new Set(builtinModules)
  const others = (output?.imports ?? []).filter((i) => !i.path.startsWith('node:') && !builtins.has(i.path))
  t.same(others, [], 'no package left to node_modules')
})
