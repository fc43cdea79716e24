/**
 * The driver refuses a MountResponse larger than its --max-call-recv-msg-size
 * (4 MiB by default) with an opaque gRPC error. The Mount checks its answer
 * against -max-response-size before it counts as answered (service.ts), so the
 * daemon and the CLI's in-process mount refuse it alike, naming the big objects.
 */
import { ProviderError, q } from '../errors.js'
import { formatBytes } from '../util/format-bytes.js'

interface SizedObject {
  id: string
  version: string
  files: ReadonlyArray<{ path: string; mode: number; contents: Buffer }>
}

/** Bytes of a protobuf varint. */
function varintBytes(n: number): number {
  let bytes = 1
  while (n >= 0x80) {
    n = Math.floor(n / 0x80)
    bytes += 1
  }
  return bytes
}

/** A length-delimited field (string, bytes, message) with a one-byte tag. */
function fieldBytes(length: number): number {
  return 1 + varintBytes(length) + length
}

/**
 * The exact size of the MountResponse encoding (object_version = 1, files = 3),
 * computed without encoding it: encoding a response that may be refused would
 * copy every file once more. Fields are written when present, as the gRPC
 * library's encoder does, empty or zero included.
 */
export function encodedResponseBytes(objects: readonly SizedObject[]): number {
  let n = 0
  for (const o of objects) {
    n += fieldBytes(fieldBytes(Buffer.byteLength(o.id)) + fieldBytes(Buffer.byteLength(o.version)))
    for (const f of o.files) {
      const mode = 1 + (f.mode < 0 ? 10 : varintBytes(f.mode))
      n += fieldBytes(fieldBytes(Buffer.byteLength(f.path)) + mode + fieldBytes(f.contents.length))
    }
  }
  return n
}

/**
 * A RESPONSE_TOO_LARGE error when the Mount's response encodes to more than
 * `limitBytes`, naming the largest objects; undefined when it fits.
 */
export function checkResponseSize(objects: readonly SizedObject[], limitBytes: number): ProviderError | undefined {
  const size = encodedResponseBytes(objects)
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
