// Issue 43, parts 2 and 3. (a) `optional: true` must skip only Vault's answer that nothing is
// stored at the object's own path: with every object optional, a login answered 404 (a
// vaultNamespace OpenBao does not have, a fake Vault answering 404 to everything, a web server that
// is not Vault) or a read answered by another web server must fail the Mount, never answer OK with
// zero files (the driver would delete the pod's files). (b) The operator's CLI on a tenant's
// `provider: openbao` file must confirm the address the Mount uses (`baoAddress`, read before
// `vaultAddress`) and name it: a token minted by the operator's kubectl is never posted where
// baoAddress points without a prompt.
//
// Stand-ins: loopback HTTP servers of the test's for the servers that are not Vault; the victim and
// the namespace attack mount from a real OpenBao.
import { execFile } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { stringify } from 'yaml'
import { exclusiveSuite, startFakeHost } from '../support/adversary.js'
import { attackFigures } from '../support/adversary-figures.js'
import { ANY_ROLE, finishSuite, ROLE, startWorld } from '../support/adversary-world.js'
import { signServiceAccountJwt } from '../support/jwt.js'
import { CLI_MAIN } from '../support/provider.js'
import { tempDirFor } from '../support/tmp.js'

t.setTimeout(20 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

interface CliRun {
  code: number
  stdout: string
  stderr: string
}

t.test('optional objects and the CLI on an OpenBao file', async (t) => {
  // Vault's JSON 404 to everything (logins included), and a web server's HTML 404 to everything.
  const vaultShaped = await startFakeHost({ kind: 'record' })
  t.teardown(() => vaultShaped.close())
  const webServer = await startFakeHost({ kind: 'web' })
  t.teardown(() => webServer.close())
  // Logs anyone in, then answers hostile/web-404 with a web server's HTML 404.
  const routed = await startFakeHost({ kind: 'hostile-vault' })
  t.teardown(() => routed.close())
  const w = await startWorld({ allow: [vaultShaped.url, webServer.url, routed.url] })
  t.teardown(() => w.stop())
  // The victim's Mounts and /health/live during each attack, and the CPU of an attacking Mount.
  const figures = attackFigures(w)
  await figures.start(t)

  const everyObjectOptional = [
    { objectName: 'a', secretPath: 'secret/data/victim', secretKey: 'password', optional: true },
    { objectName: 'b', secretPath: 'secret/data/other', optional: true },
  ]

  await t.test('a login in a vaultNamespace OpenBao does not have', async (t: Test) => {
    await figures.attack(t, {
      klass: '43.2',
      name: 'every object optional, the login answered 404 (namespace not found)',
      attempt: () => w.mount(w.attrs({ vaultNamespace: 'no-such-namespace', objects: everyObjectOptional })),
      expect: { code: 'NotFound', message: [/login/, /namespace not found/] },
    })
  })

  await t.test('a login answered 404 with Vault-shaped JSON by whatever is at vaultAddress', async (t: Test) => {
    await figures.attack(t, {
      klass: '43.2',
      name: 'every object optional, a fake Vault answering {"errors":[]} 404 to the login',
      attempt: () => w.mount(w.attrs({ vaultAddress: vaultShaped.url, objects: everyObjectOptional })),
      expect: { code: 'NotFound', message: [/login/, /404/] },
    })
  })

  await t.test('a web server that is not Vault at vaultAddress', async (t: Test) => {
    await figures.attack(t, {
      klass: '43.2',
      name: 'every object optional, an HTML 404 to the login',
      attempt: () => w.mount(w.attrs({ vaultAddress: webServer.url, objects: everyObjectOptional })),
      expect: { code: 'NotFound', message: [/login/, /404/] },
    })
  })

  await t.test('the object’s own read answered 404 by a web server that is not Vault', async (t: Test) => {
    await figures.attack(t, {
      klass: '43.2',
      name: 'an optional object, its read answered with an HTML 404',
      attempt: () =>
        w.mount(
          w.attrs({
            roleName: ANY_ROLE,
            vaultAddress: routed.url,
            objects: [{ objectName: 'a', secretPath: 'hostile/web-404', optional: true }],
          }),
        ),
      expect: { code: 'NotFound', message: [/object "a"/, /hostile\/web-404/, /404/] },
    })
  })

  await t.test("the operator's CLI on a tenant's provider: openbao file", async (t: Test) => {
    const dir = await tempDirFor(t, 'vcp-adv-cli-bao-')
    // The operator's kubectl, replaced by a recorder: any call is the token minted.
    const kubectlLog = join(dir, 'kubectl.log')
    const kubectl = join(dir, 'kubectl')
    const minted = signServiceAccountJwt({
      namespace: 'default',
      serviceAccount: 'app',
      podName: 'p',
      podUid: 'u',
      audience: 'vault',
    })
    w.secrets.push(minted)
    writeFileSync(kubectl, `#!/bin/sh\necho "$@" >> '${kubectlLog}'\necho '${minted}'\n`, { mode: 0o755 })
    // The tenant's file: the benign vaultAddress an operator reads, and baoAddress, which the Mount reads first.
    const baoAddress = vaultShaped.url
    const spcFile = join(dir, 'spc.yaml')
    writeFileSync(
      spcFile,
      stringify({
        apiVersion: 'secrets-store.csi.x-k8s.io/v1',
        kind: 'SecretProviderClass',
        metadata: { name: 'tenant-bao-spc' },
        spec: {
          provider: 'openbao',
          parameters: {
            baoAddress,
            vaultAddress: w.bao.addr,
            roleName: ROLE,
            audience: 'vault',
            baoAuthMountPath: 'jwt',
            objects: stringify([{ objectName: 'a', secretPath: 'secret/data/victim', secretKey: 'password' }]),
          },
        },
      }),
    )
    const cli = (args: string[]): Promise<CliRun> =>
      new Promise((resolve) => {
        execFile(
          process.execPath,
          [CLI_MAIN, ...args],
          { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, KUBECTL: kubectl }, timeout: 60_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
        )
      })
    const seenBefore = (await vaultShaped.requests()).length
    // Namespace and audience on the command line: only the address is the file's.
    const base = [
      'mount',
      spcFile,
      '--in-process',
      '--token-from-kubectl',
      '-n',
      'default',
      '--service-account=app',
      '--audience=vault',
    ]

    const asked = await cli(base)
    t.equal(asked.code, 2, `not confirmed: ${asked.stderr.slice(0, 400)}`)
    t.match(asked.stderr, `send it to ${baoAddress} (parameter "baoAddress" of the SecretProviderClass file)`)
    t.match(asked.stderr, 'the SecretProviderClass file chose the OpenBao address (baoAddress): not confirmed')
    t.notMatch(asked.stderr, `send it to ${w.bao.addr}`, 'the prompt does not name the benign vaultAddress')

    // The operator "overrides" the address with the name they know: the Mount still reads baoAddress.
    const overridden = await cli([...base, `--param=vaultAddress=${w.bao.addr}`])
    t.equal(overridden.code, 2, `--param vaultAddress is no confirmation: ${overridden.stderr.slice(0, 400)}`)
    t.match(overridden.stderr, `send it to ${baoAddress} (parameter "baoAddress"`)

    const outside = await cli([...base, '--yes', `--vault-addr-allowlist=${w.bao.addr}`])
    t.equal(outside.code, 2, `an address outside --vault-addr-allowlist is refused: ${outside.stderr.slice(0, 400)}`)
    t.match(
      outside.stderr,
      `the OpenBao address ${baoAddress} (parameter "baoAddress" of the SecretProviderClass file) is not in --vault-addr-allowlist`,
    )

    t.notOk(existsSync(kubectlLog), 'the operator’s kubectl was never run (no token minted)')
    const seen = (await vaultShaped.requests()).slice(seenBefore)
    t.same(
      seen.filter((r) => r.jwt || r.vaultToken || r.authorization),
      [],
      `where baoAddress points got no token (${seen.map((r) => `${r.method} ${r.path}`).join(', ')})`,
    )
  })

  t.comment(figures.table())
  await finishSuite(t, w, 'optional-and-cli')
})
