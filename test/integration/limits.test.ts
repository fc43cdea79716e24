// Limits: the Vault address allow-list (a refused address gets no token, not
// even a connection) and the response-size limit (RESOURCE_EXHAUSTED naming
// the largest objects instead of the driver's opaque size error).
import { randomBytes } from 'node:crypto'
import net from 'node:net'
import t from 'tap'
import { driverMount } from '../support/driver-client.js'
import { Fixture } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'
import { tempDirFor } from '../support/tmp.js'

const params = { objects: [{ objectName: 'pw', secretPath: 'secret/data/app', secretKey: 'password' }] }

t.test('-vault-addr-allowlist', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  await fx.kvPut('app', { password: 'allow-list-secret' })

  // A "Vault" that records whoever connects: the refused Mount must never reach it.
  let connections = 0
  const trap = net.createServer((s) => {
    connections += 1
    s.destroy()
  })
  await new Promise<void>((r) => trap.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => trap.close(() => r())))
  const trapAddr = `http://127.0.0.1:${(trap.address() as net.AddressInfo).port}`

  t.test('default: any address (existing SecretProviderClasses keep working)', async (t) => {
    const { result } = await fx.mount({ params: { ...params, vaultAddress: fx.bao.addr } })
    t.ok(result.ok, result.message)
    const logs = await fx.provider.logs()
    t.match(logs, /"level":"warn"[^\n]*no -vault-addr-allowlist: Mounts may send pod tokens to any Vault address/)
  })

  t.test('set: listed addresses work, others fail PERMISSION_DENIED before any token is sent', async (t) => {
    await fx.restartProvider('SIGTERM', {
      args: [`-vault-addr-allowlist=${fx.bao.addr.toUpperCase()}/, https://*.vault.svc:8200`],
    })
    const ok = await fx.mount({ params })
    t.ok(ok.result.ok, `the -vault-addr default is listed: ${ok.result.message}`)
    const viaParam = await fx.mount({ params: { ...params, vaultAddress: `${fx.bao.addr}/` } })
    t.ok(viaParam.result.ok, `the same address as a parameter: ${viaParam.result.message}`)

    const refused = await fx.mount({ params: { ...params, vaultAddress: trapAddr } })
    t.notOk(refused.result.ok)
    t.equal(refused.result.grpcCode, 'PermissionDenied')
    t.match(
      refused.result.message,
      new RegExp(`Vault address "${trapAddr}".*is not in the provider's -vault-addr-allowlist`),
    )
    t.match(refused.result.message, /the pod's token was not sent/)
    const lookalike = await fx.mount({ params: { ...params, vaultAddress: 'https://vault.svc:8200' } })
    t.equal(lookalike.result.grpcCode, 'PermissionDenied', 'the wildcard needs at least one more label')
    t.equal(connections, 0, 'nothing connected to the refused address')
  })

  t.test('a bad entry stops the daemon at start-up, naming it', async (t) => {
    await t.rejects(
      fx.restartProvider('SIGTERM', { args: ['-vault-addr-allowlist=ftp://x'] }),
      /-vault-addr-allowlist entry "ftp:\/\/x" must start with https:\/\/, http:\/\/ or unix:\/\//,
    )
    // Leave a working provider for the fixture's teardown.
    await fx.restartProvider('SIGTERM')
  })
})

t.test('-max-response-size: RESOURCE_EXHAUSTED naming the largest objects', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  const big = randomBytes(1536 * 1024).toString('base64') // 2 MiB of text
  await fx.kvPut('big', { a: big, b: big, small: 'x' })
  const objects = [
    { objectName: 'a', secretPath: 'secret/data/big', secretKey: 'a' },
    { objectName: 'b', secretPath: 'secret/data/big', secretKey: 'b' },
    { objectName: 'small', secretPath: 'secret/data/big', secretKey: 'small' },
  ]
  // Vault's answer (4 MiB of data plus its envelope) is itself over the default -max-vault-response-size.
  const unread = await fx.mount({ params: { objects } })
  t.equal(unread.result.grpcCode, 'ResourceExhausted')
  t.match(unread.result.message, /Vault's answer is larger than 4194304 bytes \(-max-vault-response-size\)/)

  await fx.restartProvider('SIGTERM', { args: ['-max-vault-response-size=16MiB'] })
  const refused = await fx.mount({ params: { objects } })
  t.notOk(refused.result.ok)
  t.equal(refused.result.grpcCode, 'ResourceExhausted')
  t.match(refused.result.message, /more than the 4\.0 MiB the driver accepts/)
  t.match(refused.result.message, /largest objects: "(a|b)" \(2\.0 MiB\), "(a|b)" \(2\.0 MiB\), "small"/)
  t.notMatch(refused.result.message, /received message larger than max/, 'not the driver’s opaque error')
  // The Mount refused it: its one log line says failure, and no Mount so far was logged a success.
  const mountLines = (await fx.provider.logLines()).filter((l) => l.msg === 'mount')
  t.equal(mountLines.filter((l) => l.code === 'RESPONSE_TOO_LARGE' && l.outcome === 'failure').length, 1)
  t.equal(mountLines.filter((l) => l.outcome === 'success').length, 0)

  const fits = await fx.mount({ params: { objects: objects.slice(0, 1) } })
  t.ok(fits.result.ok, 'one large object still fits')

  await fx.restartProvider('SIGTERM', { args: ['-max-response-size=16MiB', '-max-vault-response-size=16MiB'] })
  const dir = await tempDirFor(t, 'vcp-big-')
  const raised = await driverMount({
    socketDir: fx.provider.socketDir,
    provider: 'vault',
    targetPath: dir,
    attributes: fx.buildAttributes({ params: { objects } }),
    secrets: 'null',
    maxCallRecvMsgSize: 16 * 1024 * 1024,
  })
  t.ok(raised.ok, `with both limits raised, the Mount goes through: ${raised.message}`)
  t.same(findLeaks(await fx.provider.logs(), [big.slice(0, 64), ...fx.issuedJwts]), [])
})
