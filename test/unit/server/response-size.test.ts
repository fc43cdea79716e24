import t from 'tap'
import { loadProviderService } from '../../../src/server/grpc-server.js'
import { checkResponseSize, formatBytes } from '../../../src/server/response-size.js'

const serialize = loadProviderService().Mount!.responseSerialize as (v: unknown) => Buffer

function objectsOf(sizes: Record<string, number>) {
  return Object.entries(sizes).map(([id, n]) => ({
    id,
    version: 'v'.repeat(43),
    files: [{ path: id, mode: 420, contents: Buffer.alloc(n, 97) }],
  }))
}
function responseOf(objects: ReturnType<typeof objectsOf>) {
  return {
    object_version: objects.map((o) => ({ id: o.id, version: o.version })),
    files: objects.flatMap((o) => o.files),
  }
}

t.test('fits: no error, and no encoding for small responses', async (t) => {
  const objects = objectsOf({ a: 10, b: 20 })
  let calls = 0
  t.equal(
    checkResponseSize(responseOf(objects), objects, 1024, (v) => (calls++, serialize(v))),
    undefined,
  )
  t.equal(calls, 0, 'the cheap bound sufficed')
})

t.test('exact at the edge', async (t) => {
  const objects = objectsOf({ a: 1000 })
  const size = serialize(responseOf(objects)).length
  t.equal(checkResponseSize(responseOf(objects), objects, size, serialize), undefined)
  const err = checkResponseSize(responseOf(objects), objects, size - 1, serialize)
  t.equal(err?.code, 'RESPONSE_TOO_LARGE')
})

t.test('names the largest objects, biggest first', async (t) => {
  const objects = objectsOf({ small: 10, huge: 3 * 1024 * 1024, big: 2 * 1024 * 1024, mid: 1024, tiny: 1 })
  const err = checkResponseSize(responseOf(objects), objects, 4 * 1024 * 1024, serialize)
  t.equal(err?.grpcStatus, 8, 'RESOURCE_EXHAUSTED')
  t.match(err?.message, /largest objects: "huge" \(3\.0 MiB\), "big" \(2\.0 MiB\), "mid" \(1\.0 KiB\)$/)
  t.match(err?.message, /more than the 4\.0 MiB the driver accepts/)
  t.equal(formatBytes(512), '512 B')
})
