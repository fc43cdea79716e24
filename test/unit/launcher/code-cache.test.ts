// src/launcher/code-cache.ts: the code cache's name says everything V8 checks, and it is written whole.
import { readdir, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import t from 'tap'
import {
  CODE_CACHE_SUBDIR,
  codeCacheFile,
  processKey,
  readCodeCache,
  writeCodeCache,
  type CodeCacheKey,
} from '../../../src/launcher/code-cache.js'
import { tempDirFor } from '../../support/tmp.js'

const KEY: CodeCacheKey = {
  scriptSha256: 'ab'.repeat(32),
  nodeVersion: 'v26.12.1',
  arch: 'x64',
  flags: '--max-semi-space-size=2\0--max-old-space-size=128\n',
}

t.test('one file per script text, Node, architecture and flags, under the launcher’s subdirectory', async (t) => {
  const file = codeCacheFile('/cache', KEY)
  t.equal(dirname(file), join('/cache', CODE_CACHE_SUBDIR))
  t.match(file, /daemon-abababababababab-v26\.12\.1-x64-[0-9a-f]{8}\.v8cache$/)
  const others: Array<[string, CodeCacheKey]> = [
    ['another text', { ...KEY, scriptSha256: 'cd'.repeat(32) }],
    ['another Node', { ...KEY, nodeVersion: 'v20.20.2' }],
    ['another architecture', { ...KEY, arch: 'arm64' }],
    ['other flags', { ...KEY, flags: '--max-semi-space-size=2\0--max-old-space-size=256\n' }],
    ['other NODE_OPTIONS', { ...KEY, flags: `${KEY.flags}--jitless` }],
  ]
  for (const [what, key] of others) t.not(codeCacheFile('/cache', key), file, what)
  t.equal(codeCacheFile('/cache', { ...KEY }), file, 'the same key, the same file')
})

t.test('the running process’s key: its Node, architecture, execArgv and NODE_OPTIONS', async (t) => {
  const key = processKey('ef'.repeat(32))
  t.equal(key.nodeVersion, process.version)
  t.equal(key.arch, process.arch)
  t.equal(key.scriptSha256, 'ef'.repeat(32))
  t.ok(key.flags.startsWith(process.execArgv.join('\0')), 'execArgv in the flags')
  t.ok(key.flags.endsWith(process.env['NODE_OPTIONS'] ?? ''), 'and NODE_OPTIONS')
})

t.test('written whole under its name, readable by all and writable by its owner only', async (t) => {
  const dir = await tempDirFor(t, 'vcp-code-cache-')
  const file = codeCacheFile(dir, KEY)
  t.equal(readCodeCache(file), undefined, 'no cache yet: undefined, not an error')
  const data = Buffer.from('not really V8 code')
  const umask = process.umask(0)
  t.teardown(() => process.umask(umask))
  writeCodeCache(file, data)
  t.same(readCodeCache(file), data)
  t.equal((await stat(file)).mode & 0o777, 0o644, 'rw-r--r-- even with umask 0: nobody else decides what runs')
  t.equal((await stat(dirname(file))).mode & 0o777, 0o755, 'its directory likewise')
  t.same(await readdir(dirname(file)), [file.slice(dirname(file).length + 1)], 'no temporary file left')

  writeCodeCache(file, Buffer.from('a second fill'))
  t.same(readCodeCache(file), Buffer.from('a second fill'), 'a second fill replaces the first')
})

t.test('a file where the directory should be: writing throws (the fill reports it), reading gives none', async (t) => {
  const dir = await tempDirFor(t, 'vcp-code-cache-')
  const blocker = join(dir, 'not-a-dir')
  await writeFile(blocker, '')
  const file = codeCacheFile(blocker, KEY)
  t.throws(() => writeCodeCache(file, Buffer.from('x')), { code: 'ENOTDIR' })
  t.equal(readCodeCache(file), undefined)
})
