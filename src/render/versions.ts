/**
 * Object versions: HMAC-SHA256 over the object's configuration and its files,
 * keyed with a secret shared by every node. Equal content gives an equal
 * version on every node and after restarts; the version says nothing about
 * the content to someone without the key.
 */
import { createHmac } from 'node:crypto'
import type { Json } from '../request/types.js'
import { canonicalJson } from '../util/canonical-json.js'

export interface VersionedFile {
  path: string
  contents: Buffer
}

export function objectVersion(key: Buffer, config: { [k: string]: Json }, files: readonly VersionedFile[]): string {
  return versionOf(key, canonicalJson(config), files)
}

/** objectVersion with the configuration already in canonical JSON (SecretObject.configJson). */
export function versionOf(key: Buffer, configJson: string, files: readonly VersionedFile[]): string {
  const mac = createHmac('sha256', key)
  mac.update(configJson)
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    // Length-prefixed, so that no two different file sets feed the same bytes.
    mac.update(`\0${file.path}\0${file.contents.length}\0`)
    mac.update(file.contents)
  }
  return mac.digest('base64url')
}
