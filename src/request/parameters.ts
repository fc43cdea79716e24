/**
 * The SecretProviderClass parameters: the one list the Mount's parser (parse-request.ts), the
 * linter (lint/spc-lint.ts) and the docs test read. A parameter not listed here is not read by
 * anything; listing one here without reading it in parse-request.ts fails its unit test.
 *
 * Each flavour (config/flavour.ts) has its own names for a parameter, in precedence order:
 * vault-csi-provider's (`vaultAddress`) for `provider: vault`; openbao-csi-provider's for
 * `provider: openbao`, which tries the prefixes `bao`, `openbao` and `vault` in that order
 * (`baoAddress` before `openbaoAddress` before `vaultAddress`; for the role, `roleName` last).
 */
import { envAsIn, flagAsIn } from '../config/flags.js'
import { FLAVOURS, type ProviderFlavour } from '../config/flavour.js'
import { ProviderError, q } from '../errors.js'
import type { Issues } from './issues.js'

/** Names (role, audience, namespace, auth mount, TLS server name): Vault and Kubernetes names are far shorter. */
export const MAX_NAME_PARAMETER_CHARS = 256
export const MAX_ADDRESS_PARAMETER_CHARS = 2048
/** File paths: PATH_MAX. */
export const MAX_PATH_PARAMETER_CHARS = 4096

/** What a parameter holds, which sets its length limit. */
export type ParameterKind = 'name' | 'address' | 'path' | 'boolean' | 'choice' | 'objects' | 'pem'

/** How the parser refers to a parameter, whatever a SecretProviderClass calls it. */
export type ParameterKey =
  | 'roleName'
  | 'address'
  | 'namespace'
  | 'authNamespace'
  | 'authMountPath'
  | 'readConsistency'
  | 'kubernetesMountPath'
  | 'audience'
  | 'skipTlsVerify'
  | 'caCertPath'
  | 'caDirectory'
  | 'tlsServerName'
  | 'tlsClientCertPath'
  | 'tlsClientKeyPath'
  | 'objects'
  | 'kubernetesServiceAccountPath'
  | 'caPem'

export interface ParameterSpec {
  readonly key: ParameterKey
  /** The names a SecretProviderClass may give it, per flavour; when several are set, the first wins. */
  readonly names: Readonly<Record<ProviderFlavour, readonly string[]>>
  readonly kind: ParameterKind
  /**
   * Longest value accepted, in characters, checked before any parameter is used or logged (a
   * 200 KB roleName once reached a log line, Vault and a regular expression). undefined: bounded
   * elsewhere (`objects`: the -max-objects-size flag) or never read (legacy parameters).
   */
  readonly maxChars: number | undefined
  /** Accepted and ignored, as the reference provider does. */
  readonly legacy: boolean
  readonly meaning: string
}

/** A vault-csi-provider name `vault<Suffix>` and openbao-csi-provider's names for the same parameter. */
function prefixed(suffix: string): Record<ProviderFlavour, readonly string[]> {
  return { vault: [`vault${suffix}`], openbao: [`bao${suffix}`, `openbao${suffix}`, `vault${suffix}`] }
}

/** A name both reference providers use as it is. */
function plain(name: string): Record<ProviderFlavour, readonly string[]> {
  return { vault: [name], openbao: [name] }
}

/** In the order the linter lists them and the parser checks their lengths. */
export const PARAMETERS: readonly ParameterSpec[] = [
  {
    key: 'roleName',
    names: { vault: ['roleName'], openbao: ['baoRoleName', 'openbaoRoleName', 'vaultRoleName', 'roleName'] },
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the role the pod logs in with (required)',
  },
  {
    key: 'address',
    names: prefixed('Address'),
    kind: 'address',
    maxChars: MAX_ADDRESS_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the server address, instead of the provider flag -vault-addr',
  },
  {
    key: 'namespace',
    names: prefixed('Namespace'),
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the namespace of every read, and of the login unless the auth namespace is set',
  },
  {
    key: 'authNamespace',
    names: prefixed('AuthNamespace'),
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the namespace of the login, when it is not the namespace of the reads',
  },
  {
    key: 'readConsistency',
    names: prefixed('ReadConsistency'),
    kind: 'choice',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: '`strong` or `eventual`: whether a read may come from a standby, instead of -vault-read-consistency',
  },
  {
    key: 'authMountPath',
    names: prefixed('AuthMountPath'),
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the auth mount path (an alias of kubernetesMountPath; set one of them)',
  },
  {
    key: 'kubernetesMountPath',
    names: prefixed('KubernetesMountPath'),
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the auth mount path (an alias of authMountPath; set one of them)',
  },
  {
    key: 'audience',
    names: plain('audience'),
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the audience of the pod token the provider logs in with',
  },
  {
    key: 'skipTlsVerify',
    names: prefixed('SkipTLSVerify'),
    kind: 'boolean',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: "do not verify the server's certificate (Go's spellings of true and false)",
  },
  {
    key: 'caCertPath',
    names: prefixed('CACertPath'),
    kind: 'path',
    maxChars: MAX_PATH_PARAMETER_CHARS,
    legacy: false,
    meaning: 'a CA file inside the provider pod',
  },
  {
    key: 'caDirectory',
    names: prefixed('CADirectory'),
    kind: 'path',
    maxChars: MAX_PATH_PARAMETER_CHARS,
    legacy: false,
    meaning: 'a directory of CA files inside the provider pod',
  },
  {
    key: 'tlsServerName',
    names: prefixed('TLSServerName'),
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the TLS server name to send and verify',
  },
  {
    key: 'tlsClientCertPath',
    names: prefixed('TLSClientCertPath'),
    kind: 'path',
    maxChars: MAX_PATH_PARAMETER_CHARS,
    legacy: false,
    meaning: 'a client certificate file inside the provider pod (with the client key)',
  },
  {
    key: 'tlsClientKeyPath',
    names: prefixed('TLSClientKeyPath'),
    kind: 'path',
    maxChars: MAX_PATH_PARAMETER_CHARS,
    legacy: false,
    meaning: 'a client key file inside the provider pod (with the client certificate)',
  },
  {
    key: 'objects',
    names: plain('objects'),
    kind: 'objects',
    maxChars: undefined,
    legacy: false,
    meaning: 'the YAML list of objects to mount (required)',
  },
  {
    key: 'kubernetesServiceAccountPath',
    names: plain('kubernetesServiceAccountPath'),
    kind: 'path',
    maxChars: undefined,
    legacy: true,
    meaning: 'legacy: accepted and ignored',
  },
  {
    key: 'caPem',
    names: plain('vaultCAPem'),
    kind: 'pem',
    maxChars: undefined,
    legacy: true,
    meaning: 'legacy: accepted and ignored',
  },
]

