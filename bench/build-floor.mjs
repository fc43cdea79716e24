// Builds the bench's floor (bench/floor-provider.ts) into one file, dist/bench/floor-provider.bundle.js
// with its source map, the way scripts/bundle.mjs builds the daemon: the same esbuild options and the
// same packages left out (its TRIMMED table), so that the floor loads what the daemon loads, from one
// file, and runs with the same Node flags. bench/run.sh runs it after npm run build.
//
//   node bench/build-floor.mjs
import path from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { TRIMMED } from '../scripts/bundle.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const FLOOR_ENTRY = path.join('bench', 'floor-provider.ts')
// Not dist/bench/floor-provider.js: tsc writes its own (unbundled) output of the entry there.
export const FLOOR_BUNDLE = path.join('dist', 'bench', 'floor-provider.bundle.js')

/** The daemon's trim (scripts/bundle.mjs): each TRIMMED package, when its dependant requires it, becomes a stand-in that throws. */
const trim = {
  name: 'trim',
  setup(b) {
    for (const { name, requiredBy } of TRIMMED) {
      b.onResolve({ filter: new RegExp(`^${name}$`) }, (args) =>
        args.importer.includes(`${path.sep}node_modules${path.sep}${requiredBy}${path.sep}`)
          ? { path: name, namespace: 'trimmed' }
          : undefined,
      )
    }
    b.onLoad({ filter: /.*/, namespace: 'trimmed' }, (args) => ({
      contents: `const fail = () => { throw new Error(${JSON.stringify(`${args.path} is left out of the floor's bundle (bench/build-floor.mjs)`)}) }
module.exports = new Proxy({}, { get: () => fail })`,
      loader: 'js',
    }))
  },
}

/** Builds the floor into `outfile`; resolves with esbuild's warnings (there should be none) and its metafile. */
export async function buildFloor(outfile = path.join(root, FLOOR_BUNDLE)) {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [FLOOR_ENTRY],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    banner: { js: "import { createRequire } from 'node:module'\nconst require = createRequire(import.meta.url)" },
    sourcemap: 'linked',
    sourcesContent: false,
    legalComments: 'none',
    logLevel: 'silent',
    metafile: true,
    plugins: [trim],
  })
  return { warnings: result.warnings, metafile: result.metafile }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { warnings } = await buildFloor()
  for (const w of warnings) process.stderr.write(`build-floor: ${w.text}\n`)
  if (warnings.length > 0) process.exit(1)
}
