// The launcher (dist/daemon.js) as the image's build and the DaemonSet run it: -fill-code-cache starts
// the daemon, writes V8's code cache into $NODE_COMPILE_CACHE and stops it; a start then runs the
// daemon's modules from that cache, and starts as well without one, or with one V8 refuses.
// NODE_DEBUG=vcp-code-cache is how the launcher says which it was.
import { execFile } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { Script } from 'node:vm'
import t, { type Test } from 'tap'
import { DAEMON_BUNDLE } from '../../scripts/bundle.mjs'
import { CODE_CACHE_SUBDIR } from '../../src/launcher/code-cache.js'
import { PACKAGE_ROOT, RUNTIME_NAME } from '../../src/package-info.js'
import { Fixture } from '../support/fixture.js'
import { connectProvider } from '../support/grpc-client.js'
import { PROVIDER_MAIN, startProvider } from '../support/provider.js'
import { tempDirFor } from '../support/tmp.js'

const PASSWORD = `launcher-${randomUUID()}`

/** The image's Node flags (Dockerfile ENTRYPOINT): the fill and the starts use the same. */
const NODE_FLAGS = ['--max-semi-space-size=2', '--max-old-space-size=128']

interface Run {
  code: number
  stdout: string
  stderr: string
}

function launcher(args: string[], env: Record<string, string>, nodeFlags = NODE_FLAGS): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...nodeFlags, PROVIDER_MAIN, ...args],
      {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', ...env },
        timeout: 60_000,
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    )
  })
}

async function mainSha256(): Promise<string> {
  return createHash('sha256')
    .update(await readFile(join(PACKAGE_ROOT, DAEMON_BUNDLE)))
    .digest('hex')
}

/** Starts the daemon from `cacheDir`, answers a Version call, and returns what the launcher said about the cache. */
async function startFrom(t: Test, cacheDir: string, nodeFlags = NODE_FLAGS): Promise<string> {
  const p = await startProvider({
    nodeArgs: nodeFlags,
    env: { NODE_COMPILE_CACHE: cacheDir, NODE_DEBUG: 'vcp-code-cache' },
  })
  t.teardown(() => p.stop())
  const client = connectProvider(p.socketPath)
  t.teardown(() => client.close())
  const answer = await client.version(10_000)
  t.ok(answer.ok, 'the daemon answers Version')
  const said = (await p.logs()).split('\n').find((l) => l.startsWith('VCP-CODE-CACHE'))
  return said ?? ''
}

t.test('-fill-code-cache starts the daemon, writes the cache and stops; a start takes it', async (t) => {
  const cacheDir = await tempDirFor(t, 'vcp-cc-')
  const fill = await launcher(['-fill-code-cache', '-vault-addr=https://127.0.0.1:8200'], {
    NODE_COMPILE_CACHE: cacheDir,
  })
  t.equal(fill.code, 0, `the fill exits 0 (stderr: ${fill.stderr.slice(-2000)})`)
  const files = await readdir(join(cacheDir, CODE_CACHE_SUBDIR))
  t.equal(files.length, 1, 'one cache file')
  const file = join(cacheDir, CODE_CACHE_SUBDIR, files[0]!)
  t.match(basename(file), `daemon-${(await mainSha256()).slice(0, 16)}-${process.version}-${process.arch}-`)
  t.match(fill.stderr, `${RUNTIME_NAME}: code cache written to ${file} (`, 'it says where')
  // What Node's own compile cache would hold: the script's top level, compiled but not run.
  const text = await readFile(join(PACKAGE_ROOT, DAEMON_BUNDLE), 'utf8')
  const topLevelOnly = new Script(text, { filename: 'daemon-main.cjs' }).createCachedData().length
  t.ok(
    (await stat(file)).size > 2 * topLevelOnly,
    `it holds the functions a start compiled, not only the top level (${(await stat(file)).size} > 2 × ${topLevelOnly} bytes)`,
  )
  t.equal((await stat(file)).mode & 0o022, 0, 'nobody but its owner can change it')

  // The fill ran the daemon as a start runs it, on a private socket it removed.
  const lines = fill.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
  const serving = lines.find((l) => l['msg'] === 'serving the provider API')
  t.ok(serving, 'the daemon served during the fill')
  t.ok(
    lines.some((l) => l['msg'] === 'shutting down' && l['signal'] === 'SIGTERM'),
    'and shut down as on SIGTERM',
  )
  t.notOk(existsSync(String(serving?.['socket'])), 'its private socket is gone')

  const said = await startFrom(t, cacheDir)
  t.match(said, `${file}: accepted`, 'V8 took the cache')
})

