import { execFileSync } from 'node:child_process'
import { mkdir, symlink, writeFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import t, { type Test } from 'tap'
import type { ProviderError } from '../../../../src/errors.js'
import type { VaultConnection } from '../../../../src/request/types.js'
import { VaultConnectionError } from '../../../../src/vault/transport/call-errors.js'
import {
  MAX_CA_DIRECTORY_ENTRIES,
  type VaultTransport,
  type VaultTransportOptions,
} from '../../../../src/vault/transport/transport.js'
import { guardedConnector } from '../../../../src/vault/transport/connection-guard.js'
import { selfSignedCaPem, selfSignedServerCert } from '../../../support/tls.js'
import { tempDirFor } from '../../../support/tmp.js'
import { testTransport, testTransportOptions } from '../../../support/transport-options.js'

const CAP = 16 * 1024
const opts = (o: Partial<VaultTransportOptions> = {}): VaultTransportOptions =>
  testTransportOptions(1024 * 1024, { maxTlsFileBytes: CAP, ...o })
const createTransport = (c: VaultConnection, o: VaultTransportOptions): Promise<VaultTransport> => testTransport(c, o)
const destroyTransport = (tr: VaultTransport): void => void tr.close()
const conn = (tls: Partial<VaultConnection['tls']>): VaultConnection => ({
  address: 'https://vault.example:8200',
  tls: { skipVerify: false, ...tls },
})

async function refused(t: Test, c: VaultConnection, o: VaultTransportOptions, pattern: RegExp): Promise<void> {
  const err = (await createTransport(c, o).then(
    (tr) => {
      destroyTransport(tr)
      return undefined
    },
    (e: unknown) => e,
  )) as ProviderError | undefined
  t.equal(err?.code, 'BAD_PARAMETER', String(pattern))
  t.match(err?.message, pattern)
}

t.test('TLS files that are not regular files are refused without being read', async (t) => {
  const dir = await tempDirFor(t)
  const fifo = path.join(dir, 'fifo')
  execFileSync('mkfifo', [fifo])
  // A FIFO nobody writes to would block a plain read forever; /dev/zero would never end.
  await refused(
    t,
    conn({ caCertPath: '/dev/zero' }),
    opts(),
    /parameter "vaultCACertPath" "\/dev\/zero" is not a regular file/,
  )
  await refused(t, conn({ caCertPath: fifo }), opts(), /parameter "vaultCACertPath" ".*fifo" is not a regular file/)
  await refused(t, conn({ caCertPath: dir }), opts(), /parameter "vaultCACertPath" .* is not a regular file/)
  await refused(
    t,
    conn({ clientCertPath: '/dev/zero', clientKeyPath: '/dev/zero' }),
    opts(),
    /parameter "vaultTLSClientCertPath" "\/dev\/zero" is not a regular file/,
  )
  const pem = path.join(dir, 'ca.pem')
  await writeFile(pem, selfSignedCaPem())
  await refused(
    t,
    conn({ clientCertPath: pem, clientKeyPath: '/dev/urandom' }),
    opts(),
    /parameter "vaultTLSClientKeyPath" "\/dev\/urandom" is not a regular file/,
  )
})

t.test('files over -max-tls-file-size are refused, naming the limit and the flag', async (t) => {
  const dir = await tempDirFor(t)
  const big = path.join(dir, 'big.pem')
  await writeFile(big, Buffer.alloc(CAP + 1, 'a'))
  await refused(
    t,
    conn({ caCertPath: big }),
    opts(),
    /"vaultCACertPath" ".*big.pem" is larger than 16384 bytes \(-max-tls-file-size\)/,
  )
  const ok = path.join(dir, 'ca.pem')
  await writeFile(ok, selfSignedCaPem())
  const tr = await createTransport(conn({ caCertPath: ok }), opts())
  t.equal(tr.address, 'https://vault.example:8200', 'a CA within the cap is used')
  destroyTransport(tr)
})

t.test('-tls-file-dirs: pod-chosen paths must resolve (symlinks too) under the listed directories', async (t) => {
  const dir = await tempDirFor(t)
  const allowed = path.join(dir, 'tls')
  await mkdir(allowed)
  const inside = path.join(allowed, 'ca.pem')
  const outside = path.join(dir, 'elsewhere.pem')
  await writeFile(inside, selfSignedCaPem())
  await writeFile(outside, selfSignedCaPem())
  await symlink(outside, path.join(allowed, 'link.pem'))
  const o = opts({ tlsFileDirs: [`${allowed}/`] })
  destroyTransport(await createTransport(conn({ caCertPath: inside }), o))
  await refused(
    t,
    conn({ caCertPath: outside }),
    o,
    /"vaultCACertPath" ".*elsewhere.pem" is outside the directories .*\(-tls-file-dirs: ".*tls\/"\)/,
  )
  await refused(t, conn({ caCertPath: path.join(allowed, 'link.pem') }), o, /is outside the directories/)
  await refused(t, conn({ caCertPath: `${allowed}/../elsewhere.pem` }), o, /is outside the directories/)
  // The operator's own file (-vault-tls-ca-cert) is read wherever it is, with the same size cap.
  const operator = opts({ tlsFileDirs: [`${allowed}/`], operatorTls: { caCertPath: outside, skipVerify: false } })
  destroyTransport(await createTransport(conn({ caCertPath: outside }), operator))
  const bigOperator = path.join(dir, 'big.pem')
  await writeFile(bigOperator, Buffer.alloc(CAP + 1, 'a'))
  await refused(
    t,
    conn({ caCertPath: bigOperator }),
    opts({ operatorTls: { caCertPath: bigOperator, skipVerify: false } }),
    /-vault-tls-ca-cert ".*big.pem" is larger than 16384 bytes/,
  )
})

t.test('vaultCADirectory: procfs, huge and certificate-less directories stay bounded', async (t) => {
  await refused(
    t,
    conn({ caDirectory: '/proc/self' }),
    opts(),
    /parameter "vaultCADirectory" "\/proc\/self" holds no readable PEM certificate/,
  )
  await refused(
    t,
    conn({ caDirectory: '/proc' }),
    opts(),
    /parameter "vaultCADirectory" "\/proc" holds no readable PEM/,
  )
  const dir = await tempDirFor(t)
  // More entries than are ever considered; only the first MAX_CA_DIRECTORY_ENTRIES listed are looked at.
  await Promise.all(
    Array.from({ length: MAX_CA_DIRECTORY_ENTRIES + 50 }, (_, i) => writeFile(path.join(dir, `f${i}`), 'not a cert')),
  )
  await refused(t, conn({ caDirectory: dir }), opts(), new RegExp(`first ${MAX_CA_DIRECTORY_ENTRIES} entries`))
  const certs = await tempDirFor(t)
  await writeFile(path.join(certs, 'a.pem'), selfSignedCaPem('a'))
  await writeFile(path.join(certs, 'b.pem'), Buffer.alloc(CAP + 1, 'b'))
  execFileSync('mkfifo', [path.join(certs, 'c.pem')])
  const tr = await createTransport(conn({ caDirectory: certs }), opts())
  t.ok(tr, 'the usable certificate is used; the oversized file and the FIFO are skipped')
  destroyTransport(tr)
})

t.test('every new connection is checked: only while the allow-list admits the address', async (t) => {
  // Each answer closes its connection, so every call opens (and checks) a new one.
  const server = http.createServer((_req, res) => res.writeHead(200, { connection: 'close' }).end('{}'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const port = (server.address() as AddressInfo).port
  const address = `http://127.0.0.1:${port}`
  let allowed = true
  const tr = await createTransport(
    { address, tls: { skipVerify: false } },
    opts({ allowlist: { allows: () => allowed } }),
  )
  t.teardown(() => tr.close())
  t.equal((await tr.call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 })).status, 200)
  allowed = false
  const refusedNow = (await tr
    .call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 })
    .catch((e) => e)) as ProviderError
  t.equal(refusedNow.code, 'VAULT_ADDRESS_NOT_ALLOWED')
  t.match(refusedNow.message, /not in the provider's -vault-addr-allowlist; nothing was sent/)
})

