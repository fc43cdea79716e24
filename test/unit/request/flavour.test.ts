// The OpenBao flavour of the Mount's parser: openbao-csi-provider 2.x's parameter names and their
// precedence (bao… before openbao… before vault…, roleName last), its default audience, the
// alias rule under any prefix, and errors that name the parameter the class used. The vault
// flavour, the default, is what every other test of parse-request.ts checks.
import t from 'tap'
import type { VaultDefaults } from '../../../src/config/config.js'
import { FLAVOURS, flavourOfProvider, type ProviderFlavour } from '../../../src/config/flavour.js'
import { ProviderError } from '../../../src/errors.js'
import { parameter, type ParameterKey } from '../../../src/request/parameters.js'
import { ATTR, parseMountRequest, parseVaultSettings } from '../../../src/request/parse-request.js'
import type { MountSpec } from '../../../src/request/types.js'
import { thrown } from '../../support/thrown.js'

const DEFAULTS: VaultDefaults = {
  address: 'https://bao.flag:8200',
  authMount: 'kubernetes',
  tls: { skipVerify: false },
}

const POD: Record<string, string> = {
  [ATTR.podName]: 'web',
  [ATTR.podNamespace]: 'shop',
  [ATTR.podUid]: '0b6a4c1e-2f43-4e0e-9d1b-7a1f5e2c9d10',
  [ATTR.serviceAccount]: 'web',
}
const OBJECTS = '- {objectName: pw, secretPath: secret/data/app, secretKey: pw}'

function mount(
  params: Record<string, string>,
  flavour: ProviderFlavour = 'openbao',
  defaults: VaultDefaults = DEFAULTS,
): MountSpec {
  const attributes = JSON.stringify({ ...POD, roleName: 'app', objects: OBJECTS, ...params })
  return parseMountRequest({ attributes, secrets: 'null', permission: '420' }, defaults, undefined, flavour)
}

/** The message of the BAD_PARAMETER error an openbao Mount of these parameters fails with. */
function refusal(params: Record<string, string>, defaults: VaultDefaults = DEFAULTS): string {
  const err = thrown(() => mount(params, 'openbao', defaults), ProviderError)
  return `${err.code}: ${err.message}`.replace(/^BAD_PARAMETER: /, '')
}

t.test('the flavours', async (t) => {
  t.equal(flavourOfProvider('vault'), 'vault')
  t.equal(flavourOfProvider('openbao'), 'openbao')
  t.equal(flavourOfProvider('azure'), undefined)
  t.equal(flavourOfProvider(undefined), undefined)
  t.same(
    [FLAVOURS.openbao.defaultAudience, FLAVOURS.openbao.defaultHmacSecretName, FLAVOURS.openbao.socketName],
    ['openbao', 'openbao-csi-provider-hmac-key', 'openbao.sock'],
  )
})

t.test('a class as openbao-csi-provider 2.x documents it', async (t) => {
  const spec = mount({
    roleName: 'app',
    baoAddress: 'https://openbao.openbao:8200',
    baoNamespace: 'team-a',
    baoAuthMountPath: 'jwt',
    baoCACertPath: '/bao/tls/ca.crt',
    baoTLSClientCertPath: '/bao/tls/client.crt',
    baoTLSClientKeyPath: '/bao/tls/client.key',
    baoSkipTLSVerify: 'false',
  })
  t.equal(spec.roleName, 'app')
  t.equal(spec.vault.address, 'https://openbao.openbao:8200')
  t.equal(spec.vault.namespace, 'team-a')
  t.equal(spec.authMount, 'jwt')
  t.equal(spec.audience, 'openbao', "the default audience is OpenBao's")
  t.strictSame(spec.vault.tls, {
    caCertPath: '/bao/tls/ca.crt',
    caDirectory: undefined,
    serverName: undefined,
    clientCertPath: '/bao/tls/client.crt',
    clientKeyPath: '/bao/tls/client.key',
    skipVerify: false,
  })
  t.equal(mount({ audience: 'custom' }).audience, 'custom')
  t.equal(mount({}, 'vault').audience, 'vault', 'the vault flavour keeps its default')
})

/** Parameters whose value a Mount shows as it was given. */
const SHOWN: Array<[ParameterKey, (s: MountSpec) => unknown]> = [
  ['roleName', (s) => s.roleName],
  ['address', (s) => s.vault.address],
  ['namespace', (s) => s.vault.namespace],
  ['authMountPath', (s) => s.authMount],
  ['kubernetesMountPath', (s) => s.authMount],
  ['caCertPath', (s) => s.vault.tls.caCertPath],
  ['caDirectory', (s) => s.vault.tls.caDirectory],
  ['tlsServerName', (s) => s.vault.tls.serverName],
]

t.test('precedence: bao… before openbao… before vault… (roleName last), as the reference reads them', async (t) => {
  t.same(parameter('address').names.openbao, ['baoAddress', 'openbaoAddress', 'vaultAddress'])
  t.same(parameter('roleName').names.openbao, ['baoRoleName', 'openbaoRoleName', 'vaultRoleName', 'roleName'])
  for (const [key, read] of SHOWN) {
    const names = parameter(key).names.openbao
    t.ok(names.length >= 3, key)
    // Every name set, each to a value of its own (valid for any of these parameters); drop the winner
    // in turn: the next name wins.
    const values = names.map((_, i) => (key === 'address' ? `https://n${i}.example:8200` : `n${i}`))
    for (let first = 0; first < names.length; first++) {
      const params: Record<string, string> = {}
      names.forEach((name, i) => {
        if (i >= first) params[name] = values[i]!
      })
      t.equal(
        read(mount(params)),
        values[first],
        `${key}: ${names[first]} wins over ${names.slice(first + 1).join(', ')}`,
      )
    }
  }
  // An empty value counts as unset, as it does for the vault flavour (a volumeAttribute left blank).
  t.equal(mount({ baoAddress: '', vaultAddress: 'https://v.example:8200' }).vault.address, 'https://v.example:8200')
  t.equal(mount({ baoSkipTLSVerify: 'true', vaultSkipTLSVerify: 'false' }).vault.tls.skipVerify, true)
})

