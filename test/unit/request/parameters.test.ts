// The parameter table is what the Mount's parser reads, for each flavour: every name of every
// entry changes what a Mount does (or, for legacy names, is accepted and changes nothing), every
// bounded one is refused past its limit under each of its names, and a name outside the table is
// ignored.
import t from 'tap'
import type { VaultDefaults } from '../../../src/config/config.js'
import { PROVIDER_FLAVOURS, type ProviderFlavour } from '../../../src/config/flavour.js'
import { ProviderError } from '../../../src/errors.js'
import {
  knownParameterNames,
  legacyParameterNames,
  PARAMETERS,
  type ParameterKey,
} from '../../../src/request/parameters.js'
import { ATTR, parseMountRequest } from '../../../src/request/parse-request.js'
import type { MountSpec } from '../../../src/request/types.js'
import { thrown } from '../../support/thrown.js'

const DEFAULTS: VaultDefaults = {
  address: 'https://vault.flag:8200',
  authMount: 'kubernetes',
  tls: { clientCertPath: '/flag/c.pem', clientKeyPath: '/flag/k.pem', skipVerify: false },
}

const BASE: Record<string, string> = {
  [ATTR.podName]: 'web',
  [ATTR.podNamespace]: 'shop',
  [ATTR.podUid]: '0b6a4c1e-2f43-4e0e-9d1b-7a1f5e2c9d10',
  [ATTR.serviceAccount]: 'web',
  roleName: 'base-role',
  objects: '- {objectName: base, secretPath: secret/data/base}',
}

function mount(extra: Record<string, string>, flavour: ProviderFlavour = 'vault'): MountSpec {
  return parseMountRequest(
    { attributes: JSON.stringify({ ...BASE, ...extra }), secrets: 'null', permission: '420' },
    DEFAULTS,
    undefined,
    flavour,
  )
}

/** For each key: a value to give it, where a Mount shows it, and what it shows (undefined: a legacy key). */
const EFFECTS: Record<ParameterKey, { value: string; read: (s: MountSpec) => unknown; expect: unknown } | undefined> = {
  roleName: { value: 'table-role', read: (s) => s.roleName, expect: 'table-role' },
  address: { value: 'https://table.example:8200', read: (s) => s.vault.address, expect: 'https://table.example:8200' },
  namespace: { value: 'table-ns', read: (s) => s.vault.namespace, expect: 'table-ns' },
  authNamespace: { value: 'table-auth-ns', read: (s) => s.vault.authNamespace, expect: 'table-auth-ns' },
  readConsistency: { value: 'eventual', read: (s) => s.readConsistency, expect: 'eventual' },
  authMountPath: { value: 'table-mount', read: (s) => s.authMount, expect: 'table-mount' },
  kubernetesMountPath: { value: 'table-mount', read: (s) => s.authMount, expect: 'table-mount' },
  audience: { value: 'table-audience', read: (s) => s.audience, expect: 'table-audience' },
  skipTlsVerify: { value: 'true', read: (s) => s.vault.tls.skipVerify, expect: true },
  caCertPath: { value: '/table/ca.pem', read: (s) => s.vault.tls.caCertPath, expect: '/table/ca.pem' },
  caDirectory: { value: '/table/cas', read: (s) => s.vault.tls.caDirectory, expect: '/table/cas' },
  tlsServerName: { value: 'table.vault', read: (s) => s.vault.tls.serverName, expect: 'table.vault' },
  tlsClientCertPath: { value: '/table/c.pem', read: (s) => s.vault.tls.clientCertPath, expect: '/table/c.pem' },
  tlsClientKeyPath: { value: '/table/k.pem', read: (s) => s.vault.tls.clientKeyPath, expect: '/table/k.pem' },
  objects: {
    value: '- {objectName: table, secretPath: secret/data/table}',
    read: (s) => s.objects.map((o) => o.objectName),
    expect: ['table'],
  },
  kubernetesServiceAccountPath: undefined,
  caPem: undefined,
}

t.test('every name of every parameter is read by a Mount of its flavour', async (t) => {
  const read = PARAMETERS.filter((p) => !p.legacy)
  t.same(
    PARAMETERS.filter((p) => EFFECTS[p.key] !== undefined).map((p) => p.key),
    read.map((p) => p.key),
    'the entries with an effect are the ones not legacy',
  )
  for (const flavour of PROVIDER_FLAVOURS) {
    for (const spec of read) {
      const effect = EFFECTS[spec.key]!
      for (const name of spec.names[flavour]) {
        t.same(
          effect.read(mount({ [name]: effect.value }, flavour)),
          effect.expect,
          `${flavour}: ${name} sets ${spec.key}`,
        )
      }
    }
  }
})

t.test('legacy parameters are accepted and ignored', async (t) => {
  const legacy = PARAMETERS.filter((p) => p.legacy)
  t.ok(legacy.length >= 2)
  for (const flavour of PROVIDER_FLAVOURS) {
    const base = mount({}, flavour)
    for (const spec of legacy) {
      for (const name of spec.names[flavour]) {
        t.same(mount({ [name]: '/var/run/secrets/anything' }, flavour), base, `${flavour}: ${name} ignored`)
      }
    }
  }
})

t.test('every bounded parameter is refused past its limit, under each of its names', async (t) => {
  const bounded = PARAMETERS.filter((p) => p.maxChars !== undefined)
  t.ok(bounded.length >= 12, `${bounded.length} bounded parameters`)
  for (const flavour of PROVIDER_FLAVOURS) {
    for (const spec of bounded) {
      for (const name of spec.names[flavour]) {
        const err = thrown(() => mount({ [name]: 'x'.repeat(spec.maxChars! + 1) }, flavour), ProviderError)
        t.equal(err.code, 'BAD_PARAMETER', name)
        t.equal(err.message, `parameter ${JSON.stringify(name)} is longer than ${spec.maxChars} characters`)
      }
    }
  }
})

t.test('a name outside the flavour’s table changes nothing', async (t) => {
  const outside: Record<ProviderFlavour, string[]> = {
    vault: ['vaultAdress', 'rolename', 'baoAddress', 'openbaoNamespace', 'vaultRoleName', 'namespace'],
    openbao: ['baoAdress', 'rolename', 'baoRolename', 'BaoAddress', 'namespace', 'openBaoNamespace'],
  }
  for (const flavour of PROVIDER_FLAVOURS) {
    const base = mount({}, flavour)
    const table = [...knownParameterNames(flavour), ...legacyParameterNames(flavour)]
    for (const name of outside[flavour]) {
      t.notOk(table.includes(name), `${flavour}: ${name} is not in the table`)
      t.same(mount({ [name]: 'https://other.example:8200' }, flavour), base, `${flavour}: ${name} is ignored`)
    }
  }
})

t.test('names are unique within a flavour', async (t) => {
  for (const flavour of PROVIDER_FLAVOURS) {
    const names = [...knownParameterNames(flavour), ...legacyParameterNames(flavour)]
    t.equal(new Set(names).size, names.length, flavour)
  }
})
