/**
 * The SecretProviderClass parameters: the one list the Mount's parser (parse-request.ts), the
 * linter (lint/spc-lint.ts) and the docs test read. A parameter not listed here is not read by
 * anything; listing one here without reading it in parse-request.ts fails its unit test.
 */

/** Names (role, audience, namespace, auth mount, TLS server name): Vault and Kubernetes names are far shorter. */
export const MAX_NAME_PARAMETER_CHARS = 256
export const MAX_ADDRESS_PARAMETER_CHARS = 2048
/** File paths: PATH_MAX. */
export const MAX_PATH_PARAMETER_CHARS = 4096

/** What a parameter holds, which sets its length limit. */
export type ParameterKind = 'name' | 'address' | 'path' | 'boolean' | 'objects' | 'pem'

/** How the parser refers to a parameter, whatever a SecretProviderClass calls it. */
export type ParameterKey =
  | 'roleName'
  | 'address'
  | 'namespace'
  | 'authMountPath'
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
  /** The names a SecretProviderClass may give it. */
  readonly names: readonly string[]
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

/** In the order the linter lists them and the parser checks their lengths. */
export const PARAMETERS: readonly ParameterSpec[] = [
  {
    key: 'roleName',
    names: ['roleName'],
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the Vault role the pod logs in with (required)',
  },
  {
    key: 'address',
    names: ['vaultAddress'],
    kind: 'address',
    maxChars: MAX_ADDRESS_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the Vault address, instead of the provider flag -vault-addr',
  },
  {
    key: 'namespace',
    names: ['vaultNamespace'],
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the Vault namespace of the login and every read',
  },
  {
    key: 'authMountPath',
    names: ['vaultAuthMountPath'],
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the auth mount path (an alias of kubernetesMountPath; set one of them)',
  },
  {
    key: 'kubernetesMountPath',
    names: ['vaultKubernetesMountPath'],
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the auth mount path (an alias of authMountPath; set one of them)',
  },
  {
    key: 'audience',
    names: ['audience'],
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the audience of the pod token the provider logs in with',
  },
  {
    key: 'skipTlsVerify',
    names: ['vaultSkipTLSVerify'],
    kind: 'boolean',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: "do not verify Vault's certificate (Go's spellings of true and false)",
  },
  {
    key: 'caCertPath',
    names: ['vaultCACertPath'],
    kind: 'path',
    maxChars: MAX_PATH_PARAMETER_CHARS,
    legacy: false,
    meaning: 'a CA file inside the provider pod',
  },
  {
    key: 'caDirectory',
    names: ['vaultCADirectory'],
    kind: 'path',
    maxChars: MAX_PATH_PARAMETER_CHARS,
    legacy: false,
    meaning: 'a directory of CA files inside the provider pod',
  },
  {
    key: 'tlsServerName',
    names: ['vaultTLSServerName'],
    kind: 'name',
    maxChars: MAX_NAME_PARAMETER_CHARS,
    legacy: false,
    meaning: 'the TLS server name to send and verify',
  },
  {
    key: 'tlsClientCertPath',
    names: ['vaultTLSClientCertPath'],
    kind: 'path',
    maxChars: MAX_PATH_PARAMETER_CHARS,
    legacy: false,
    meaning: 'a client certificate file inside the provider pod (with the client key)',
  },
  {
    key: 'tlsClientKeyPath',
    names: ['vaultTLSClientKeyPath'],
    kind: 'path',
    maxChars: MAX_PATH_PARAMETER_CHARS,
    legacy: false,
    meaning: 'a client key file inside the provider pod (with the client certificate)',
  },
  {
    key: 'objects',
    names: ['objects'],
    kind: 'objects',
    maxChars: undefined,
    legacy: false,
    meaning: 'the YAML list of objects to mount (required)',
  },
  {
    key: 'kubernetesServiceAccountPath',
    names: ['kubernetesServiceAccountPath'],
    kind: 'path',
    maxChars: undefined,
    legacy: true,
    meaning: 'legacy: accepted and ignored',
  },
  {
    key: 'caPem',
    names: ['vaultCAPem'],
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

/** Every name a Mount reads (legacy ones aside), in the table's order. */
export function knownParameterNames(): string[] {
  return PARAMETERS.filter((p) => !p.legacy).flatMap((p) => p.names)
}

/** Names accepted and ignored. */
export function legacyParameterNames(): string[] {
  return PARAMETERS.filter((p) => p.legacy).flatMap((p) => p.names)
}

/** A parameter as a SecretProviderClass gives it: the name it used and the value. */
export interface GivenParameter {
  name: string
  value: string
}

/**
 * The parameter's value and the name it was given under: the first of its names whose value is
 * not empty (a volumeAttribute left blank means "not set"); undefined when none is.
 */
export function readParameter(attrs: ReadonlyMap<string, string>, key: ParameterKey): GivenParameter | undefined {
  for (const name of parameter(key).names) {
    const value = attrs.get(name)
    if (value !== undefined && value !== '') return { name, value }
  }
  return undefined
}
