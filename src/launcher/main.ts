/**
 * The daemon's entry as the image runs it: `node dist/daemon.js -endpoint=…` (this module, bundled by
 * scripts/bundle.mjs). It runs the daemon's modules (src/main.ts and what it imports, joined into
 * dist/daemon-main.cjs) from V8's code cache, made after a start so that it holds the functions a
 * start runs, not only each module's top level (see ./code-cache.ts for why).
 *
 *   node dist/daemon.js -fill-code-cache [flags]   starts the daemon on a private socket, writes
 *       the cache into $NODE_COMPILE_CACHE once it serves, and shuts it down (the image's build
 *       does this once, as the daemon's user, with the ENTRYPOINT's Node flags; Dockerfile).
 *   node dist/daemon.js [flags]                    reads that cache when there is one, and never
 *       writes: without one the daemon starts as it would without any (V8 compiles lazily).
 *
 * NODE_DEBUG=vcp-code-cache prints whether V8 took the cache.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { debuglog } from 'node:util'
import vm from 'node:vm'
import type { startDaemon } from '../main.js'
import { RUNTIME_NAME } from '../package-info.js'
import { codeCacheFile, processKey, readCodeCache, writeCodeCache } from './code-cache.js'

/**
 * Set by scripts/bundle.mjs when it bundles this module: the name of the daemon's joined modules
 * (beside this file), and the SHA-256 of their text.
 */
declare const __VCP_DAEMON_MAIN_FILE__: string | undefined
declare const __VCP_DAEMON_MAIN_SHA256__: string

/** The launcher's own flag, first on the command line: a fill instead of a run. */
const FILL_FLAGS = ['-fill-code-cache', '--fill-code-cache']

const debug = debuglog('vcp-code-cache')

function fail(message: string, code: number): never {
  process.stderr.write(`${RUNTIME_NAME}: ${message}\n`)
  process.exit(code)
}

/** What dist/daemon-main.cjs exports (src/main.ts). */
interface DaemonMain {
  startDaemon: typeof startDaemon
}

/**
 * CommonJS's function wrapper, as Node's loader gives a module its `require`, `module` and
 * `__filename`. The head stays on the file's first line (columnOffset keeps stack traces' columns).
 */
const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) {'
const WRAPPER_TAIL = '\n})'
type DaemonMainFunction = (
  exports: object,
  require: NodeJS.Require,
  module: { exports: object },
  filename: string,
  dirname: string,
) => void

/**
 * Runs dist/daemon-main.cjs as Node would run a CommonJS module, but compiled by node:vm with
 * `cachedData`: the returned Script can make a new cache later. (Node applies no source map to a
 * node:vm script: `node --enable-source-maps dist/src/main.js` runs the same code unjoined, with
 * tsc's maps, when a trace must lead to src/.)
 */
function loadDaemonMain(mainFile: string, cachedData: Buffer | undefined): { daemon: DaemonMain; script: vm.Script } {
  const script = new vm.Script(WRAPPER_HEAD + readFileSync(mainFile, 'utf8') + WRAPPER_TAIL, {
    filename: mainFile,
    columnOffset: -WRAPPER_HEAD.length,
    cachedData,
    // No importModuleDynamically: an import() in a script from V8's code cache finds no loader in
    // Node (20 and 26), so the daemon loads its lazy packages with require() (bundle.test.ts holds it).
  })
  const module = { exports: {} }
  const run = script.runInThisContext() as DaemonMainFunction
  run(module.exports, createRequire(mainFile), module, mainFile, path.dirname(mainFile))
  return { daemon: module.exports as DaemonMain, script }
}

function launch(): void {
  if (typeof __VCP_DAEMON_MAIN_FILE__ === 'undefined')
    fail('run the bundled launcher, dist/daemon.js (npm run build)', 1)
  const mainFile = path.join(path.dirname(fileURLToPath(import.meta.url)), __VCP_DAEMON_MAIN_FILE__)
  const argv = process.argv.slice(2)
  const fill = argv.length > 0 && FILL_FLAGS.includes(argv[0]!)
  const cacheDir = process.env['NODE_COMPILE_CACHE'] || undefined
  if (fill && cacheDir === undefined) {
    fail('-fill-code-cache writes into $NODE_COMPILE_CACHE: set it to the directory the daemon will read', 2)
  }
  const cacheFile = cacheDir && codeCacheFile(cacheDir, processKey(__VCP_DAEMON_MAIN_SHA256__))
  const cachedData = cacheFile && !fill ? readCodeCache(cacheFile) : undefined

  const { daemon, script } = loadDaemonMain(mainFile, cachedData)
  if (cachedData) debug('%s: %s', cacheFile, script.cachedDataRejected ? 'rejected by V8' : 'accepted')
  else debug('no code cache%s', cacheFile ? ` at ${cacheFile}` : ' (NODE_COMPILE_CACHE is not set)')
  if (!fill || cacheFile === undefined) {
    void daemon.startDaemon(argv)
    return
  }
  void fillCodeCache(daemon, script, cacheFile, argv.slice(1))
}

/**
 * Starts the daemon on a private socket (and an ephemeral health port), so that V8 compiles what a
 * start runs; then writes the cache and stops the daemon the way SIGTERM does.
 */
async function fillCodeCache(daemon: DaemonMain, script: vm.Script, file: string, flags: string[]): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'vcp-fill-'))
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  await daemon.startDaemon([`-endpoint=${path.join(dir, 'provider.sock')}`, '-health-addr=127.0.0.1:0', ...flags])
  const data = script.createCachedData()
  try {
    writeCodeCache(file, data)
  } catch (err) {
    fail(`cannot write the code cache ${file}: ${err instanceof Error ? err.message : String(err)}`, 1)
  }
  process.stderr.write(`${RUNTIME_NAME}: code cache written to ${file} (${data.length} bytes)\n`)
  process.kill(process.pid, 'SIGTERM')
}

launch()
