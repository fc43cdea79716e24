// The daemon's life on a node: Version, socket permissions, stale sockets,
// restarts, and object versions that survive them.
import { lstat, writeFile } from 'node:fs/promises'
import net from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { driverVersion } from '../support/driver-client.js'
import { Fixture } from '../support/fixture.js'
import { startProvider } from '../support/provider.js'
import { makeTempDir } from '../support/tmp.js'

t.test('Version through the driver client, and the socket is owner-only', async (t) => {
  const provider = await startProvider()
  t.teardown(() => provider.stop())
  const v = await driverVersion({ socketDir: provider.socketDir, provider: 'vault' })
  t.equal(v.ok, true, v.message ?? '')
  t.equal(v.version, 'v1alpha1')
  t.equal(v.runtimeName, 'vault-csi-provider-ts')
  t.match(v.runtimeVersion, /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/, 'semver')
  const st = await lstat(provider.socketPath)
  t.ok(st.isSocket())
  t.equal(st.mode & 0o777, 0o600)
})

t.test('SIGTERM: clean exit, socket removed', async (t) => {
  const provider = await startProvider()
  const exit = await provider.stop('SIGTERM')
  t.equal(exit.code, 0)
  await t.rejects(lstat(provider.socketPath), { code: 'ENOENT' })
  t.match(await provider.logs(), /"msg":"shutting down"/)
})

t.test('a stale socket left by a killed process does not block a restart', async (t) => {
  const first = await startProvider()
  const exit = await first.stop('SIGKILL')
  t.equal(exit.signal, 'SIGKILL')
  t.ok((await lstat(first.socketPath)).isSocket(), 'the dead process left its socket file')
  const second = await startProvider({ socketDir: first.socketDir })
  t.teardown(() => second.stop())
  const v = await driverVersion({ socketDir: second.socketDir, provider: 'vault' })
  t.equal(v.ok, true, v.message ?? '')
  t.match(await second.logs(), /removed a stale socket file/)
})

t.test('a stale socket from a process that never listened (bound, then crashed)', async (t) => {
  const dir = await makeTempDir('vcp-stale-')
  t.teardown(() => dir.cleanup())
  const path = join(dir.path, 'vault.sock')
  const srv = net.createServer()
  await new Promise<void>((r) => srv.listen(path, () => r()))
  // Closing the handle without unlinking leaves a socket file nobody listens on.
  ;(srv as unknown as { _handle: { close(): void } | null })._handle?.close()
  const provider = await startProvider({ socketDir: dir.path })
  t.teardown(() => provider.stop())
  t.equal((await driverVersion({ socketDir: dir.path, provider: 'vault' })).ok, true)
})

t.test('something that is not a socket at the path is left alone and reported', async (t) => {
  const dir = await makeTempDir('vcp-notsock-')
  t.teardown(() => dir.cleanup())
  await writeFile(join(dir.path, 'vault.sock'), 'precious')
  await t.rejects(startProvider({ socketDir: dir.path }), /exists and is not a socket; refusing to replace it/)
})

t.test('object versions: stable across restarts, new when the secret changes', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  await fx.kvPut('ver', { a: 'first' })
  const params = {
    objects: [
      { objectName: 'a', secretPath: 'secret/data/ver', secretKey: 'a' },
      { objectName: 'whole', secretPath: 'secret/data/ver' },
    ],
  }
  const before = await fx.mount({ params })
  t.ok(before.result.ok, before.result.message)
  const versions = before.result.objectVersions
  t.match(versions.a, /^[A-Za-z0-9_-]{43}$/, 'base64url HMAC-SHA256')
  t.notMatch(versions.a, /first/)

  await fx.restartProvider('SIGKILL')
  const after = await fx.mount({ params })
  t.same(after.result.objectVersions, versions, 'same versions after a restart')

  await fx.kvPut('ver', { a: 'second' })
  const changed = await fx.mount({ params })
  t.ok(changed.result.ok)
  t.not(changed.result.objectVersions.a, versions.a, 'the changed value has a new version')
  t.not(changed.result.objectVersions.whole, versions.whole)
  t.equal(changed.files.get('a')?.bytes.toString(), 'second')
})

t.test('bad input never takes the daemon down', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  const cases: Array<[string, string | Record<string, string>, RegExp]> = [
    ['not JSON', '{nope', /attributes is not valid JSON/],
    ['an array', '[]', /attributes must be a JSON object/],
    ['no roleName', { objects: '- objectName: a\n  secretPath: x' }, /parameter "roleName" is required/],
    ['objects not YAML', { roleName: 'app', objects: 'a: [' }, /parameter "objects" is not valid YAML/],
    [
      'unknown field',
      { roleName: 'app', objects: '- objectName: a\n  secretPath: x\n  secretkey: y' },
      /object "a": unknown field "secretkey"/,
    ],
    [
      'bad method',
      { roleName: 'app', objects: '- objectName: a\n  secretPath: x\n  method: DELETE' },
      /object "a": method must be one of GET, PUT, POST/,
    ],
    [
      'bad encoding',
      { roleName: 'app', objects: '- objectName: a\n  secretPath: x\n  encoding: rot13' },
      /object "a": encoding must be one of utf-8, base64, hex/,
    ],
    [
      'bad skip-verify',
      { roleName: 'app', vaultSkipTLSVerify: 'maybe', objects: '- objectName: a\n  secretPath: x' },
      /vaultSkipTLSVerify" must be true or false/,
    ],
    [
      'both mount aliases',
      {
        roleName: 'app',
        vaultAuthMountPath: 'a',
        vaultKubernetesMountPath: 'b',
        objects: '- objectName: a\n  secretPath: x',
      },
      /set only one of parameters "vaultAuthMountPath" and "vaultKubernetesMountPath"/,
    ],
  ]
  for (const [name, attrs, expected] of cases) {
    const full = typeof attrs === 'string' ? attrs : { ...fx.podAttributes(), ...attrs }
    const { result } = await fx.mountRaw(full)
    t.notOk(result.ok, name)
    t.equal(result.grpcCode, 'InvalidArgument', name)
    t.match(result.message, expected, name)
  }
  const { result } = await fx.mountRaw({ ...fx.podAttributes(), roleName: 'app' }, { permission: '"rw"' })
  t.equal(result.grpcCode, 'InvalidArgument')
  t.match(result.message, /permission must be a decimal file mode/)
  t.equal((await driverVersion({ socketDir: fx.provider.socketDir, provider: 'vault' })).ok, true, 'still serving')
})
