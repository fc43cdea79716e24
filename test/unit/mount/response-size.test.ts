import t from 'tap'
import { grpcStatusOf } from '../../../src/server/grpc-status.js'
import { loadProviderService } from '../../../src/server/grpc-server.js'
import { checkResponseSize, encodedResponseBytes } from '../../../src/mount/response-size.js'
import { formatBytes } from '../../../src/util/format-bytes.js'

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

t.test('fits: no error', async (t) => {
  const objects = objectsOf({ a: 10, b: 20 })
  t.equal(checkResponseSize(objects, 1024), undefined)
})

t.test('the size is computed exactly, without encoding', async (t) => {
  const shapes = [
    objectsOf({}),
    objectsOf({ a: 0 }),
    objectsOf({ a: 1, 'b/c': 127, d: 128, e: 16383, f: 16384, g: 70_000 }),
    [{ id: '', version: '', files: [{ path: '', mode: 0, contents: Buffer.alloc(0) }] }],
    [
      {
        id: 'é',
        version: 'v',
        files: [
          { path: 'dir/ü', mode: 0o777, contents: Buffer.alloc(3) },
          { path: 'x', mode: 0o600, contents: Buffer.alloc(300) },
        ],
      },
    ],
    [{ id: 'a'.repeat(200), version: 'v'.repeat(43), files: [] }],
  ]
  for (const objects of shapes) {
    t.equal(
      encodedResponseBytes(objects),
      serialize(responseOf(objects)).length,
      JSON.stringify(objects.map((o) => o.id)),
    )
  }
})

t.test('exact at the edge', async (t) => {
  const objects = objectsOf({ a: 1000 })
  const size = serialize(responseOf(objects)).length
  t.equal(checkResponseSize(objects, size), undefined)
  const err = checkResponseSize(objects, size - 1)
  t.equal(err?.code, 'RESPONSE_TOO_LARGE')
})

t.test('names the largest objects, biggest first', async (t) => {
  const objects = objectsOf({ small: 10, huge: 3 * 1024 * 1024, big: 2 * 1024 * 1024, mid: 1024, tiny: 1 })
  const err = checkResponseSize(objects, 4 * 1024 * 1024)
  t.equal(grpcStatusOf(err!.code), 8, 'RESOURCE_EXHAUSTED')
  t.match(err?.message, /largest objects: "huge" \(3\.0 MiB\), "big" \(2\.0 MiB\), "mid" \(1\.0 KiB\)$/)
  t.match(err?.message, /more than the 4\.0 MiB the driver accepts/)
  t.equal(formatBytes(512), '512 B')
})
