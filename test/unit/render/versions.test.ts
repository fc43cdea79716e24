import t from 'tap'
import { objectVersion, type VersionedFile } from '../../../src/render/versions.js'

const KEY = Buffer.alloc(32, 7)
const OTHER_KEY = Buffer.alloc(32, 8)
const CONFIG = { objectName: 'db-password', secretKey: 'password', secretPath: 'secret/data/db' }
// HMAC-SHA256(0x07 * 32, canonical config JSON ‖ "\0db-password\06\0" ‖ "s3cr3t"), computed independently.
const GOLDEN = 'o77KMTWpeuRn60n52kl8LW61D1xFU0M56TefyKxIkO8'
const FILES: VersionedFile[] = [{ path: 'db-password', contents: Buffer.from('s3cr3t') }]

t.test('same input, same version; fresh buffers and objects', async (t) => {
  const a = objectVersion(KEY, CONFIG, FILES)
  const b = objectVersion(Buffer.alloc(32, 7), { ...CONFIG }, [
    { path: 'db-password', contents: Buffer.from('s3cr3t') },
  ])
  t.equal(a, b)
  t.equal(objectVersion(KEY, CONFIG, FILES), a)
})

t.test('output is base64url of 32 bytes and reveals nothing obvious', async (t) => {
  const v = objectVersion(KEY, CONFIG, FILES)
  t.match(v, /^[A-Za-z0-9_-]{43}$/)
  t.equal(Buffer.from(v, 'base64url').length, 32)
  t.equal(Buffer.from(v, 'base64url').toString('base64url'), v)
  t.notMatch(v, 's3cr3t')
  t.notMatch(v, Buffer.from('s3cr3t').toString('base64url'))
})

t.test('stable across releases (golden value)', async (t) => {
  // If this changes, every object version in every cluster changes on upgrade.
  t.equal(objectVersion(KEY, CONFIG, FILES), GOLDEN)
})

t.test('any change gives a different version', async (t) => {
  const base = objectVersion(KEY, CONFIG, FILES)
  const variants: Array<[string, string]> = [
    ['key', objectVersion(OTHER_KEY, CONFIG, FILES)],
    ['config value', objectVersion(KEY, { ...CONFIG, secretKey: 'username' }, FILES)],
    ['config field added', objectVersion(KEY, { ...CONFIG, encoding: 'utf-8' }, FILES)],
    ['config nested', objectVersion(KEY, { ...CONFIG, secretArgs: { ttl: '1h' } }, FILES)],
    ['bytes', objectVersion(KEY, CONFIG, [{ path: 'db-password', contents: Buffer.from('s3cr3T') }])],
    ['bytes appended', objectVersion(KEY, CONFIG, [{ path: 'db-password', contents: Buffer.from('s3cr3t\n') }])],
    ['empty bytes', objectVersion(KEY, CONFIG, [{ path: 'db-password', contents: Buffer.alloc(0) }])],
    ['path', objectVersion(KEY, CONFIG, [{ path: 'db/password', contents: Buffer.from('s3cr3t') }])],
    ['no files', objectVersion(KEY, CONFIG, [])],
    ['extra file', objectVersion(KEY, CONFIG, [...FILES, { path: 'db-password.meta', contents: Buffer.alloc(0) }])],
  ]
  const seen = new Map<string, string>([[base, 'base']])
  for (const [label, v] of variants) {
    t.not(v, base, label)
    t.notOk(seen.has(v), `${label} collides with ${seen.get(v)}`)
    seen.set(v, label)
  }
})

t.test('file boundaries are part of the input', async (t) => {
  // Moving bytes between path and contents, or between two files, must not collide.
  const a = objectVersion(KEY, CONFIG, [{ path: 'ab', contents: Buffer.from('c') }])
  const b = objectVersion(KEY, CONFIG, [{ path: 'a', contents: Buffer.from('bc') }])
  t.not(a, b)
  const c = objectVersion(KEY, CONFIG, [
    { path: 'a', contents: Buffer.from('xy') },
    { path: 'b', contents: Buffer.from('z') },
  ])
  const d = objectVersion(KEY, CONFIG, [
    { path: 'a', contents: Buffer.from('x') },
    { path: 'b', contents: Buffer.from('yz') },
  ])
  t.not(c, d)
})

t.test('config key order and file order do not matter', async (t) => {
  const reordered = { secretPath: 'secret/data/db', objectName: 'db-password', secretKey: 'password' }
  t.equal(objectVersion(KEY, reordered, FILES), objectVersion(KEY, CONFIG, FILES))
  const nestedA = { ...CONFIG, secretArgs: { a: 1, b: { c: 2, d: 3 } } }
  const nestedB = { ...CONFIG, secretArgs: { b: { d: 3, c: 2 }, a: 1 } }
  t.equal(objectVersion(KEY, nestedA, FILES), objectVersion(KEY, nestedB, FILES))
  const f1 = { path: 'a', contents: Buffer.from('1') }
  const f2 = { path: 'b', contents: Buffer.from('2') }
  t.equal(objectVersion(KEY, CONFIG, [f1, f2]), objectVersion(KEY, CONFIG, [f2, f1]))
  // The caller's array is not reordered.
  const files = [f2, f1]
  objectVersion(KEY, CONFIG, files)
  t.equal(files[0], f2)
})
