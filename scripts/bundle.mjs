// Writes dist/daemon.js: the daemon (tsc's dist/src/main.js and the modules it imports) joined into
// one ES module by esbuild, with its source map dist/daemon.js.map (mapped through tsc's maps to
// src/*.ts). The image runs it. Why: Node resolves, reads, compiles and links each ES module on its
// own, and the daemon's ~60 modules cost ~35–45 ms of every start (npm run bench, footprint).
// Packages stay outside the file, loaded from node_modules as before: bundling them too started
// faster still but held ~25 MiB more after the first Mounts (undici, yaml and node-vault must stay
// lazy; docs/architecture.md).
//
//   node scripts/bundle.mjs      (npm run build runs it after tsc)
import path from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
/** The daemon's entry in tsc's output, and the bundle, relative to the package root. */
export const DAEMON_ENTRY = path.join('dist', 'src', 'main.js')
export const DAEMON_BUNDLE = path.join('dist', 'daemon.js')

/**
 * Node's own modules (`node:*`) are loaded with require(), not ES `import`. An ES import of a
 * built-in builds a facade module that reads every export, and reading some runs Node's lazy
 * loaders: on Node 26, `node:http` loads its bundled fetch/WebSocket client (undici) and `node:fs`
 * its file streams, ~12 ms and ~2.5 MiB of every start that the daemon never uses. Each
 * `import … from 'node:x'` becomes a CommonJS stand-in `module.exports = require('node:x')`, and
 * the banner gives the file a `require`.
 */
const builtinsByRequire = {
  name: 'builtins-by-require',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) =>
      args.namespace === 'builtin' ? { path: args.path, external: true } : { path: args.path, namespace: 'builtin' },
    )
    b.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)})`,
      loader: 'js',
    }))
  },
}
const BANNER =
  "import { createRequire as __vcpCreateRequire } from 'node:module'\nconst require = __vcpCreateRequire(import.meta.url)"

/**
 * Builds the bundle; resolves with esbuild's warnings (there should be none) and its metafile
 * (what went in, what the output imports).
 */
export async function bundle(outfile = path.join(root, DAEMON_BUNDLE)) {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [DAEMON_ENTRY],
    outfile,
    bundle: true,
    // Every package (node_modules) stays an import resolved at run time, exactly as tsc's output does.
    packages: 'external',
    platform: 'node',
    format: 'esm',
    // The oldest Node the package supports (package.json engines): nothing is down-levelled below it.
    target: 'node20',
    // Not minified: stack traces keep the functions' names, and the map leads back to src/.
    sourcemap: 'linked',
    legalComments: 'none',
    plugins: [builtinsByRequire],
    banner: { js: BANNER },
    logLevel: 'silent',
    metafile: true,
  })
  return { warnings: result.warnings, metafile: result.metafile }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { warnings } = await bundle()
  for (const w of warnings) process.stderr.write(`bundle: ${w.text}\n`)
  if (warnings.length > 0) process.exit(1)
}
