// Vault behind an egress proxy: the built daemon, a real OpenBao (HTTP and HTTPS), a real proxy
// (Debian's tinyproxy, test/support/tinyproxy.ts) and Mounts through the driver's own client.
//
// HTTPS_PROXY and HTTP_PROXY are never used for localhost or a loopback IP (Go's rule, kept here),
// so those cases name OpenBao by this machine's host name, which resolves to 127.0.0.1 (Debian's
// /etc/hosts) and is in the certificate of OpenBao's -dev-tls. VAULT_PROXY_ADDR applies to every
// address, so its cases use 127.0.0.1. All traffic stays on 127.0.0.0/8.
import { execFile } from 'node:child_process'
import { lookup } from 'node:dns/promises'
import { hostname } from 'node:os'
import t, { type Test } from 'tap'
import { allowDefaultApp, Fixture } from '../support/fixture.js'
import { findLeaks } from '../support/leaks.js'
import { startOpenBao, type OpenBao } from '../support/openbao.js'
import { freePort } from '../support/ports.js'
import { CLI_MAIN, startProvider, type StartProviderOptions } from '../support/provider.js'
import { selfSignedCaPem } from '../support/tls.js'
import { tempDirFor } from '../support/tmp.js'
import { startTinyproxy } from '../support/tinyproxy.js'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

const SECRET = 'through-the-proxy-7f3c'
const OBJECTS = [{ objectName: 'v', secretPath: 'secret/data/proxied', secretKey: 'value' }]
const PROXY_PASSWORD = 'pr0xy-S3cret'

/** This machine's name when it resolves to a loopback address (the HTTPS_PROXY cases need one). */
async function loopbackName(): Promise<string | undefined> {
  const name = hostname()
  const found = await lookup(name, { family: 4 }).catch(() => undefined)
  return found?.address.startsWith('127.') ? name : undefined
}

async function seededBao(tls: boolean): Promise<OpenBao> {
  const bao = await startOpenBao({ tls })
  await allowDefaultApp(bao)
  const put = await bao.api('POST', '/v1/secret/data/proxied', { data: { value: SECRET } })
  if (put.status !== 200) throw new Error(`kv put: ${put.status}`)
  return bao
}

const name = await loopbackName()
const noName = name === undefined ? `${hostname()} does not resolve to a 127.0.0.0/8 address here` : false
const https = await seededBao(true)
const http = await seededBao(false)
t.teardown(() => Promise.all([https.stop(), http.stop()]))

/** https://<name>:<port> or http://… for the OpenBao, by the machine's name. */
const byName = (bao: OpenBao): string => bao.addr.replace('127.0.0.1', name ?? '127.0.0.1')

async function providerWith(
  t: Test,
  bao: OpenBao,
  env: Record<string, string>,
  opts: StartProviderOptions = {},
): Promise<Fixture> {
  const provider = await startProvider({ ...opts, env })
  t.teardown(() => provider.stop())
  return Fixture.attach(bao, provider)
}

/** What a provider's log and a Mount's message must never hold. */
async function noLeaks(t: Test, fx: Fixture, messages: string[]): Promise<void> {
  const secrets = [SECRET, PROXY_PASSWORD, Buffer.from(`app:${PROXY_PASSWORD}`).toString('base64'), ...fx.issuedJwts]
  t.same(findLeaks(await fx.provider.logs(), secrets), [], 'nothing secret in the provider log')
  t.same(findLeaks(messages.join('\n'), secrets), [], 'nothing secret in the messages')
}

