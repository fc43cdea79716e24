import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import { ObjectsCache } from '../../../src/request/objects-cache.js'
import * as objects from '../../../src/request/objects.js'
import { thrown } from '../../support/thrown.js'

const text = (name: string, pad = 0): string =>
  `- {objectName: ${name}, secretPath: secret/data/x, secretKey: ${'k'.repeat(pad + 1)}}`

t.test('a text is parsed once; the same objects are shared', async (t) => {
  const cache = new ObjectsCache()
  const first = cache.parse(text('a'))
  t.equal(first[0]!.objectName, 'a')
  t.equal(cache.parse(text('a')), first, 'the cached result')
  t.equal(cache.size, 1)
})

t.test('a refused text is remembered: a retry costs no parse', async (t) => {
  let parses = 0
  const { ObjectsCache: Counting } = await t.mockImport<typeof import('../../../src/request/objects-cache.js')>(
    '../../../src/request/objects-cache.js',
    {
      '../../../src/request/objects.js': {
        ...objects,
        parseObjects: (...args: Parameters<typeof objects.parseObjects>) => {
          parses += 1
          return objects.parseObjects(...args)
        },
      },
    },
  )
  const cache = new Counting()
  const hostile = `- ${'['.repeat(100)}${']'.repeat(100)}`
  const first = thrown(() => cache.parse(hostile), ProviderError)
  t.equal(first.message, 'parameter "objects" nests collections more than 32 levels deep')
  const again = thrown(() => cache.parse(hostile), ProviderError)
  t.equal(again, first, 'the same refusal')
  t.equal(parses, 1, 'parsed once')
  t.equal(cache.size, 1)
  cache.parse(text('ok'))
  cache.parse(text('ok'))
  t.equal(parses, 2)
})

t.test('a text over the limit is refused with the flag, before it is hashed or cached', async (t) => {
  const cache = new ObjectsCache({ limits: { maxBytes: 1024 } })
  const err = thrown(() => cache.parse(text('big', 2000)), ProviderError)
  t.equal(err.message, 'parameter "objects" is larger than 1024 bytes (-max-objects-size)')
  t.equal(cache.size, 0)
})

t.test('bounded in bytes, not only in entries', async (t) => {
  const cache = new ObjectsCache({ maxBytes: 64 * 1024 })
  for (let i = 0; i < 100; i++) cache.parse(text(`o${i}`, 8 * 1024))
  t.ok(cache.sizeBytes <= 64 * 1024, `${cache.sizeBytes} bytes held`)
  t.ok(cache.size <= 7, `${cache.size} entries of ~8.5 KiB`)
  t.ok(cache.size >= 1)
  // The most recent text is still there: same array back.
  const last = text('o99', 8 * 1024)
  t.equal(cache.parse(last), cache.parse(last))
  // Refusals cost their message, not their text.
  const small = new ObjectsCache({ maxBytes: 64 * 1024 })
  for (let i = 0; i < 20; i++) thrown(() => small.parse(`- [${'a,'.repeat(13_000)}${i}]`), ProviderError)
  t.equal(small.size, 20, 'twenty 26 KiB refusals fit in 64 KiB')
})

t.test("an entry is charged for its text and for its objects' version inputs", async (t) => {
  const cache = new ObjectsCache()
  const one = text('a', 8 * 1024)
  const parsed = cache.parse(one)
  const configJson = parsed[0]!.configJson
  t.ok(configJson.length > 8 * 1024, 'the version input holds the fields again')
  t.ok(cache.sizeBytes >= one.length + configJson.length, `${cache.sizeBytes} bytes charged`)
  t.ok(cache.sizeBytes < one.length + configJson.length + 4096, 'and not much more')
})

t.test("a namespace's many texts push out only its own", async (t) => {
  const cache = new ObjectsCache({ maxBytes: 64 * 1024 })
  const victim = text('victim', 1024)
  const kept = cache.parse(victim, 'default')
  for (let i = 0; i < 100; i++) cache.parse(text(`o${i}`, 8 * 1024), 'tenant-b')
  t.ok(cache.sizeBytes <= 64 * 1024, `${cache.sizeBytes} bytes held`)
  t.equal(cache.parse(victim, 'default'), kept, "the other namespace's text is still there: the same objects back")
  t.equal(cache.parse(victim, 'tenant-b'), kept, 'whoever sends the same text gets them')
})