t.test("the connector refuses any host and port but the transport's own", async (t) => {
  const connect = guardedConnector('http://127.0.0.1:8200', {}, opts(), 'http://127.0.0.1:8200')
  const err = await new Promise<Error | null>((resolve) =>
    connect({ hostname: 'localhost', host: 'localhost:8200', protocol: 'http:', port: '8200' }, (...args) =>
      resolve(args[0]),
    ),
  )
  t.equal((err as ProviderError).code, 'VAULT_ADDRESS_NOT_ALLOWED')
  t.match(err!.message, /a connection to "localhost:8200" is not the transport's Vault address/)
})

t.test('real TLS: an unknown CA is a typed TLS failure; the CA file makes it work', async (t) => {
  const dir = await tempDirFor(t)
  const pem = selfSignedServerCert(dir, 'vault-test')
  const { readFileSync } = await import('node:fs')
  const https = await import('node:https')
  const server = https.createServer({ key: readFileSync(pem.key), cert: readFileSync(pem.cert) }, (_req, res) =>
    res.writeHead(200).end('{"ok":true}'),
  )
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((r) => server.close(() => r()))
  })
  const address = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
  const untrusted = await createTransport({ address, tls: { skipVerify: false } }, opts())
  t.teardown(() => untrusted.close())
  const err = (await untrusted
    .call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 })
    .catch((e) => e)) as VaultConnectionError
  t.ok(err instanceof VaultConnectionError)
  t.equal(err.kind, 'tls')
  t.match(err.code, /DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN/)
  const trusted = await createTransport({ address, tls: { skipVerify: false, caCertPath: pem.cert } }, opts())
  t.teardown(() => trusted.close())
  t.same((await trusted.call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 })).body, { ok: true })
  const wrongName = await createTransport(
    { address, tls: { skipVerify: false, caCertPath: pem.cert, serverName: 'vault.example' } },
    opts(),
  )
  t.teardown(() => wrongName.close())
  const mismatch = (await wrongName
    .call({ tenant: 'test', method: 'GET', path: 'x', timeoutMs: 5000 })
    .catch((e) => e)) as VaultConnectionError
  t.equal(mismatch.kind, 'tls')
  t.equal(mismatch.code, 'ERR_TLS_CERT_ALTNAME_INVALID')
})