t.test('started from the cache, the daemon serves Mounts: the packages it loads at the first one load', async (t) => {
  // undici, node-vault, yaml and mustache load at the first Mount, from a script V8 took from the
  // cache: with import() that failed ("A dynamic import callback was not specified").
  const cacheDir = await tempDirFor(t, 'vcp-cc-')
  const fill = await launcher(['-fill-code-cache'], { NODE_COMPILE_CACHE: cacheDir })
  t.equal(fill.code, 0)
  const fx = await Fixture.start({
    nodeArgs: NODE_FLAGS,
    env: { NODE_COMPILE_CACHE: cacheDir, NODE_DEBUG: 'vcp-code-cache' },
  })
  t.teardown(() => fx.stop())
  t.match(await fx.provider.logs(), /VCP-CODE-CACHE \d+: \S+\.v8cache: accepted/, 'V8 took the cache')
  await fx.kvPut('launcher', { password: PASSWORD })
  const { result, files } = await fx.mount({
    params: {
      objects: [
        { objectName: 'pw', secretPath: 'secret/data/launcher', secretKey: 'password' },
        { objectName: 'env', template: 'PASSWORD={{ @pw }}' },
      ],
    },
  })
  t.ok(result.ok, `the Mount succeeded: ${result.message ?? ''}`)
  t.equal(files.get('pw')?.bytes.toString(), PASSWORD)
  t.equal(files.get('env')?.bytes.toString(), `PASSWORD=${PASSWORD}`, 'a template rendered too')
})

t.test('a cache V8 refuses (corrupt) or none at all: the daemon starts as without one', async (t) => {
  const cacheDir = await tempDirFor(t, 'vcp-cc-')
  t.match(await startFrom(t, cacheDir), /no code cache at .*\.v8cache/, 'none yet: said, and served')

  const fill = await launcher(['-fill-code-cache'], { NODE_COMPILE_CACHE: cacheDir })
  t.equal(fill.code, 0)
  const [name] = await readdir(join(cacheDir, CODE_CACHE_SUBDIR))
  const file = join(cacheDir, CODE_CACHE_SUBDIR, name!)
  const size = (await stat(file)).size
  await writeFile(file, Buffer.alloc(size, 0x5a))
  t.match(await startFrom(t, cacheDir), `${file}: rejected by V8`, 'refused: said, and served')
})

t.test('the cache of other Node flags is not read: V8 would refuse it', async (t) => {
  const cacheDir = await tempDirFor(t, 'vcp-cc-')
  const fill = await launcher(['-fill-code-cache'], { NODE_COMPILE_CACHE: cacheDir })
  t.equal(fill.code, 0)
  const said = await startFrom(t, cacheDir, ['--max-semi-space-size=2', '--max-old-space-size=256'])
  t.match(said, /no code cache at .*\.v8cache/, 'another file name for other flags')
})

t.test('-fill-code-cache needs a directory it can write, and says so', async (t) => {
  const noDir = await launcher(['-fill-code-cache'], {})
  t.equal(noDir.code, 2, 'without NODE_COMPILE_CACHE: a usage error')
  t.match(noDir.stderr, `${RUNTIME_NAME}: -fill-code-cache writes into $NODE_COMPILE_CACHE`)

  const dir = await tempDirFor(t, 'vcp-cc-')
  const blocker = join(dir, 'a-file')
  await writeFile(blocker, '')
  const blocked = await launcher(['-fill-code-cache'], { NODE_COMPILE_CACHE: blocker })
  t.equal(blocked.code, 1, 'a directory that cannot be made: exit 1')
  t.match(blocked.stderr, `${RUNTIME_NAME}: cannot write the code cache ${join(blocker, CODE_CACHE_SUBDIR)}`)
})

t.test('the launcher passes the daemon’s start-up errors through unchanged', async (t) => {
  const run = await launcher(['-no-such-flag'], {})
  t.equal(run.code, 2, 'a configuration error exits 2, as from dist/src/main.js')
  t.match(run.stderr, /^vault-csi-provider-ts: .*no-such-flag/m)
  const version = await launcher(['-version'], {})
  t.equal(version.code, 0)
  t.equal(
    version.stdout,
    `${RUNTIME_NAME} ${JSON.parse(await readFile(join(PACKAGE_ROOT, 'package.json'), 'utf8')).version}\n`,
  )
})
