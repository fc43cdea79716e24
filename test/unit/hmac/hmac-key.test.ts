// The mounted key file of -mode=sync-controller: read as it is, never created.
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { HMAC_KEY_BYTES, mountedFileKey } from '../../../src/hmac/hmac-key.js'
import { ManualTime } from '../../support/manual-time.js'
import { tempDirFor } from '../../support/tmp.js'

t.test('a mounted key file is read, never created', async (t) => {
  const time = new ManualTime()
  const dir = await tempDirFor(t)
  const missing = join(dir, 'key')
  await t.rejects(mountedFileKey(missing, time).get(), {
    code: 'HMAC_KEY_UNAVAILABLE',
    message: /HMAC key file .*\/key does not exist: mount the key from a Secret there/,
  })
  t.notOk(existsSync(missing), 'no key was made up in its place')

  const short = join(dir, 'short')
  await writeFile(short, Buffer.alloc(HMAC_KEY_BYTES - 1, 1))
  await t.rejects(mountedFileKey(short, time).get(), { code: 'HMAC_KEY_UNAVAILABLE', message: /holds no 32-byte key/ })

  const good = join(dir, 'good')
  const bytes = Buffer.alloc(HMAC_KEY_BYTES, 7)
  await writeFile(good, bytes)
  const source = mountedFileKey(good, time)
  t.same(await source.get(), bytes)
  t.match(source.description, /mounted file .*\/good/)
})
