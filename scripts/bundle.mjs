// Writes dist/daemon.js: the daemon (tsc's dist/src/main.js and the modules it imports) joined into
// one ES module by esbuild, with its source map dist/daemon.js.map (mapped through tsc's maps to
// src/*.ts). The image runs it. Why: Node resolves, reads, compiles and links each module on its
// own, and the daemon's ~60 modules cost ~35–45 ms of every start (npm run bench, footprint).
// The packages the daemon loads before its socket serves (EAGER_PACKAGES: gRPC, the logger, the
// LRU; and the gRPC messages' code with protobufjs/minimal) go into the file too, with the packages
// they require: ~115 files Node would otherwise resolve and read one by one, 45–50 ms of every
// start. Every other package stays outside, loaded from node_modules when first needed: bundling
// all of them held ~25 MiB more after the first Mounts (undici, yaml and node-vault must stay lazy;
// docs/architecture.md).
//
// It also writes dist/bench/floor-provider.bundle.js, the bench's floor (bench/floor-provider.ts)
// bundled the same way, when tsc compiled it (not in the image's build).
//
//   node scripts/bundle.mjs      (npm run build runs it after tsc)
import { existsSync } from 'node:fs'
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
/**
 * The packages our modules import that go inside the bundle: each is loaded before the socket
 * serves whatever the daemon does (src/server, src/observability/logger.ts, the caches). A package
 * imported by our modules and not listed here stays an import resolved at run time from
 * node_modules. The gRPC messages' code (proto/messages.cjs, imported as `#proto-messages`) comes in
 * too, with the protobufjs/minimal it requires.
 */
export const EAGER_PACKAGES = ['@grpc/grpc-js', 'pino', 'lru-cache']

/** tsc's output of our modules (and of the bench's floor): their imports of packages are the ones sorted by EAGER_PACKAGES. */
const OUR_MODULES = [path.join(root, 'dist', 'src') + path.sep, path.join(root, 'dist', 'bench') + path.sep]

/**
 * The latency and footprint scenarios' floor (bench/floor-provider.ts), bundled as the daemon is so
 * that its start-up compares: gRPC inside, undici and yaml loaded at its first Mount, as ours does.
 */
export const FLOOR_ENTRY = path.join('dist', 'bench', 'floor-provider.js')
export const FLOOR_BUNDLE = path.join('dist', 'bench', 'floor-provider.bundle.js')
const FLOOR_EAGER_PACKAGES = ['@grpc/grpc-js']

/**
 * Packages an eager package requires only on a path the daemon never takes: they stay outside, so
 * that V8 does not parse their code at every start. grpc-js loads proto-loader (and with it the
 * full protobufjs, ~0.5 MB of source) only to build channelz's service definition.
 */
export const NEVER_LOADED_DEPENDENCIES = ['@grpc/proto-loader']

/** The package a bare import names: `@scope/name/...` or `name/...`. */
export const packageOf = (spec) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/')

/**
 * Our modules' imports of packages not in `eager` stay external; the eager packages, and whatever
 * they require in turn (but NEVER_LOADED_DEPENDENCIES), are resolved by esbuild and go into the
 * file.
 */
const eagerPackagesOnly = (eager) => ({
  name: 'eager-packages-only',
  setup(b) {
    b.onResolve({ filter: /^[^./#]/ }, (args) => {
      if (args.path.startsWith('node:')) return undefined
      const pkg = packageOf(args.path)
      if (NEVER_LOADED_DEPENDENCIES.includes(pkg)) return { path: args.path, external: true }
      // What a file already inside requires (a package, proto/messages.cjs) comes in with it.
      if (!OUR_MODULES.some((dir) => args.importer.startsWith(dir))) return undefined
      return eager.includes(pkg) ? undefined : { path: args.path, external: true }
    })
  },
})

const BANNER =
  "import { createRequire as __vcpCreateRequire } from 'node:module'\nconst require = __vcpCreateRequire(import.meta.url)"

/**
 * Builds the daemon's bundle; resolves with esbuild's warnings (there should be none) and its
 * metafile (what went in, what the output imports).
 */
export function bundle(outfile = path.join(root, DAEMON_BUNDLE)) {
  return bundleOne(DAEMON_ENTRY, outfile, EAGER_PACKAGES)
}

/** Builds the floor's bundle (FLOOR_BUNDLE); resolves as bundle() does. */
export function bundleFloor(outfile = path.join(root, FLOOR_BUNDLE)) {
  return bundleOne(FLOOR_ENTRY, outfile, FLOOR_EAGER_PACKAGES)
}

async function bundleOne(entry, outfile, eager) {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    // The oldest Node the package supports (package.json engines): nothing is down-levelled below it.
    target: 'node20',
    // Whitespace and comments out, names kept: V8 holds the whole text of the file as long as the process
    // runs (the source of every function it compiles later), and the unminified text cost ~1.1 MiB of
    // idle memory on Node 26 where this one costs ~0.75 (npm run bench, footprint; docs/architecture.md).
    // Stack traces keep the functions' names; the map leads a line:column back to src/.
    minifyWhitespace: true,
    sourcemap: 'linked',
    // The packages inside are production dependencies (or theirs): the image installs them in
    // node_modules as well, with their licence files.
    legalComments: 'none',
    plugins: [builtinsByRequire, eagerPackagesOnly(eager)],
    banner: { js: BANNER },
    logLevel: 'silent',
    metafile: true,
  })
  return { warnings: result.warnings, metafile: result.metafile }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const warnings = [...(await bundle()).warnings]
  // The image's build has no bench/ (.dockerignore): the floor is bundled where tsc compiled it.
  if (existsSync(path.join(root, FLOOR_ENTRY))) warnings.push(...(await bundleFloor()).warnings)
  for (const w of warnings) process.stderr.write(`bundle: ${w.text}\n`)
  if (warnings.length > 0) process.exit(1)
}
