// doctor reads a SecretProviderClass through the Mount's own parser: what it
// checks is what a Mount with that SecretProviderClass would use. (Before, it
// merged parameters its own way: it ignored the TLS client certificate and
// took only the exact text "true" for vaultSkipTLSVerify.)
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { doctorTarget, runDoctor, type DoctorTarget } from '../../../../src/cli/doctor/doctor.js'
import { buildAttributes, readSecretProviderClass } from '../../../../src/cli/spc.js'
import { loadConfig } from '../../../../src/config/config.js'
import { parseMountRequest } from '../../../../src/request/parse-request.js'
import { tempDirFor } from '../../../support/tmp.js'

async function spcFile(t: Parameters<typeof tempDirFor>[0], parameters: string, provider = 'vault'): Promise<string> {
  const dir = await tempDirFor(t, 'vcp-doctor-unit-')
  const file = join(dir, 'spc.yaml')
  await writeFile(
    file,
    'apiVersion: secrets-store.csi.x-k8s.io/v1\nkind: SecretProviderClass\n' +
      `metadata: {name: app, namespace: shop}\nspec:\n  provider: ${provider}\n  parameters:\n${parameters}`,
  )
  return file
}

function ok(target: DoctorTarget): Extract<DoctorTarget, { kind: 'ok' }>['settings'] {
  if (target.kind !== 'ok') throw new Error(`expected settings, got ${JSON.stringify(target)}`)
  return target.settings
}

const OBJECTS = '    objects: |\n      - {objectName: a, secretPath: secret/data/a, secretKey: k}\n'

t.test('the same Vault connection, auth mount and audience as a Mount of that SecretProviderClass', async (t) => {
  const file = await spcFile(
    t,
    '    vaultAddress: https://Vault.Example:443/\n' +
      '    roleName: web\n' +
      '    vaultKubernetesMountPath: /k8s-east/\n' +
      '    vaultNamespace: team-a\n' +
      '    audience: vault-east\n' +
      '    vaultCACertPath: /tls/ca.pem\n' +
      '    vaultTLSServerName: vault.internal\n' +
      '    vaultTLSClientCertPath: /tls/client.pem\n' +
      '    vaultTLSClientKeyPath: /tls/client-key.pem\n' +
      '    vaultSkipTLSVerify: "True"\n' +
      OBJECTS,
  )
  const spc = await readSecretProviderClass(file)
  const config = loadConfig(['-vault-tls-ca-directory=/etc/cas'], {})
  const settings = ok(doctorTarget(spc.parameters, config.vault, {}))
  const mount = parseMountRequest(
    {
      attributes: JSON.stringify(
        buildAttributes(spc, { namespace: 'shop', name: 'p', serviceAccount: 'sa' }, undefined),
      ),
      secrets: 'null',
      permission: '420',
    },
    config.vault,
  )
  t.strictSame(settings.vault, mount.vault, 'the Mount’s VaultConnection')
  t.equal(settings.authMount, mount.authMount)
  t.equal(settings.audience, mount.audience)
  t.equal(settings.roleName, mount.roleName)
  // What the old merge got wrong, spelled out.
  t.equal(settings.vault.tls.clientCertPath, '/tls/client.pem', 'the TLS client certificate is honoured')
  t.equal(settings.vault.tls.clientKeyPath, '/tls/client-key.pem')
  t.equal(settings.vault.tls.skipVerify, true, 'vaultSkipTLSVerify "True" reads as a Mount reads it')
  t.equal(settings.vault.tls.caDirectory, '/etc/cas', 'flags fill what the SPC leaves out')
  t.equal(settings.vault.address, 'https://vault.example', 'normalised as a Mount normalises it')
})

