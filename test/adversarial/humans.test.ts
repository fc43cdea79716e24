// Issue 37, classes 4 and 5: what a tenant can make reach a person. Text a Vault of the tenant's
// answers with (terminal escape sequences, C1 controls, bidirectional overrides) goes into gRPC
// status details, hence FailedMount events, the daemon's log and the CLI's terminal: it must arrive
// escaped. And the operator's CLI, pointed at a tenant's SecretProviderClass file, must not mint a
// token with the operator's kubectl for what the file decides (namespace, audience, Vault address)
// without the operator's confirmation.
//
// Stand-in: the tenant's Vault is a loopback HTTP server of the test's (a real OpenBao cannot be
// made to answer with chosen control characters); the victim mounts from a real OpenBao.
import { execFile } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { stringify } from 'yaml'
import { printable, unprintableKind } from '../../src/util/printable.js'
import { exclusiveSuite, startFakeHost } from '../support/adversary.js'
import { TERMINAL_CONTROLS } from '../support/adversary-hosts.js'
import { ANY_ROLE, expectAttack, finishSuite, ROLE, startWorld } from '../support/adversary-world.js'
import { driverMount } from '../support/driver-client.js'
import { signServiceAccountJwt } from '../support/jwt.js'
import { CLI_MAIN } from '../support/provider.js'
import { tempDirFor } from '../support/tmp.js'

