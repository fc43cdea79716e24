// The troubleshooting CLI as an operator runs it: `vault-csi-provider mount`
// through the socket and in-process (same files), `doctor` against a healthy,
// a sealed and a wrongly trusted OpenBao, `version`, and the exit codes.
import { execFile, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, writeFile } from 'node:fs/promises'
import { randomBytes, randomUUID } from 'node:crypto'
import { join } from 'node:path'
import t from 'tap'
import { stringify } from 'yaml'
import { startFakeHost } from '../support/adversary.js'
import { allowDefaultApp, Fixture, JWT_MOUNT } from '../support/fixture.js'
import { signServiceAccountJwt } from '../support/jwt.js'
import { findLeaks } from '../support/leaks.js'
import { startOpenBao } from '../support/openbao.js'
import { checkSocket } from '../../src/server/health.js'
import { CLI_MAIN, startProvider } from '../support/provider.js'
import { makeTempDir } from '../support/tmp.js'
import { selfSignedCaPem } from '../support/tls.js'

/** The built CLI; VCP_CLI_MAIN overrides, else it sits next to the daemon build. */

interface CliRun {
  code: number
  stdout: string
  stderr: string
}

function cli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI_MAIN, ...args],
      {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', ...env },
        timeout: 120_000,
        maxBuffer: 10 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

const SECRET = 'cli-pa55word-Vq8'

function spcYaml(params: Record<string, unknown>): string {
  return stringify({
    apiVersion: 'secrets-store.csi.x-k8s.io/v1',
    kind: 'SecretProviderClass',
    metadata: { name: 'cli-spc', namespace: 'default' },
    spec: {
      provider: 'vault',
      parameters: Object.fromEntries(
        Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : stringify(v)]),
      ),
    },
  })
}

