// Writes the daemon as the image runs it:
// - dist/daemon-main.cjs: the daemon (tsc's dist/src/main.js and the modules it imports) joined into
//   one file by esbuild, with its source map dist/daemon-main.cjs.map (mapped through tsc's maps to
//   src/*.ts). Why one file: Node resolves, reads, compiles and links each module on its own, and the
//   daemon's ~60 modules cost ~35–45 ms of every start (npm run bench, footprint). The packages the
//   daemon loads before its socket serves (EAGER_PACKAGES: gRPC, the logger, the LRU; and the gRPC
//   messages' code with protobufjs/minimal) go into the file too, with the packages they require:
//   ~115 files Node would otherwise resolve and read one by one, 45–50 ms of every start. Every other
//   package stays outside, loaded from node_modules when first needed: bundling all of them held
//   ~25 MiB more after the first Mounts (undici, yaml and node-vault must stay lazy;
//   docs/architecture.md).
// - dist/daemon.js: the launcher (src/launcher/main.ts), which runs dist/daemon-main.cjs from a V8
//   code cache made after a start (-fill-code-cache). That is why the joined modules are CommonJS:
//   the launcher compiles them as a script with node:vm, whose code cache V8 can make after it
//   ran, with the functions a start compiled.
//
// It also writes the bench's floor (bench/floor-provider.ts) the same way, when tsc compiled it (not
// in the image's build): dist/bench/floor-provider.main.cjs and its launcher
// dist/bench/floor-provider.bundle.js.
//
//   node scripts/bundle.mjs      (npm run build runs it after tsc)
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
/** The daemon's entry in tsc's output, and its modules joined, relative to the package root. */
export const DAEMON_ENTRY = path.join('dist', 'src', 'main.js')
export const DAEMON_BUNDLE = path.join('dist', 'daemon-main.cjs')
/** The launcher in tsc's output, and bundled: the file the image runs (`node dist/daemon.js`). */
export const LAUNCHER_ENTRY = path.join('dist', 'src', 'launcher', 'main.js')
export const LAUNCHER_BUNDLE = path.join('dist', 'daemon.js')

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
 * The latency and footprint scenarios' floor (bench/floor-provider.ts), built as the daemon is so
 * that its start-up compares: gRPC inside, undici and yaml loaded at its first Mount, as ours does;
 * FLOOR_BUNDLE is its launcher (the same src/launcher), FLOOR_MAIN_BUNDLE its modules joined.
 */
export const FLOOR_ENTRY = path.join('dist', 'bench', 'floor-provider.js')
export const FLOOR_BUNDLE = path.join('dist', 'bench', 'floor-provider.bundle.js')
export const FLOOR_MAIN_BUNDLE = path.join('dist', 'bench', 'floor-provider.main.cjs')
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

/** An ES module's `require`, for the stand-ins of Node's built-ins (builtinsByRequire). */
const ESM_BANNER =
  "import { createRequire as __vcpCreateRequire } from 'node:module'\nconst require = __vcpCreateRequire(import.meta.url)"

/**
 * dist/daemon-main.cjs is a CommonJS module: the launcher compiles it inside CommonJS's function
 * wrapper with node:vm (or require()s it when source maps are on). Our modules' `import.meta.url`
 * becomes the file's URL (MAIN_DEFINE): they find package.json and node_modules from it. The
 * directive comes first: esbuild's own "use strict" follows this banner, where it does nothing.
 */
const MAIN_BANNER = "'use strict';const __vcpImportMetaUrl = require('node:url').pathToFileURL(__filename).href;"
const MAIN_DEFINE = { 'import.meta.url': '__vcpImportMetaUrl' }

/** Node's built-ins stay require() calls in CommonJS output. */
const builtinsExternal = {
  name: 'builtins-external',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => ({ path: args.path, external: true }))
  },
}

/**
 * Builds the daemon into `outDir` (default dist/): its modules joined (DAEMON_BUNDLE's name) and the
 * launcher (LAUNCHER_BUNDLE's name). Resolves with esbuild's warnings (there should be none) and the
 * metafiles (what went in, what the outputs import).
 */
export function bundle(outDir = path.join(root, 'dist')) {
  return bundleLaunched(
    DAEMON_ENTRY,
    path.join(outDir, path.basename(DAEMON_BUNDLE)),
    path.join(outDir, path.basename(LAUNCHER_BUNDLE)),
    EAGER_PACKAGES,
  )
}

/** Builds the floor into `outDir` (default dist/bench/) as the daemon is built; resolves as bundle() does. */
export function bundleFloor(outDir = path.join(root, path.dirname(FLOOR_BUNDLE))) {
  return bundleLaunched(
    FLOOR_ENTRY,
    path.join(outDir, path.basename(FLOOR_MAIN_BUNDLE)),
    path.join(outDir, path.basename(FLOOR_BUNDLE)),
    FLOOR_EAGER_PACKAGES,
  )
}

/**
 * `entry` joined into `mainFile` (CommonJS), and the launcher into `launcherFile`, carrying the joined
 * file's name and SHA-256 (V8 checks only a script's length before it takes a cache, so the cache's
 * name must say which text it is for).
 */
async function bundleLaunched(entry, mainFile, launcherFile, eager) {
  const main = await bundleOne(entry, mainFile, eager, {
    format: 'cjs',
    plugins: [builtinsExternal],
    banner: { js: MAIN_BANNER },
    define: MAIN_DEFINE,
  })
  const sha256 = createHash('sha256').update(readFileSync(mainFile)).digest('hex')
  const launcher = await bundleOne(LAUNCHER_ENTRY, launcherFile, [], {
    sourcemap: false,
    define: {
      __VCP_DAEMON_MAIN_FILE__: JSON.stringify(path.basename(mainFile)),
      __VCP_DAEMON_MAIN_SHA256__: JSON.stringify(sha256),
    },
  })
  return {
    warnings: [...main.warnings, ...launcher.warnings],
    metafile: main.metafile,
    launcherMetafile: launcher.metafile,
  }
}

/** One esbuild run; `options` overrides the ES module defaults (format, plugins, banner…). */
async function bundleOne(entry, outfile, eager, options = {}) {
  const { plugins = [builtinsByRequire], ...rest } = options
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
    banner: { js: ESM_BANNER },
    logLevel: 'silent',
    metafile: true,
    ...rest,
    plugins: [...plugins, eagerPackagesOnly(eager)],
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
