/**
 * yaml and mustache, loaded when a Mount first needs them rather than at the
 * daemon's start: the socket must serve the driver as early as possible, and
 * a node that mounts nothing should not hold them (yaml alone is 73 files).
 * yaml parses `objects` texts and writes `yaml` outputs; mustache parses
 * `template` fields, so only SecretProviderClasses with templates load it.
 *
 * Their callers are synchronous parsers and renderers, and both packages are
 * CommonJS for Node (yaml's `node` export is the same CommonJS file for
 * import and require; mustache's `require` export is its CommonJS build, the
 * one node-vault loads too). So they are loaded with require(), which for
 * CommonJS does what an awaited import() would do — the same synchronous
 * module loader — without turning every parser async. Node's module cache
 * keeps them: nothing is held here.
 */
import { createRequire } from 'node:module'
import type Mustache from 'mustache'
import type * as Yaml from 'yaml'

const require = createRequire(import.meta.url)

/**
 * A CommonJS package (or one of its files) the daemon loads when first needed: yaml and mustache
 * here, undici's parts (src/http/undici.ts), node-vault and tv4 (src/vault/pool.ts). require(),
 * never import(), also where the caller is async: the daemon's modules run as a node:vm script
 * from V8's code cache (src/launcher), and there an import() finds no loader in Node (20 and 26).
 */
export function loadCommonJs<T>(specifier: string): T {
  return require(specifier) as T
}

export function yamlLibrary(): typeof Yaml {
  return loadCommonJs<typeof Yaml>('yaml')
}

export function mustacheLibrary(): typeof Mustache {
  return loadCommonJs<typeof Mustache>('mustache')
}