t.test('version and exit codes that need no server', async (t) => {
  const v = await cli(['version'])
  t.equal(v.code, 0)
  t.match(v.stdout, /^vault-csi-provider-ts \d+\.\d+\.\d+ \(driver API v1alpha1/)
  const vj = await cli(['version', '--json'])
  t.equal(vj.code, 0)
  t.match(JSON.parse(vj.stdout), { name: 'vault-csi-provider-ts', api: 'v1alpha1' })
  t.equal((await cli(['--help'])).code, 0, '--help')
  t.equal((await cli(['no-such-command'])).code, 2, 'unknown command: usage error')
  t.equal((await cli(['mount'])).code, 2, 'missing argument: usage error')
  t.equal((await cli(['mount', '--bogus-option', 'x.yaml'])).code, 2, 'unknown option: usage error')
  const missing = await cli(['mount', '/nonexistent/spc.yaml'])
  t.equal(missing.code, 2, 'unreadable SecretProviderClass file: usage error')
  t.match(missing.stderr, /cannot read \/nonexistent\/spc\.yaml: ENOENT/)

  const dir = await makeTempDir('vcp-cli-')
  t.teardown(() => dir.cleanup())
  const notSpc = join(dir.path, 'pod.yaml')
  await writeFile(notSpc, 'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n')
  const np = await cli(['mount', notSpc])
  t.equal(np.code, 2)
  t.match(np.stderr, /holds no SecretProviderClass/)

  const spc = join(dir.path, 'spc.yaml')
  await writeFile(spc, spcYaml({ roleName: 'app', objects: [{ objectName: 'a', secretPath: 'secret/data/a' }] }))
  const unreachable = await cli(['mount', spc, '--socket', join(dir.path, 'nobody.sock')])
  t.equal(unreachable.code, 3, 'no provider on the socket')
  t.match(unreachable.stdout, /cannot reach the provider at .*nobody\.sock/)
  t.match(unreachable.stdout, /vault-csi-provider doctor --socket/)
})

t.test('serve runs the daemon with its flags', async (t) => {
  const dir = await makeTempDir('vcp-serve-')
  t.teardown(() => dir.cleanup())
  const socketPath = join(dir.path, 'vault.sock')
  let output = ''
  const child = spawn(
    process.execPath,
    [CLI_MAIN, 'serve', `-endpoint=${socketPath}`, '-health-addr=off', `-hmac-key-file=${join(dir.path, 'k')}`],
    { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  child.stdout.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr.on('data', (c: Buffer) => (output += c.toString()))
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
  t.teardown(() => {
    child.kill('SIGKILL')
  })
  const until = Date.now() + 15_000
  while (!existsSync(socketPath) && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
  const v = await checkSocket(socketPath)
  t.equal(v.ok, true, v.detail)
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'clean exit on SIGTERM')
  t.match(output, /"msg":"serving the provider API"/)
  t.same(findLeaks(output, []), [], 'log-leak check')
})

t.test('mount through the socket and in-process print the same files', async (t) => {
  const fx = await Fixture.start()
  t.teardown(() => fx.stop())
  await fx.kvPut('cli', { password: SECRET, user: 'svc' })
  const dir = await makeTempDir('vcp-cli-')
  t.teardown(() => dir.cleanup())

  const spc = join(dir.path, 'spc.yaml')
  await writeFile(
    spc,
    spcYaml({
      roleName: 'app',
      vaultAddress: fx.bao.addr,
      vaultAuthMountPath: JWT_MOUNT,
      objects: [
        { objectName: 'db/password', secretPath: 'secret/data/cli', secretKey: 'password', filePermission: 0o600 },
        { objectName: 'db/user', secretPath: 'secret/data/cli', secretKey: 'user' },
        { objectName: 'whole.json', secretPath: 'secret/data/cli' },
      ],
    }),
  )
  const podUid = randomUUID()
  const jwt = signServiceAccountJwt({
    namespace: 'default',
    serviceAccount: 'app',
    podName: 'cli-pod',
    podUid,
    audience: 'vault',
    expiresInSec: 600,
  })
  const tokenFile = join(dir.path, 'token')
  await writeFile(tokenFile, jwt + '\n')
  await chmod(tokenFile, 0o600)
  const pod = ['--pod-name', 'cli-pod', '--pod-uid', podUid, '--service-account', 'app', '--token-file', tokenFile]
  const hmacKeyFile = join(fx.provider.socketDir, 'hmac.key')

  const viaSocket = await cli(['mount', spc, '--socket', fx.provider.socketPath, ...pod, '--json'])
  t.equal(viaSocket.code, 0, viaSocket.stderr + viaSocket.stdout)
  const inProcess = await cli(['mount', spc, '--in-process', `--hmac-key-file=${hmacKeyFile}`, ...pod, '--json'])
  t.equal(inProcess.code, 0, inProcess.stderr + inProcess.stdout)
  const a = JSON.parse(viaSocket.stdout)
  const b = JSON.parse(inProcess.stdout)
  t.equal(a.via, 'socket')
  t.equal(b.via, 'in-process')
  t.same(
    a.files.map((f: any) => f.path),
    ['db/password', 'db/user', 'whole.json'],
  )
  t.match(a.files[0], { path: 'db/password', mode: '0600', size: SECRET.length })
  t.same(a.files, b.files, 'same paths, modes, sizes and versions')
  t.same(a.objects, b.objects)
  t.notOk(a.vaultCalls, 'no per-call timings through the socket')
  t.same(
    b.vaultCalls.map((c: any) => [c.operation, c.request, c.status]),
    [
      ['login', 'POST auth/jwt/login', '2xx'],
      ['read', 'GET secret/data/cli', '2xx'],
    ],
    'in-process: the login and one read for three objects, each timed',
  )
  t.ok(b.vaultCalls.every((c: any) => typeof c.durationMs === 'number'))

  // Human output: a tree with sizes and modes; values masked.
  const human = await cli(['mount', spc, '--socket', fx.provider.socketPath, ...pod])
  t.equal(human.code, 0)
  t.match(human.stdout, /✓ SecretProviderClass cli-spc for pod default\/cli-pod \(service account app\) via socket/)
  t.match(
    human.stdout,
    /├── db\/\n│ {3}├── password {2}16 B {2}0600 {2}version [A-Za-z0-9_-]{12}… {2}\(value hidden; --show-values\)/,
  )
  t.notOk(human.stdout.includes('\u001b['), 'no colours when stdout is not a terminal')
  const inProcessHuman = await cli(['mount', spc, '--in-process', `--hmac-key-file=${hmacKeyFile}`, ...pod])
  t.match(
    inProcessHuman.stdout,
    /Vault calls:\n {2}login {2}POST auth\/jwt\/login .* 2xx .*ms\n {2}read {3}GET secret\/data\/cli .* 2xx .*ms/,
  )
  for (const run of [viaSocket, inProcess, human, inProcessHuman]) {
    t.same(findLeaks(run.stdout + run.stderr, [SECRET, jwt]), [], 'no value or token without --show-values')
  }
  const shown = await cli(['mount', spc, '--socket', fx.provider.socketPath, ...pod, '--show-values'])
  t.equal(shown.code, 0)
  t.match(shown.stdout, new RegExp(`password .*= "${SECRET}"`), '--show-values prints the value')
  t.same(findLeaks(shown.stdout, [jwt]), [], 'but never the token')

  // Every daemon flag reaches the in-process Mount service (issue 44), also those the CLI once left at
  // their default: here the OpenBao name of the address, -identity-scope and -max-mount-bytes.
  await fx.kvPut('cli-big', { blob: 'b'.repeat(4096) })
  const big = join(dir.path, 'big.yaml')
  await writeFile(
    big,
    spcYaml({
      roleName: 'app',
      vaultAuthMountPath: JWT_MOUNT,
      objects: [{ objectName: 'blob', secretPath: 'secret/data/cli-big', secretKey: 'blob' }],
    }),
  )
  const bigMount = [
    'mount',
    big,
    '--in-process',
    `--hmac-key-file=${hmacKeyFile}`,
    ...pod,
    `--openbao-addr=${fx.bao.addr}`,
    '--identity-scope=serviceaccount',
    '--json',
  ]
  const bigRun = await cli(bigMount)
  t.equal(bigRun.code, 0, bigRun.stderr + bigRun.stdout)
  t.match(JSON.parse(bigRun.stdout).files, [{ path: 'blob', size: 4096 }], '--openbao-addr is the default address')
  const capped = await cli([...bigMount, '--max-mount-bytes', '2KiB'])
  t.equal(capped.code, 1, capped.stderr + capped.stdout)
  t.match(JSON.parse(capped.stdout), { ok: false, error: { code: 'MOUNT_BUDGET_EXCEEDED' } }, '--max-mount-bytes')
  const badScope = await cli(['mount', big, '--in-process', ...pod, '--identity-scope=nobody'])
  t.equal(badScope.code, 2, 'a bad value is a usage error')
  t.match(badScope.stderr, /-identity-scope must be one of pod, serviceaccount, got "nobody"/)

  // A failing Mount: exit 1 in both modes, with the provider's message.
  await writeFile(
    join(dir.path, 'bad.yaml'),
    spcYaml({
      roleName: 'app',
      vaultAddress: fx.bao.addr,
      vaultAuthMountPath: JWT_MOUNT,
      objects: [{ objectName: 'x', secretPath: 'secret/data/absent', secretKey: 'k' }],
    }),
  )
  const bad = await cli(['mount', join(dir.path, 'bad.yaml'), '--socket', fx.provider.socketPath, ...pod])
  t.equal(bad.code, 1, 'a failed Mount exits 1')
  t.match(bad.stdout, /✗ SecretProviderClass cli-spc .* failed/)
  t.match(bad.stdout, /NOT_FOUND: .*secret\/data\/absent/)
  const badJson = await cli(['mount', join(dir.path, 'bad.yaml'), '--in-process', ...pod, '--json'])
  t.equal(badJson.code, 1)
  t.match(JSON.parse(badJson.stdout), { ok: false, error: { code: 'VAULT_NOT_FOUND', grpcCode: 'NOT_FOUND' } })

  // Files larger than the driver accepts (-max-response-size, 4 MiB): the in-process Mount refuses
  // them as the daemon does, and its log line says failure. Three answers of 1.5 MiB, each within
  // -max-vault-response-size and together within -max-mount-bytes.
  const large = 'x'.repeat(1536 * 1024)
  for (const name of ['l1', 'l2', 'l3']) await fx.kvPut(name, { v: large })
  await writeFile(
    join(dir.path, 'large.yaml'),
    spcYaml({
      roleName: 'app',
      vaultAddress: fx.bao.addr,
      vaultAuthMountPath: JWT_MOUNT,
      objects: ['l1', 'l2', 'l3'].map((n) => ({ objectName: n, secretPath: `secret/data/${n}`, secretKey: 'v' })),
    }),
  )
  const tooLarge = await cli([
    'mount',
    join(dir.path, 'large.yaml'),
    '--in-process',
    `--hmac-key-file=${hmacKeyFile}`,
    '--log-level=info',
    ...pod,
    '--json',
  ])
  t.equal(tooLarge.code, 1, 'refused in-process too')
  const refusal = JSON.parse(tooLarge.stdout)
  t.match(refusal, { ok: false, error: { code: 'RESPONSE_TOO_LARGE', grpcCode: 'RESOURCE_EXHAUSTED' } })
  t.match(
    refusal.error.message,
    /^the Mount's files come to 4\.5 MiB \(\d+ bytes\), more than the 4\.0 MiB the driver accepts \(provider flag -max-response-size, matching the driver's --max-call-recv-msg-size\); largest objects: "l\d" \(1\.5 MiB\), "l\d" \(1\.5 MiB\), "l\d" \(1\.5 MiB\)$/,
  )
  const mountLines = tooLarge.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === 'mount')
  t.match(mountLines, [{ outcome: 'failure', code: 'RESPONSE_TOO_LARGE' }], 'one mount line, a failure')
  t.equal(mountLines.length, 1)
  t.same(findLeaks(await fx.provider.logs(), [SECRET]), [], 'provider log-leak check')
})

t.test('doctor: healthy (all pass), wrong role, wrong CA, sealed', async (t) => {
  const bao = await startOpenBao({ tls: true })
  t.teardown(() => bao.stop())
  await allowDefaultApp(bao)
  const provider = await startProvider()
  t.teardown(() => provider.stop())
  const dir = await makeTempDir('vcp-doctor-')
  t.teardown(() => dir.cleanup())
  const keyFile = join(dir.path, 'hmac.key')
  await writeFile(keyFile, randomBytes(32), { mode: 0o600 })
  const jwt = signServiceAccountJwt({
    namespace: 'default',
    serviceAccount: 'app',
    podName: 'doctor',
    podUid: randomUUID(),
    audience: 'vault',
    expiresInSec: 600,
  })
  const tokenFile = join(dir.path, 'token')
  await writeFile(tokenFile, jwt, { mode: 0o600 })
  const base = [
    'doctor',
    '--socket',
    provider.socketPath,
    `--vault-addr=${bao.addr}`,
    `--vault-mount=${JWT_MOUNT}`,
    `--hmac-key-file=${keyFile}`,
  ]
  const byId = (run: CliRun): Map<string, any> =>
    new Map((JSON.parse(run.stdout).checks as any[]).map((c) => [c.id, c]))

  const accessors = async (): Promise<number> =>
    ((await bao.api('LIST', '/v1/auth/token/accessors')).body?.data?.keys ?? []).length
  const tokensBefore = await accessors()
  const healthy = await cli([
    ...base,
    `--vault-tls-ca-cert=${bao.caCertPath!}`,
    '--role',
    'app',
    '--token-file',
    tokenFile,
    '--json',
  ])
  t.equal(healthy.code, 0, healthy.stdout + healthy.stderr)
  const checks = byId(healthy)
  t.same(
    [...checks.keys()],
    [
      'socket.exists',
      'socket.permissions',
      'socket.version',
      'socket.health',
      'vault.proxy',
      'vault.reachable',
      'vault.tls',
      'vault.sealed',
      'vault.standby',
      'vault.version',
      'vault.clock',
      'auth.mount',
      'auth.role',
      'auth.login',
      'hmac.key',
    ],
  )
  for (const c of checks.values()) t.equal(c.status, 'pass', `${c.id}: ${c.detail}`)
  t.match(checks.get('vault.version').detail, /^2\./)
  t.equal(await accessors(), tokensBefore, "the doctor's test login left no token behind")

  const human = await cli([...base, `--vault-tls-ca-cert=${bao.caCertPath!}`, '--role', 'app'])
  t.equal(human.code, 0)
  t.match(human.stdout, /✓ pass {2}Vault is initialized and unsealed/)
  t.match(human.stdout, /checks: 14 pass, 0 fail, 0 warn, 0 skip/)

  const wrongRole = await cli([...base, `--vault-tls-ca-cert=${bao.caCertPath!}`, '--role', 'nope', '--json'])
  t.equal(wrongRole.code, 1)
  t.match(byId(wrongRole).get('auth.role'), {
    status: 'fail',
    detail: /role "nope" could not be found/,
    fix: /create the role/,
  })
  t.equal(byId(wrongRole).get('auth.mount').status, 'pass')

  // A CA that did not sign Vault's certificate.
  const wrongCa = join(dir.path, 'wrong-ca.pem')
  await writeFile(wrongCa, selfSignedCaPem('not-the-vault-ca'))
  const badCa = await cli([...base, `--vault-tls-ca-cert=${wrongCa}`, '--role', 'app', '--json'])
  t.equal(badCa.code, 1, 'a failed check exits 1')
  const bc = byId(badCa)
  t.match(bc.get('vault.tls'), { status: 'fail', fix: /-vault-tls-ca-cert .*vaultCACertPath/ })
  t.equal(bc.get('vault.reachable').status, 'pass', 'the connection itself works')
  t.equal(bc.get('socket.version').status, 'pass')
  const badCaHuman = await cli([...base, `--vault-tls-ca-cert=${wrongCa}`])
  t.match(badCaHuman.stdout, /✗ FAIL {2}TLS chain is trusted {2}\[vault\.tls\]\n.*\n {8}fix: .*vaultCACertPath/)

  await bao.seal()
  const sealed = await cli([...base, `--vault-tls-ca-cert=${bao.caCertPath!}`, '--role', 'app', '--json'])
  t.equal(sealed.code, 1)
  const sc = byId(sealed)
  t.match(sc.get('vault.sealed'), { status: 'fail', detail: /sealed/, fix: /unseal/ })
  t.equal(sc.get('vault.reachable').status, 'pass')
  t.equal(sc.get('socket.version').status, 'pass', 'the provider is fine; only Vault is not')

  for (const run of [healthy, human, wrongRole, badCa, sealed]) {
    t.same(findLeaks(run.stdout + run.stderr, [jwt]), [], 'doctor prints no token')
  }
  t.same(findLeaks(await provider.logs(), []), [], 'provider log-leak check')
})

t.test(
  'mount --token-from-kubectl on a provider: openbao file: the address the Mount uses is the one confirmed',
  async (t) => {
    const fx = await Fixture.start()
    t.teardown(() => fx.stop())
    await fx.kvPut('cli-bao', { password: SECRET })
    // Where baoAddress points: a recorder of whatever it is sent.
    const elsewhere = await startFakeHost()
    t.teardown(() => elsewhere.close())
    const dir = await makeTempDir('vcp-cli-bao-')
    t.teardown(() => dir.cleanup())
    const podUid = randomUUID()
    const minted = signServiceAccountJwt({
      namespace: 'default',
      serviceAccount: 'app',
      podName: 'bao-pod',
      podUid,
      audience: 'vault',
      expiresInSec: 600,
    })
    const kubectlLog = join(dir.path, 'kubectl.log')
    const kubectl = join(dir.path, 'kubectl')
    await writeFile(kubectl, `#!/bin/sh\necho "$@" >> '${kubectlLog}'\necho '${minted}'\n`, { mode: 0o755 })
    const spc = join(dir.path, 'spc.yaml')
    await writeFile(
      spc,
      stringify({
        apiVersion: 'secrets-store.csi.x-k8s.io/v1',
        kind: 'SecretProviderClass',
        metadata: { name: 'bao-spc' },
        spec: {
          provider: 'openbao',
          parameters: {
            baoAddress: elsewhere.url,
            vaultAddress: fx.bao.addr,
            roleName: 'app',
            audience: 'vault',
            baoAuthMountPath: JWT_MOUNT,
            objects: stringify([{ objectName: 'pw', secretPath: 'secret/data/cli-bao', secretKey: 'password' }]),
          },
        },
      }),
    )
    const hmacKeyFile = join(fx.provider.socketDir, 'hmac.key')
    const base = ['mount', spc, '--in-process', `--hmac-key-file=${hmacKeyFile}`, '--token-from-kubectl']
    const pod = [
      '-n',
      'default',
      '--service-account=app',
      '--audience=vault',
      '--pod-name=bao-pod',
      `--pod-uid=${podUid}`,
    ]
    const env = { KUBECTL: kubectl }

    const refused = await cli([...base, ...pod], env)
    t.equal(refused.code, 2, `not confirmed: ${refused.stderr}`)
    t.match(refused.stderr, `send it to ${elsewhere.url} (parameter "baoAddress" of the SecretProviderClass file)`)
    t.match(refused.stderr, 'the SecretProviderClass file chose the OpenBao address (baoAddress): not confirmed')
    t.match(refused.stderr, '--param baoAddress=<address>')

    const vaultParam = await cli([...base, ...pod, `--param=vaultAddress=${fx.bao.addr}`], env)
    t.equal(vaultParam.code, 2, '--param vaultAddress does not override the baoAddress the Mount uses')
    t.match(vaultParam.stderr, `send it to ${elsewhere.url} (parameter "baoAddress"`)

    const outside = await cli([...base, ...pod, '--yes', `--vault-addr-allowlist=${fx.bao.addr}`], env)
    t.equal(outside.code, 2)
    t.match(
      outside.stderr,
      `the OpenBao address ${elsewhere.url} (parameter "baoAddress" of the SecretProviderClass file) is not in --vault-addr-allowlist`,
    )
    t.notOk(existsSync(kubectlLog), 'no token was minted')

    const given = await cli([...base, ...pod, `--param=baoAddress=${fx.bao.addr}`, '--json'], env)
    t.equal(given.code, 0, `--param baoAddress is the operator's: no prompt: ${given.stderr}${given.stdout}`)
    t.same(
      JSON.parse(given.stdout).files.map((f: { path: string }) => f.path),
      ['pw'],
    )
    t.ok(existsSync(kubectlLog), 'the token was minted')
    t.same(await elsewhere.requests(), [], 'nothing was sent where baoAddress pointed')
    t.same(findLeaks(given.stdout + given.stderr, [SECRET, minted]), [], 'no value or token printed')
  },
)