t.test('HTTPS to OpenBao through the proxy: CONNECT, TLS end to end with Vault', { skip: noName }, async (t) => {
  const proxy = await startTinyproxy({ connectPorts: [https.port] })
  t.teardown(() => proxy.stop())
  const fx = await providerWith(t, https, { HTTPS_PROXY: proxy.url })
  const address = byName(https)

  const ok = await fx.mount({ params: { objects: OBJECTS, vaultAddress: address, vaultCACertPath: https.caCertPath! } })
  t.ok(ok.result.ok, ok.result.message)
  t.equal(ok.files.get('v')?.bytes.toString(), SECRET)
  const seen = await proxy.requests()
  t.ok(seen.length > 0, 'the proxy carried the Mount')
  t.same(
    [...new Set(seen)],
    [`CONNECT ${name}:${https.port} HTTP/1.1`],
    'only tunnels to Vault: no request in the clear',
  )

  // The provider checks Vault's certificate through the tunnel: a CA that did not sign it is refused.
  const dir = await tempDirFor(t)
  const otherCa = join(dir, 'other-ca.pem')
  await writeFile(otherCa, selfSignedCaPem('not-openbao'))
  const wrongCa = await fx.mount({ params: { objects: OBJECTS, vaultAddress: address, vaultCACertPath: otherCa } })
  t.equal(wrongCa.result.grpcCode, 'Unavailable')
  t.match(wrongCa.result.message, /not signed by a trusted CA; set vaultCACertPath/)
  t.match(wrongCa.result.message, `through the proxy ${proxy.url} from HTTPS_PROXY`)
  await noLeaks(t, fx, [ok.result.message, wrongCa.result.message])
})

t.test('HTTP to OpenBao through the proxy: absolute-form requests, as Go sends them', { skip: noName }, async (t) => {
  const proxy = await startTinyproxy({ connectPorts: [] })
  t.teardown(() => proxy.stop())
  const fx = await providerWith(t, http, { HTTP_PROXY: proxy.url })
  const address = byName(http)

  const ok = await fx.mount({ params: { objects: OBJECTS, vaultAddress: address } })
  t.ok(ok.result.ok, ok.result.message)
  t.equal(ok.files.get('v')?.bytes.toString(), SECRET)
  const seen = await proxy.requests()
  t.ok(seen.includes(`POST ${address}/v1/auth/jwt/login HTTP/1.1`), `login through the proxy: ${seen.join(' | ')}`)
  t.ok(seen.includes(`GET ${address}/v1/secret/data/proxied HTTP/1.1`), 'read through the proxy')
  await noLeaks(t, fx, [ok.result.message])
})

t.test('NO_PROXY sends the address direct; the proxy sees nothing', { skip: noName }, async (t) => {
  const proxy = await startTinyproxy()
  t.teardown(() => proxy.stop())
  const fx = await providerWith(t, https, { HTTPS_PROXY: proxy.url, NO_PROXY: `example.com,${name}` })
  const ok = await fx.mount({
    params: { objects: OBJECTS, vaultAddress: byName(https), vaultCACertPath: https.caCertPath! },
  })
  t.ok(ok.result.ok, ok.result.message)
  t.same(await proxy.requests(), [], 'nothing reached the proxy')
})

t.test('VAULT_PROXY_ADDR: every address, loopback too, with Basic credentials', async (t) => {
  const proxy = await startTinyproxy({
    connectPorts: [https.port],
    basicAuth: { user: 'app', password: PROXY_PASSWORD },
  })
  t.teardown(() => proxy.stop())
  const withCredentials = `http://app:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}`
  const fx = await providerWith(t, https, { VAULT_PROXY_ADDR: withCredentials, NO_PROXY: '*' })
  const ok = await fx.mount({
    params: { objects: OBJECTS, vaultAddress: https.addr, vaultCACertPath: https.caCertPath! },
  })
  t.ok(ok.result.ok, ok.result.message)
  t.ok((await proxy.requests()).includes(`CONNECT 127.0.0.1:${https.port} HTTP/1.1`), 'tunnelled with credentials')
  const started = (await fx.provider.logLines()).find(
    (l) => l.msg === 'Vault addresses are reached through an egress proxy where the environment says so',
  )
  t.same(
    started?.proxy,
    { vaultApi: `${proxy.url} (VAULT_PROXY_ADDR, with credentials)`, noProxy: '* (NO_PROXY)' },
    'the start-up line says which, without the password',
  )

  const wrong = await providerWith(t, https, {
    VAULT_PROXY_ADDR: `http://app:wrong-${PROXY_PASSWORD}@127.0.0.1:${proxy.port}`,
  })
  const refused = await wrong.mount({
    params: { objects: OBJECTS, vaultAddress: https.addr, vaultCACertPath: https.caCertPath! },
  })
  t.equal(refused.result.grpcCode, 'Unavailable')
  t.match(
    refused.result.message,
    `cannot reach Vault at ${https.addr} through the proxy ${proxy.url} (VAULT_PROXY_ADDR): ` +
      'the proxy refused the user and password in VAULT_PROXY_ADDR (401 Unauthorized)',
  )
  await noLeaks(t, fx, [ok.result.message])
  await noLeaks(t, wrong, [refused.result.message])
  t.notOk((await wrong.provider.logs()).includes(`wrong-${PROXY_PASSWORD}`), 'not even the wrong password is logged')
})

