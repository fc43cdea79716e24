/**
 * Where the launcher keeps V8's code cache of the daemon's modules, and how it reads and writes it.
 *
 * Node's own compile cache (NODE_COMPILE_CACHE) stores what V8 compiled when a module was first
 * compiled: its top level only. The functions that run at start-up are compiled later, lazily,
 * on every start (~30 ms of Node 26's and ~50 ms of Node 20's start-up here). A cache V8 makes
 * after the daemon has started holds them too; this module names, reads and writes that one, in
 * the same directory as Node's (docs/architecture.md, "Start-up").
 *
 * Only built-ins here: the launcher loads nothing else before the daemon's modules.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'

/** The subdirectory of NODE_COMPILE_CACHE the launcher writes into (Node's own entries sit beside it). */
export const CODE_CACHE_SUBDIR = 'vault-csi-provider'

/** What V8 checks before it accepts a cache, and what the cache's name must therefore hold. */
export interface CodeCacheKey {
  /** SHA-256 (hex) of the script's text: V8 itself compares only the length. */
  scriptSha256: string
  /** process.version: V8 rejects a cache from another V8 build. */
  nodeVersion: string
  arch: string
  /** Node's and V8's flags (execArgv and NODE_OPTIONS): V8 rejects a cache made under other flags. */
  flags: string
}

/** 32-bit FNV-1a, hex: a short, stable tag for the flags in a file name (not a security boundary). */
function fnv1a(text: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, '0')
}

/**
 * The cache file for a key, under `dir` (NODE_COMPILE_CACHE). Every part V8 checks is in the name,
 * so runs with another build, Node or flags use their own file instead of taking turns rejecting
 * and rewriting one.
 */
export function codeCacheFile(dir: string, key: CodeCacheKey): string {
  const name = `daemon-${key.scriptSha256.slice(0, 16)}-${key.nodeVersion}-${key.arch}-${fnv1a(key.flags)}.v8cache`
  return path.join(dir, CODE_CACHE_SUBDIR, name)
}

/** The running process's key for a script whose SHA-256 is known. */
export function processKey(scriptSha256: string): CodeCacheKey {
  return {
    scriptSha256,
    nodeVersion: process.version,
    arch: process.arch,
    flags: `${process.execArgv.join('\0')}\n${process.env['NODE_OPTIONS'] ?? ''}`,
  }
}

/** The cache's bytes, or undefined when there is none (or it cannot be read: the daemon starts without). */
export function readCodeCache(file: string): Buffer | undefined {
  try {
    return readFileSync(file)
  } catch {
    return undefined
  }
}

/**
 * Writes the cache whole or not at all: a temporary file renamed over the name, so that a start
 * never reads half a cache (V8 would reject it, but the start would lose its benefit).
 */
export function writeCodeCache(file: string, data: Uint8Array): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 })
  const tmp = `${file}.${process.pid}.tmp`
  // Whoever may write the cache decides what code the daemon runs: its owner only, whatever the umask.
  // Readable by all, so that a daemon run under another uid than the image's build still uses it.
  writeFileSync(tmp, data, { mode: 0o644 })
  renameSync(tmp, file)
}