t.setTimeout(20 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

/** The texts holding a character that acts on a terminal or reorders text, as it is: around the first one. */
function unprintable(texts: string[]): string[] {
  return texts
    .filter((s) => unprintableKind(s) !== undefined)
    .map((s) => {
      const at = [...s].findIndex((c) => unprintableKind(c) !== undefined)
      return JSON.stringify([...s].slice(Math.max(0, at - 60), at + 60).join(''))
    })
}

interface CliRun {
  code: number
  stdout: string
  stderr: string
}

t.test('what reaches a person', async (t) => {
  const tenantVault = await startFakeHost({ kind: 'hostile-vault', healthVersion: `2.0 ${TERMINAL_CONTROLS}` })
  t.teardown(() => tenantVault.close())
  const w = await startWorld({ allow: [tenantVault.url] })
  t.teardown(() => w.stop())

  await t.test('Vault’s error text with terminal controls', async (t: Test) => {
    const attributes = w.attrs({
      roleName: ANY_ROLE,
      vaultAddress: tenantVault.url,
      objects: [{ objectName: 'a', secretPath: 'hostile/controls' }],
    })
    const out = await expectAttack(t, w, {
      klass: '37.5',
      name: 'a read error of ESC, BEL, C1, a bidirectional override and a line separator',
      attempt: () => w.mount(attributes),
      expect: {
        code: 'InvalidArgument',
        message: [/object "a"/, /denied \\u001b\[2J\\u001b\]0;pwned\\u0007\\u009b31m/],
      },
    })
    t.same(unprintable(out.answers.map((a) => a.message)), [], 'every gRPC status detail arrived escaped')
    // What the driver puts into the pod's FailedMount event: its own client's error text.
    const target = join(await tempDirFor(t, 'vcp-adv-target-'), 'target')
    await mkdir(target)
    const driver = await driverMount({
      socketDir: w.daemon.provider.socketDir,
      provider: 'vault',
      targetPath: target,
      attributes,
      secrets: 'null',
    })
    t.equal(driver.grpcCode, 'InvalidArgument', driver.message.slice(0, 300))
    t.match(driver.message, '\\u009b31mred\\u001b[0m \\u202etxt.exe', 'the event text shows the characters as escapes')
    t.same(unprintable([driver.message]), [], 'the FailedMount event text holds none of them as they are')
  })

  const objectNames: Array<[string, string]> = [
    ['a C1 control (CSI)', `report\u009b2J.txt`],
    ['a right-to-left override', `invoice\u202etxt.exe`],
    ['a first-strong isolate', `name\u2068x`],
    ['a right-to-left mark', `x\u200fy`],
  ]
  for (const [what, objectName] of objectNames) {
    await t.test(`objectName with ${what}`, async (t: Test) => {
      // The victim's own secret and role: on 3964ba9 this Mount succeeded and wrote the file.
      const attributes = w.attrs({
        objects: [{ objectName, secretPath: 'secret/data/victim', secretKey: 'password' }],
      })
      const escaped = printable(objectName).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      await expectAttack(t, w, {
        klass: '37.5',
        name: `objectName with ${what}`,
        attempt: () => w.mount(attributes),
        expect: {
          code: 'InvalidArgument',
          message: [/objectName|file path|file name/i, new RegExp(escaped)],
        },
      })
    })
  }

  await t.test('the daemon’s log holds no such character as it is', async (t: Test) => {
    const lines = (await w.daemon.provider.logs()).split('\n')
    t.same(unprintable(lines), [], `none of ${lines.length} log lines`)
  })

  await t.test("the operator's CLI on a tenant's SecretProviderClass file", async (t: Test) => {
    const dir = await tempDirFor(t, 'vcp-adv-cli-')
    // The operator's kubectl, replaced by a recorder: any call is the token minted.
    const kubectlLog = join(dir, 'kubectl.log')
    const kubectl = join(dir, 'kubectl')
    const minted = signServiceAccountJwt({
      namespace: 'kube-system',
      serviceAccount: 'app',
      podName: 'p',
      podUid: 'u',
      audience: 'vault',
    })
    w.secrets.push(minted)
    writeFileSync(kubectl, `#!/bin/sh\necho "$@" >> '${kubectlLog}'\necho '${minted}'\n`, { mode: 0o755 })
    // The tenant's file: another namespace than its own, its own audience, its own Vault.
    const spcFile = join(dir, 'spc.yaml')
    writeFileSync(
      spcFile,
      stringify({
        apiVersion: 'secrets-store.csi.x-k8s.io/v1',
        kind: 'SecretProviderClass',
        metadata: { name: 'tenant-spc', namespace: 'kube-system' },
        spec: {
          provider: 'vault',
          parameters: {
            vaultAddress: tenantVault.url,
            roleName: ROLE,
            audience: 'tenant-audience',
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
    const socket = ['--socket', w.daemon.provider.socketPath]
    const seenBefore = (await tenantVault.requests()).length

    const doctor = await cli(['doctor', ...socket, '--spc', spcFile, '--token-from-kubectl', '--service-account=app'])
    t.equal(doctor.code, 2, `doctor refuses without --yes: ${doctor.stderr.slice(0, 300)}`)
    t.match(doctor.stderr, 'kubectl will mint a token for service account kube-system/app (audience tenant-audience)')
    t.match(doctor.stderr, `and send it to ${tenantVault.url}`)
    t.match(
      doctor.stderr,
      'the SecretProviderClass file chose the namespace, audience, Vault address (vaultAddress): not confirmed',
    )

    const mount = await cli(['mount', spcFile, '--in-process', '--token-from-kubectl', '--service-account=app'])
    t.equal(mount.code, 2, `mount refuses without --yes: ${mount.stderr.slice(0, 300)}`)
    t.match(mount.stderr, 'not confirmed')

    const allowed = `--vault-addr-allowlist=${w.bao.addr}`
    const outside = await cli([
      'mount',
      spcFile,
      '--in-process',
      '--token-from-kubectl',
      '--service-account=app',
      '--yes',
      allowed,
    ])
    t.equal(
      outside.code,
      2,
      `an address outside --vault-addr-allowlist is refused, --yes or not: ${outside.stderr.slice(0, 300)}`,
    )
    t.match(
      outside.stderr,
      `the Vault address ${tenantVault.url} (parameter "vaultAddress" of the SecretProviderClass file) is not in --vault-addr-allowlist`,
    )

    t.notOk(existsSync(kubectlLog), 'the operator’s kubectl was never run (no token minted)')
    const seen = (await tenantVault.requests()).slice(seenBefore)
    t.same(
      seen.filter((r) => r.jwt || r.vaultToken || r.authorization),
      [],
      `the tenant's Vault got no token (${seen.map((r) => `${r.method} ${r.path}`).join(', ')})`,
    )

    // Without minting, doctor shows what the tenant's Vault says (its version): escaped.
    const text = await cli(['doctor', ...socket, '--spc', spcFile])
    const json = await cli(['doctor', ...socket, '--spc', spcFile, '--json'])
    t.match(text.stdout, '2.0 \\u001b[2J\\u001b]0;pwned\\u0007\\u009b31m', 'the version as escapes')
    t.same(unprintable(text.stdout.split('\n')), [], 'doctor’s terminal output holds no control character as it is')
    t.same(unprintable(json.stdout.split('\n')), [], 'nor its JSON output')
    t.same(unprintable(text.stderr.split('\n')), [], 'nor its progress output')
    t.notOk(existsSync(kubectlLog), 'kubectl still never run')
  })

  await finishSuite(t, w, 'humans')
})
