/**
 * Stand-ins in Node's CommonJS module cache (require.cache, documented for adding entries): a
 * package that a dependency requires at the top of its file but the provider never calls gets an
 * entry of ours under the file name its require() resolves to, so the real package is not loaded
 * for nothing (src/vault/no-axios.ts, src/observability/otel-api.ts).
 */
import { Module, createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/**
 * Enters `exports` as the loaded module of `file`, unless that file is in the cache already (the
 * real package stays as it is). Returns whether the stand-in went in.
 */
export function enterStandIn(file: string, exports: unknown): boolean {
  if (require.cache[file] !== undefined) return false
  const entry = new Module(file)
  entry.filename = file
  entry.exports = exports
  entry.loaded = true
  require.cache[file] = entry
  return true
}
