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

export function yamlLibrary(): typeof Yaml {
  return require('yaml') as typeof Yaml
}

export function mustacheLibrary(): typeof Mustache {
  return require('mustache') as typeof Mustache
}