t.test('a proxy that is down: Unavailable naming the proxy and Vault, never the credentials', async (t) => {
  const port = await freePort()
  const fx = await providerWith(t, https, { BAO_PROXY_ADDR: `http://app:${PROXY_PASSWORD}@127.0.0.1:${port}` })
  const down = await fx.mount({
    params: { objects: OBJECTS, vaultAddress: https.addr, vaultCACertPath: https.caCertPath! },
  })
  // The driver's client tries the Mount 3 times (it retries Unavailable); the third finds the
  // address's breaker open, whose fail-fast message names Vault and, in the proxy failure's code, the proxy.
  t.equal(down.result.grpcCode, 'Unavailable')
  t.match(down.result.message, `Vault at "${https.addr}" has been unreachable since`)
  t.match(down.result.message, `(last: connection failed (PROXY_ECONNREFUSED@127.0.0.1:${port}))`)
  const reasons = (await fx.provider.logLines()).filter((l) => l.msg === 'mount').map((l) => String(l.reason))
  t.match(
    reasons[0],
    `login to Vault at ${https.addr} (role "app", auth mount "jwt"): cannot reach Vault at ${https.addr} through the ` +
      `proxy http://127.0.0.1:${port} (BAO_PROXY_ADDR): the proxy refused the connection (ECONNREFUSED): ` +
      `check that it listens at http://127.0.0.1:${port}`,
    'the Mounts before it say what failed in full',
  )
  await noLeaks(t, fx, [down.result.message, ...reasons])
})

t.test('a proxy that refuses the tunnel: Unavailable saying what to allow', { skip: noName }, async (t) => {
  const proxy = await startTinyproxy({ connectPorts: [443] })
  t.teardown(() => proxy.stop())
  const fx = await providerWith(t, https, { https_proxy: proxy.url })
  const refused = await fx.mount({
    params: { objects: OBJECTS, vaultAddress: byName(https), vaultCACertPath: https.caCertPath! },
  })
  t.equal(refused.result.grpcCode, 'Unavailable')
  t.match(
    refused.result.message,
    `through the proxy ${proxy.url} (https_proxy): the proxy refused to connect to ${name}:${https.port} (403 Forbidden): ` +
      `allow it in the proxy (CONNECT to port ${https.port}), or list the Vault host in NO_PROXY`,
  )
  // Not retried within a Mount (a refusal is not a blip); the driver's client tries the Mount 3 times.
  t.same(new Set(await proxy.requests()), new Set([`CONNECT ${name}:${https.port} HTTP/1.1`]), 'only that CONNECT')
})