t.test('vaultSkipTLSVerify: every spelling a Mount takes, and a bad one is an error', async (t) => {
  const flags = loadConfig(['-vault-addr=https://v:8200', '-vault-tls-skip-verify'], {}).vault
  for (const [value, expected] of [
    ['1', true],
    ['t', true],
    ['TRUE', true],
    ['0', false],
    ['False', false],
    ['', true], // empty: the flag's value stands
  ] as const) {
    t.equal(ok(doctorTarget({ vaultSkipTLSVerify: value }, flags, {})).vault.tls.skipVerify, expected, value)
  }
  t.strictSame(doctorTarget({ vaultSkipTLSVerify: 'yes' }, flags, {}), {
    kind: 'bad',
    message: 'parameter "vaultSkipTLSVerify" must be true or false, got "yes"',
  })
})

t.test('a client certificate without its key is the Mount’s error', async (t) => {
  const target = doctorTarget(
    { vaultAddress: 'https://v:8200', vaultTLSClientCertPath: '/tls/c.pem' },
    loadConfig([], {}).vault,
    {},
  )
  t.equal(target.kind, 'bad')
  t.match(target, { message: /"vaultTLSClientCertPath" and "vaultTLSClientKeyPath" go together/ })
})

t.test('no address anywhere; a bad address; --role and --audience take the place of the SPC’s', async (t) => {
  const none = loadConfig([], {}).vault
  t.strictSame(doctorTarget({}, none, {}), { kind: 'no-address' })
  t.match(doctorTarget({ vaultAddress: 'vault:8200' }, none, {}), {
    kind: 'bad',
    message: /^parameter "vaultAddress" "vault:8200" must start with https:\/\//,
  })
  const given = ok(
    doctorTarget({ vaultAddress: 'https://v', roleName: 'spc-role', audience: 'a' }, none, {
      role: 'r',
      audience: 'b',
    }),
  )
  t.equal(given.roleName, 'r')
  t.equal(given.audience, 'b')
  const fromSpc = ok(doctorTarget({ vaultAddress: 'https://v', roleName: 'spc-role' }, none, {}))
  t.equal(fromSpc.roleName, 'spc-role')
  t.equal(fromSpc.audience, 'vault')
  t.equal(fromSpc.authMount, 'kubernetes')
})

t.test('a provider: openbao class is read with OpenBao’s names and defaults', async (t) => {
  const none = loadConfig([], {}).vault
  const params = { baoAddress: 'https://bao.example:8200', roleName: 'r' }
  const openbao = ok(doctorTarget(params, none, {}, 'openbao'))
  t.equal(openbao.vault.address, 'https://bao.example:8200')
  t.equal(openbao.audience, 'openbao')
  t.strictSame(doctorTarget(params, none, {}), { kind: 'no-address' }, 'a vault class does not read baoAddress')
})

t.test('no address: doctor names the parameter and variable of the class’s flavour', async (t) => {
  // No address in the environment either (the test's own must not decide the outcome).
  for (const name of ['VAULT_ADDR', 'BAO_ADDR']) {
    const saved = process.env[name]
    delete process.env[name]
    t.teardown(() => {
      if (saved !== undefined) process.env[name] = saved
    })
  }
  const dir = await tempDirFor(t, 'vcp-doctor-unit-')
  const reachable = async (provider: string): Promise<string | undefined> => {
    const spc = await spcFile(t, `    roleName: web\n${OBJECTS}`, provider)
    const results = await runDoctor({
      socket: join(dir, 'none.sock'),
      spc,
      // A key file: no Kubernetes API is asked for the key or the RBAC.
      providerFlags: [`-hmac-key-file=${join(dir, 'hmac.key')}`],
    })
    return results.find((r) => r.id === 'vault.reachable')?.detail
  }
  t.equal(
    await reachable('openbao'),
    'no OpenBao address: pass --vault-addr, set BAO_ADDR, or --spc with baoAddress',
    'a provider: openbao class: baoAddress, never vaultAddress',
  )
  t.equal(
    await reachable('vault'),
    'no Vault address: pass --vault-addr, set VAULT_ADDR, or --spc with vaultAddress',
    'a provider: vault class: vaultAddress',
  )
})
