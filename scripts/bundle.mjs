// Joins the daemon — src/main.ts and everything it imports, packages included — into one file,
// dist/daemon.js, the file the image runs. Node then reads one file at start instead of several
// hundred. The linked source map (dist/daemon.js.map) leads logged stack traces back to src/ files
// and lines (src/observability/stack-map.ts).
//
//   node scripts/bundle.mjs      (npm run build runs it after tsc)
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'
import { decode, encode } from '@jridgewell/sourcemap-codec'
import { build } from 'esbuild'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const DAEMON_ENTRY = path.join('src', 'main.ts')
export const DAEMON_BUNDLE = path.join('dist', 'daemon.js')

/**
 * Packages a dependency requires at the top of its code but the daemon never calls. Each is
 * replaced in the bundle by a stand-in that throws, naming this table, if it ever is called.
 * `gain` is what leaving it out saved, measured on the built daemon (Node 20, the image's flags).
 */
export const TRIMMED = [
  {
    name: 'axios',
    requiredBy: 'node-vault',
    why: "node-vault sends every call through the request hook given in its 'request-promise' option (src/vault/vault-client.ts); it calls axios only for a client built without one",
    gain: '−4.0 MiB idle RSS 20 s after start, −4 ms to the first Version answer (−60 ms of CPU until then); Node 20, 2026-12-03 (bench/NOTES.md)',
  },
]

/** Resolves each trimmed package, when required by its dependant, to a stand-in that throws. */
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
      contents: `const fail = () => { throw new Error(${JSON.stringify(`${args.path} is left out of this bundle (scripts/bundle.mjs, TRIMMED)`)}) }
module.exports = new Proxy({}, { get: () => fail })`,
      loader: 'js',
    }))
  },
}

/** esbuild's options for one bundled entry: the daemon's, and the bench's floor (bench/build-floor.mjs). */
export function bundleOptions(entry, outfile) {
  return {
    absWorkingDir: root,
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    // The oldest Node the package supports (package.json engines).
    target: 'node20',
    // CommonJS packages inside an ES module call require() for Node's built-ins: give the file one.
    banner: { js: "import { createRequire } from 'node:module'\nconst require = createRequire(import.meta.url)" },
    // V8 keeps a script's whole text while the process runs (it compiles functions from it lazily):
    // whitespace and comments out, names kept. The source map still leads each position to src/.
    minifyWhitespace: true,
    sourcemap: 'linked',
    // The map names the sources; their text is in the image already (src/ is not, but the lines are enough).
    sourcesContent: false,
    legalComments: 'none',
    logLevel: 'silent',
    metafile: true,
    plugins: [trim],
  }
}

/** Builds the daemon into `outfile`; resolves with esbuild's warnings (there should be none) and its metafile. */
export async function bundle(outfile = path.join(root, DAEMON_BUNDLE)) {
  const result = await build(bundleOptions(DAEMON_ENTRY, outfile))
  keepSourceLines(`${outfile}.map`)
  return { warnings: result.warnings, metafile: result.metafile }
}

/** Whether a map source is a package's file rather than this project's. */
const isPackage = (source) => source.split('/').includes('node_modules')

/**
 * The map keeps one position per original line of src/ (a trace leads to its file and line; the column
 * is the line's first mapped one) and one per run of a package's code, which only marks where that code
 * is: src/observability/stack-map.ts leaves the packages' frames as positions in dist/daemon.js. The
 * daemon parses the map when it logs its first stack; esbuild's full map (every token, 1.6 MB) would
 * then hold tens of MiB for the rest of the process, this one (about 60 KB) next to nothing.
 */
function keepSourceLines(mapFile) {
  const map = JSON.parse(readFileSync(mapFile, 'utf8'))
  const mappings = decode(map.mappings).map((line) => {
    const out = []
    for (const segment of line) {
      const previous = out[out.length - 1]
      const same =
        previous !== undefined &&
        previous[1] === segment[1] &&
        (isPackage(map.sources[segment[1]]) || previous[2] === segment[2])
      if (!same) out.push(segment.slice(0, 4))
    }
    return out
  })
  writeFileSync(mapFile, JSON.stringify({ ...map, names: [], mappings: encode(mappings) }))
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { warnings } = await bundle()
  for (const w of warnings) process.stderr.write(`bundle: ${w.text}\n`)
  if (warnings.length > 0) process.exit(1)
}