t.test('-vault-addr-allowlist: an address outside it is refused before anything reaches the proxy', async (t) => {
  const proxy = await startTinyproxy()
  t.teardown(() => proxy.stop())
  const fx = await providerWith(
    t,
    https,
    { VAULT_PROXY_ADDR: proxy.url },
    { args: [`-vault-addr-allowlist=https://vault.allowed.example:8200`] },
  )
  const refused = await fx.mount({
    params: { objects: OBJECTS, vaultAddress: https.addr, vaultCACertPath: https.caCertPath! },
  })
  t.equal(refused.result.grpcCode, 'PermissionDenied')
  t.match(refused.result.message, /not in the provider's -vault-addr-allowlist/)
  t.same(await proxy.requests(), [], 'the proxy saw nothing')
})

t.test('a proxy variable the provider cannot use stops the start, naming it and not its value', async (t) => {
  const started = startProvider({ env: { HTTPS_PROXY: `socks5://app:${PROXY_PASSWORD}@127.0.0.1:1080` } })
  const err = await started.then(
    async (p) => {
      await p.stop()
      return undefined
    },
    (e: unknown) => e as Error,
  )
  t.match(err?.message, /HTTPS_PROXY names a socks5:\/\/ proxy/)
  t.notOk(err?.message.includes(PROXY_PASSWORD), 'no password in what it printed')
})

/** `vault-csi-provider doctor --json` with `env` (and PATH, HOME): its checks by id, and its exit code. */
function doctor(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; out: string; checks: Map<string, any> }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI_MAIN, 'doctor', '--json', ...args],
      {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', ...env },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        const checks = new Map<string, any>((JSON.parse(stdout).checks as any[]).map((c) => [c.id, c]))
        resolve({ code: err ? Number(err.code) : 0, out: stdout + stderr, checks })
      },
    )
  })
}

t.test('doctor says which proxy a Vault address goes through, or why none, and checks Vault through it', async (t) => {
  const proxy = await startTinyproxy({
    connectPorts: [https.port],
    basicAuth: { user: 'app', password: PROXY_PASSWORD },
  })
  t.teardown(() => proxy.stop())
  const provider = await startProvider()
  t.teardown(() => provider.stop())
  const base = ['--socket', provider.socketPath, `--vault-tls-ca-cert=${https.caCertPath!}`]
  const credentials = `http://app:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}`

  const through = await doctor([...base, `--vault-addr=${https.addr}`], { VAULT_PROXY_ADDR: credentials })
  t.match(through.checks.get('vault.proxy'), {
    status: 'pass',
    detail:
      `${https.addr} is reached through the proxy ${proxy.url} (with credentials): VAULT_PROXY_ADDR is set: ` +
      "the Vault API's own proxy variable applies to every address (NO_PROXY does not)",
  })
  t.equal(through.checks.get('vault.reachable').status, 'pass', through.checks.get('vault.reachable').detail)
  t.equal(through.checks.get('vault.tls').status, 'pass', 'the certificate is verified through the tunnel')
  t.ok(
    (await proxy.requests()).includes(`CONNECT 127.0.0.1:${https.port} HTTP/1.1`),
    'the probe went through the proxy',
  )

  const localhost = https.addr.replace('127.0.0.1', 'localhost')
  const direct = await doctor([...base, `--vault-addr=${localhost}`], { HTTPS_PROXY: credentials })
  t.match(direct.checks.get('vault.proxy'), {
    status: 'pass',
    detail: `${localhost} is reached directly: localhost is never reached through a proxy`,
  })

  const port = await freePort()
  const down = await doctor([...base, `--vault-addr=${https.addr}`], {
    BAO_PROXY_ADDR: `http://app:${PROXY_PASSWORD}@127.0.0.1:${port}`,
  })
  t.equal(down.code, 1)
  t.match(down.checks.get('vault.reachable'), {
    status: 'fail',
    detail: `cannot reach Vault at ${https.addr} through the proxy http://127.0.0.1:${port} (BAO_PROXY_ADDR): the proxy refused the connection (ECONNREFUSED)`,
    fix: /the egress proxy failed \(see vault\.proxy/,
  })
  for (const run of [through, direct, down])
    t.notOk(run.out.includes(PROXY_PASSWORD), 'no password in what doctor printed')
})