t.test('auth mount and Kubernetes mount path together are an error under any prefixes', async (t) => {
  t.equal(
    refusal({ baoAuthMountPath: 'jwt', vaultKubernetesMountPath: 'kubernetes' }),
    'set only one of parameters "baoAuthMountPath" and "vaultKubernetesMountPath" (they are aliases)',
  )
  t.equal(
    refusal({ openbaoKubernetesMountPath: 'k', openbaoAuthMountPath: 'k' }),
    'set only one of parameters "openbaoAuthMountPath" and "openbaoKubernetesMountPath" (they are aliases)',
  )
  t.equal(mount({ baoAuthMountPath: 'jwt', vaultAuthMountPath: 'k8s' }).authMount, 'jwt', 'one parameter, two prefixes')
})

t.test('errors name the parameter the class used, and OpenBao’s flags', async (t) => {
  t.equal(refusal({ baoSkipTLSVerify: 'yes' }), 'parameter "baoSkipTLSVerify" must be true or false, got "yes"')
  t.match(refusal({ openbaoAddress: 'vault:8200' }), /^parameter "openbaoAddress" "vault:8200" must start with/)
  t.equal(
    refusal({ baoTLSClientCertPath: '/c.pem' }),
    'parameters "baoTLSClientCertPath" and "baoTLSClientKeyPath" go together: set both or neither',
  )
  t.equal(
    refusal({ vaultTLSClientKeyPath: '/k.pem' }),
    'parameters "baoTLSClientCertPath" and "vaultTLSClientKeyPath" go together: set both or neither',
  )
  t.match(refusal({ openbaoKubernetesMountPath: '../x' }), /^openbaoKubernetesMountPath "\.\.\/x" is not a valid/)
  t.match(refusal({}, { ...DEFAULTS, authMount: 'a/../b' }), /^-openbao-mount "a\/\.\.\/b" is not a valid/)
  t.equal(
    refusal({}, { ...DEFAULTS, address: undefined }),
    'no OpenBao address: set parameter "baoAddress" or the provider flag -openbao-addr / BAO_ADDR',
  )
  t.match(refusal({}, { ...DEFAULTS, address: 'bao:8200' }), /^OpenBao address "bao:8200"/)
  t.equal(refusal({ openbaoNamespace: 'n'.repeat(300) }), 'parameter "openbaoNamespace" is longer than 256 characters')
  const attributes = JSON.stringify({ ...POD, objects: OBJECTS })
  t.equal(
    thrown(
      () => parseMountRequest({ attributes, secrets: 'null', permission: '420' }, DEFAULTS, undefined, 'openbao'),
      ProviderError,
    ).message,
    'parameter "roleName" is required: the OpenBao role the pod logs in with',
  )
})

t.test('the error fields name the parameter as the class spelt it', async (t) => {
  const parameterOf = (params: Record<string, string>): string | undefined =>
    thrown(() => mount(params), ProviderError).fields.parameter
  t.equal(parameterOf({ baoAddress: 'vault:8200', vaultAddress: 'https://v.example:8200' }), 'baoAddress')
  t.equal(parameterOf({ openbaoNamespace: 'team a' }), 'openbaoNamespace')
  t.equal(parameterOf({ vaultSkipTLSVerify: 'yes' }), 'vaultSkipTLSVerify')
  t.equal(parameterOf({ openbaoAuthNamespace: 'n'.repeat(300) }), 'openbaoAuthNamespace')
  t.equal(parameterOf({ baoTLSClientCertPath: '/c.pem' }), 'baoTLSClientCertPath')
  t.equal(
    thrown(() => mount({}, 'openbao', { ...DEFAULTS, address: undefined }), ProviderError).fields.parameter,
    'baoAddress',
    'the name to set, when none is',
  )
  t.equal(
    thrown(() => mount({}, 'openbao', { ...DEFAULTS, authMount: 'a/../b' }), ProviderError).fields.parameter,
    undefined,
    "a flag's value is no parameter's fault",
  )
  t.equal(
    thrown(() => parseVaultSettings({ baoNamespace: 'team a' }, DEFAULTS, 'openbao'), ProviderError).fields.parameter,
    'baoNamespace',
  )
})

t.test('parseVaultSettings takes the flavour too', async (t) => {
  const settings = parseVaultSettings({ baoRoleName: 'r', baoAddress: 'https://b.example:8200' }, DEFAULTS, 'openbao')
  t.same(settings, {
    vault: { address: 'https://b.example:8200', namespace: undefined, tls: { skipVerify: false } },
    authMount: 'kubernetes',
    audience: 'openbao',
    roleName: 'r',
  })
  const asVault = parseVaultSettings({ baoRoleName: 'r', baoAddress: 'https://b.example:8200' }, DEFAULTS)
  t.equal(asVault.vault.address, 'https://bao.flag:8200', 'the vault flavour reads no bao… name')
  t.equal(asVault.roleName, undefined)
  t.equal(asVault.audience, 'vault')
})