const BY_KEY = new Map(PARAMETERS.map((p) => [p.key, p]))

/** The table's entry for a key. */
export function parameter(key: ParameterKey): ParameterSpec {
  const spec = BY_KEY.get(key)
  if (spec === undefined) throw new Error(`no parameter ${key} in PARAMETERS`)
  return spec
}

/** Every name a Mount of the flavour reads (legacy ones aside), in the table's order. */
export function knownParameterNames(flavour: ProviderFlavour = 'vault'): string[] {
  return PARAMETERS.filter((p) => !p.legacy).flatMap((p) => p.names[flavour])
}

/** Names accepted and ignored. */
export function legacyParameterNames(flavour: ProviderFlavour = 'vault'): string[] {
  return PARAMETERS.filter((p) => p.legacy).flatMap((p) => p.names[flavour])
}

/** A parameter as a SecretProviderClass gives it: the name it used and the value. */
export interface GivenParameter {
  name: string
  value: string
}

/**
 * The parameter's value and the name it was given under: the first of the flavour's names whose
 * value is not empty (a volumeAttribute left blank means "not set"); undefined when none is.
 */
export function readParameter(
  attrs: ReadonlyMap<string, string>,
  key: ParameterKey,
  flavour: ProviderFlavour = 'vault',
): GivenParameter | undefined {
  for (const name of parameter(key).names[flavour]) {
    const value = attrs.get(name)
    if (value !== undefined && value !== '') return { name, value }
  }
  return undefined
}

/**
 * A class's parameters, read once for its flavour where the request is read: the parser asks for
 * a parameter by key and never sees a flavour. Built by resolveParameters.
 */
export class ClassParameters {
  constructor(
    private readonly givenByKey: ReadonlyMap<ParameterKey, GivenParameter>,
    private readonly refusedKeys: ReadonlySet<ParameterKey>,
    private readonly flavour: ProviderFlavour,
  ) {}

  /** The parameter as the class gives it; undefined when unset (or refused). */
  given(key: ParameterKey): GivenParameter | undefined {
    return this.givenByKey.get(key)
  }

  value(key: ParameterKey): string | undefined {
    return this.givenByKey.get(key)?.value
  }

  /** The name messages and error fields give a parameter: the one the class used, else the flavour's first. */
  nameOf(key: ParameterKey): string {
    return this.givenByKey.get(key)?.name ?? parameter(key).names[this.flavour][0]!
  }

  /** Refused already (too long): it is not read, and nothing more is said of it. */
  refused(key: ParameterKey): boolean {
    return this.refusedKeys.has(key)
  }

  /** The server's name in messages (`Vault`, `OpenBao`). */
  get product(): string {
    return FLAVOURS[this.flavour].product
  }

  /** The audience of the pod token when the class sets none. */
  get defaultAudience(): string {
    return FLAVOURS[this.flavour].defaultAudience
  }

  /** Where the address comes from when the class sets none, as messages name it: `-vault-addr / VAULT_ADDR`. */
  get addressFlags(): string {
    return `${flagAsIn('vault-addr', this.flavour)} / ${envAsIn('vault-addr', this.flavour)}`
  }

  /** The flag of the auth mount path when the class sets none: `-vault-mount`. */
  get authMountFlag(): string {
    return flagAsIn('vault-mount', this.flavour)
  }
}

/**
 * The parameters of `attrs` under the flavour's names (readParameter for each key). With `issues`,
 * every bounded value is first checked against its limit, under each of its names, before any is
 * used or logged: one too long is kept as a problem and its parameter left unread.
 */
export function resolveParameters(
  attrs: ReadonlyMap<string, string>,
  flavour: ProviderFlavour,
  issues?: Issues,
): ClassParameters {
  const given = new Map<ParameterKey, GivenParameter>()
  const refused = new Set<ParameterKey>()
  for (const spec of PARAMETERS) {
    const max = spec.maxChars
    if (issues !== undefined && max !== undefined) {
      for (const name of spec.names[flavour]) {
        const value = attrs.get(name)
        if (value === undefined || value.length <= max) continue
        issues.add(
          new ProviderError('BAD_PARAMETER', `parameter ${q(name)} is longer than ${max} characters`, {
            parameter: name,
          }),
        )
        refused.add(spec.key)
      }
    }
    const found = refused.has(spec.key) ? undefined : readParameter(attrs, spec.key, flavour)
    if (found !== undefined) given.set(spec.key, found)
  }
  return new ClassParameters(given, refused, flavour)
}
