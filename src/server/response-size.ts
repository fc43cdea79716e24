/**
 * The driver refuses a MountResponse larger than its --max-call-recv-msg-size
 * (4 MiB by default) with an opaque gRPC error. Check it here, where the
 * response is assembled, and say which objects are the big ones instead.
 */
import { ProviderError, q } from '../errors.js'

interface SizedObject {
  id: string
  version: string
  files: ReadonlyArray<{ path: string; contents: Buffer }>
}

/** Upper bound of the protobuf encoding, without encoding: per field at most 1 tag + 5 length bytes. */
function estimate(objects: readonly SizedObject[]): number {
  let n = 0
  for (const o of objects) {
    n += 12 + Buffer.byteLength(o.id) + Buffer.byteLength(o.version) + 6
    for (const f of o.files) n += 24 + Buffer.byteLength(f.path) + f.contents.length
  }
  return n
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MiB`
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${n} B`
}

/**
 * A RESPONSE_TOO_LARGE error when `response` encodes to more than
 * `limitBytes`, naming the largest objects; undefined when it fits. The exact
 * encoding is computed only when a cheap upper bound says it might not fit.
 */
export function checkResponseSize(
  response: unknown,
  objects: readonly SizedObject[],
  limitBytes: number,
  serialize: (value: unknown) => Buffer,
): ProviderError | undefined {
  if (estimate(objects) <= limitBytes) return undefined
  const size = serialize(response).length
  if (size <= limitBytes) return undefined
  const largest = objects
    .map((o) => ({ id: o.id, bytes: o.files.reduce((n, f) => n + f.contents.length, 0) }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 3)
    .map((o) => `${q(o.id)} (${formatBytes(o.bytes)})`)
  return new ProviderError(
    'RESPONSE_TOO_LARGE',
    `the Mount's files come to ${formatBytes(size)} (${size} bytes), more than the ${formatBytes(limitBytes)} the driver accepts (provider flag -max-response-size, matching the driver's --max-call-recv-msg-size); largest objects: ${largest.join(', ')}`,
  )
}
