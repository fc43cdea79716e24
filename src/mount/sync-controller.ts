/**
 * What the Secrets Store Sync Controller needs of an answer (-mode=sync-controller): it writes the
 * files of one Mount into one Kubernetes Secret, and it refuses an answer without object versions
 * (its errMissingObjectVersions). Both are checked here, where the provider can still say which
 * objects are the matter, instead of leaving the controller or the API server to fail opaquely.
 */
import { ProviderError, q } from '../errors.js'
import type { RenderedObject } from '../render/render.js'
import { formatBytes } from '../util/format-bytes.js'

/** The API server refuses a Secret whose data come to more than this (1 MiB). */
export const KUBERNETES_SECRET_MAX_BYTES = 1024 * 1024

/** Objects named, with their sizes, in one refusal. */
export const MAX_NAMED_OBJECTS = 10

function objectBytes(o: RenderedObject): number {
  return o.files.reduce((n, f) => n + f.contents.length, 0)
}

/** Names with sizes, largest first, bounded: `"a" (700.0 KiB), "b" (400.0 KiB)` and how many more. */
function sizeList(objects: readonly RenderedObject[]): string {
  const sized = objects.map((o) => ({ id: o.id, bytes: objectBytes(o) })).sort((a, b) => b.bytes - a.bytes)
  const named = sized.slice(0, MAX_NAMED_OBJECTS).map((o) => `${q(o.id)} (${formatBytes(o.bytes)})`)
  const rest = sized.length - named.length
  return named.join(', ') + (rest > 0 ? ` and ${rest} more` : '')
}

/**
 * Throws NO_OBJECT_VERSIONS or SECRET_TOO_LARGE when the controller could not use the answer:
 * no object at all (every object optional and none in Vault), an object without a version, or
 * files that a Kubernetes Secret cannot hold.
 */
export function checkSecretSyncAnswer(objects: readonly RenderedObject[]): void {
  if (objects.length === 0) {
    throw new ProviderError(
      'NO_OBJECT_VERSIONS',
      'the Mount answers no object (every object is optional and Vault has none of their secrets); the Secrets Store ' +
        'Sync Controller refuses an answer without object versions: make at least one object required',
    )
  }
  const unversioned = objects.filter((o) => o.version === '')
  if (unversioned.length > 0) {
    throw new ProviderError(
      'NO_OBJECT_VERSIONS',
      `objects ${unversioned
        .slice(0, MAX_NAMED_OBJECTS)
        .map((o) => q(o.id))
        .join(', ')} have no version; the Secrets Store Sync Controller refuses an answer without one for every object`,
    )
  }
  const total = objects.reduce((n, o) => n + objectBytes(o), 0)
  if (total > KUBERNETES_SECRET_MAX_BYTES) {
    throw new ProviderError(
      'SECRET_TOO_LARGE',
      `the objects come to ${formatBytes(total)} (${total} bytes), more than the ${formatBytes(KUBERNETES_SECRET_MAX_BYTES)} ` +
        `of the one Kubernetes Secret the Secrets Store Sync Controller writes them into: ${sizeList(objects)}; ` +
        'split them over several SecretProviderClasses and SecretSyncs',
    )
  }
}
