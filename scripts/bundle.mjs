// The daemon as one ES module and its lazily loaded chunks (dist/bundle/), built from tsc's output.
//
// Why: Node's module loader resolves, reads and compiles ~310 files of grpc-js, protobufjs, yaml,
// prom-client and pino one by one at start-up; that, not our code, is most of spawn → serving
// (npm run bench, footprint). One file compiles in one go. Dynamic imports (node-vault, loaded on
// the first Vault call) stay separate chunks, so a node without Vault-using pods never compiles them.
// The image runs dist/bundle/main.js; dist/src/ stays for the CLI and the tests.
//
//   node scripts/bundle.mjs        (after tsc; part of `npm run build` and the test command)
import { build } from 'esbuild'
import { rm } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Two dependencies are bundled in part, by replacing what src/ imports with a module of the
 * package's own files (pinned in package-lock.json; the integration tests run this bundle, so a
 * dependency upgrade that moves these files fails them):
 *
 * - undici: src/ uses `Pool` and `buildConnector`; the package's index also loads fetch,
 *   WebSocket, caches, mocks and proxy agents, about 1 MB that would be compiled at start-up and
 *   never used. The index adds request() and the other calls to Dispatcher's prototype; so does this.
 * - axios, which node-vault loads although the provider replaces its HTTP call (node-vault's
 *   `request-promise` hook, src/vault/http.ts): about 480 KB with mime-db and form-data, compiled
 *   on the first Vault call and never run. A stand-in that fails loudly if anything ever calls it.
 */
const PARTS = {
  undici: [
    "const Dispatcher = require('undici/lib/dispatcher/dispatcher.js')",
    "Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js'))",
    "module.exports = { Pool: require('undici/lib/dispatcher/pool.js'), buildConnector: require('undici/lib/core/connect.js') }",
  ].join('\n'),
  axios: [
    'function unused() {',
    "  throw new Error('axios is not part of the bundle: node-vault must call the provider transport (request-promise hook)')",
    '}',
    'module.exports = { create: unused, request: unused, default: { create: unused } }',
  ].join('\n'),
}
const partialPackages = {
  name: 'partial-packages',
  setup(b) {
    b.onResolve({ filter: /^(undici|axios)$/ }, (args) => ({ path: args.path, namespace: 'partial-packages' }))
    b.onLoad({ filter: /.*/, namespace: 'partial-packages' }, (args) => ({
      contents: PARTS[args.path],
      loader: 'js',
      resolveDir: root,
    }))
  },
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const outdir = path.join(root, 'dist', 'bundle')

await rm(outdir, { recursive: true, force: true })
await build({
  absWorkingDir: root,
  entryPoints: { main: 'dist/src/main.js' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // CommonJS dependencies call require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as __vcpRequire } from 'node:module'; const require = __vcpRequire(import.meta.url);",
  },
  // Smaller to parse. Identifiers are not minified, so stack traces and profiles still read
  // (esbuild's keepNames would wrap every function and class creation in a call at run time).
  minifyWhitespace: true,
  minifySyntax: true,
  // Third-party licence headers stay with the code they cover.
  legalComments: 'eof',
  // For `node --enable-source-maps dist/bundle/main.js` when a stack trace must point into src/.
  sourcemap: 'linked',
  logLevel: 'warning',
  plugins: [partialPackages],
})
