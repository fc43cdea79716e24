/**
 * MountRequest (attributes, secrets, permission) -> MountSpec. Pure.
 *
 * Every attribute is pod-controlled input: the driver copies the pod's
 * volumeAttributes over the SecretProviderClass parameters. Only kubelet's
 * `csi.storage.k8s.io/*` keys are trustworthy, and only because kubelet
 * writes them last.
 */
import { parseBool, type VaultDefaults, type VaultTlsConfig } from '../config/config.js'
import { envAsIn, flagAsIn } from '../config/flags.js'
import { DEFAULT_FLAVOUR, FLAVOURS, type ProviderFlavour } from '../config/flavour.js'
import {
  namespaceProblem,
  normaliseAuthMount,
  normaliseVaultAddress,
  serverNameProblem,
} from '../config/vault-address.js'
import { ProviderError, q } from '../errors.js'
import { parseObjects } from './objects.js'
import { MAX_NAME_PARAMETER_CHARS, PARAMETERS, parameter, readParameter, type ParameterKey } from './parameters.js'
import type { MountSpec, PodIdentity, PodToken, SecretObject, VaultConnection } from './types.js'

export { MAX_ADDRESS_PARAMETER_CHARS, MAX_NAME_PARAMETER_CHARS, MAX_PATH_PARAMETER_CHARS } from './parameters.js'

/** The vault flavour's default audience (each flavour's is FLAVOURS[flavour].defaultAudience). */
export const DEFAULT_AUDIENCE = FLAVOURS.vault.defaultAudience
export const DEFAULT_FILE_MODE = 0o644
export const MAX_ATTRIBUTES_BYTES = 1024 * 1024
export const MAX_ATTRIBUTE_COUNT = 512

export const ATTR = {
  podName: 'csi.storage.k8s.io/pod.name',
  podNamespace: 'csi.storage.k8s.io/pod.namespace',
  podUid: 'csi.storage.k8s.io/pod.uid',
  serviceAccount: 'csi.storage.k8s.io/serviceAccount.name',
  tokens: 'csi.storage.k8s.io/serviceAccount.tokens',
  secretProviderClass: 'secretProviderClass',
} as const

/** Attributes the driver and kubelet write (Kubernetes names are at most 253 characters). */
const IDENTITY_ATTRIBUTES = [
  ATTR.podName,
  ATTR.podNamespace,
  ATTR.podUid,
  ATTR.serviceAccount,
  ATTR.secretProviderClass,
]

/** Every bounded attribute within its limit, before any of them is used or logged. */
function checkLengths(attrs: Map<string, string>, flavour: ProviderFlavour): void {
  for (const spec of PARAMETERS) {
    const max = spec.maxChars
    if (max === undefined) continue
    for (const name of spec.names[flavour]) {
      const value = attrs.get(name)
      if (value !== undefined && value.length > max) {
        throw new ProviderError('BAD_PARAMETER', `parameter ${q(name)} is longer than ${max} characters`)
      }
    }
  }
  for (const key of IDENTITY_ATTRIBUTES) {
    const value = attrs.get(key)
    if (value !== undefined && value.length > MAX_NAME_PARAMETER_CHARS) {
      throw new ProviderError(
        'BAD_REQUEST',
        `attribute ${q(key)} is longer than ${MAX_NAME_PARAMETER_CHARS} characters`,
      )
    }
  }
}

/** What a bare MountRequest carries, independent of gRPC. */
export interface RawMountRequest {
  attributes: string
  secrets: string
  permission: string
}

/** How errors name the pod-token attribute (made once: it is parsed on every Mount). */
const TOKENS_ATTRIBUTE = `attribute ${q(ATTR.tokens)}`

function parseJsonObject(text: string, what: string): Record<string, unknown> {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch {
    // JSON.parse's message may quote the input, which can hold credentials.
    throw new ProviderError('BAD_REQUEST', `${what} is not valid JSON`)
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new ProviderError('BAD_REQUEST', `${what} must be a JSON object`)
  }
  return data as Record<string, unknown>
}

function parseStringMap(text: string, what: string): Map<string, string> {
  const obj = parseJsonObject(text, what)
  const entries = Object.entries(obj)
  if (entries.length > MAX_ATTRIBUTE_COUNT) {
    throw new ProviderError(
      'BAD_REQUEST',
      `${what} has ${entries.length} keys; at most ${MAX_ATTRIBUTE_COUNT} are allowed`,
    )
  }
  const out = new Map<string, string>()
  for (const [key, value] of entries) {
    if (typeof value !== 'string') {
      throw new ProviderError('BAD_REQUEST', `${what}: the value of ${q(key)} must be a string`)
    }
    out.set(key, value)
  }
  return out
}

/** The driver sends `"null"` when the volume has no nodePublishSecretRef. */
export function parseSecrets(text: string): Map<string, string> {
  const trimmed = text.trim()
  if (trimmed === '' || trimmed === 'null') return new Map()
  if (Buffer.byteLength(text) > MAX_ATTRIBUTES_BYTES) {
    throw new ProviderError('BAD_REQUEST', `secrets are larger than ${MAX_ATTRIBUTES_BYTES} bytes`)
  }
  return parseStringMap(trimmed, 'secrets')
}

export function parsePermission(text: string): number {
  const trimmed = text.trim()
  if (trimmed === '') return DEFAULT_FILE_MODE
  let value: unknown
  try {
    value = JSON.parse(trimmed)
  } catch {
    value = undefined
  }
  if (typeof value === 'string' && /^\d+$/.test(value)) value = Number(value)
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 0o777) {
    throw new ProviderError(
      'BAD_REQUEST',
      `permission must be a decimal file mode from 0 to 511 (420 is 0644), got ${q(trimmed, 20)}`,
    )
  }
  return value
}

/** `{"<audience>": {"token": "…", "expirationTimestamp": "…"}}` from kubelet's tokenRequests. */
export function parsePodTokens(text: string): Map<string, PodToken> {
  const obj = parseJsonObject(text, TOKENS_ATTRIBUTE)
  const out = new Map<string, PodToken>()
  for (const [audience, entry] of Object.entries(obj)) {
    if (entry === null || typeof entry !== 'object') {
      throw new ProviderError('BAD_REQUEST', `${TOKENS_ATTRIBUTE}: entry for audience ${q(audience)} is not an object`)
    }
    const { token, expirationTimestamp } = entry as Record<string, unknown>
    if (typeof token !== 'string' || token === '') {
      throw new ProviderError('BAD_REQUEST', `${TOKENS_ATTRIBUTE}: entry for audience ${q(audience)} has no token`)
    }
    out.set(audience, {
      token,
      expirationTimestamp: typeof expirationTimestamp === 'string' ? expirationTimestamp : undefined,
    })
  }
  return out
}

function requireAttr(attrs: Map<string, string>, key: string, hint: string): string {
  const value = attrs.get(key)
  if (value === undefined || value === '') {
    throw new ProviderError('BAD_REQUEST', `attribute ${q(key)} is missing: ${hint}`)
  }
  return value
}

/**
 * Who a Mount is for. `pod`: the pod the driver names. `serviceaccount`: the namespace and service
 * account only, the pod's name and UID left empty (the Secrets Store Sync Controller passes its own
 * pod's, which say nothing about the SecretSync it asks for).
 */
export type RequestIdentity = 'pod' | 'serviceaccount'

function parsePod(attrs: Map<string, string>, identity: RequestIdentity): PodIdentity {
  const hint =
    identity === 'pod'
      ? 'the driver passes it when its CSIDriver object has podInfoOnMount: true'
      : "the Secrets Store Sync Controller passes the SecretSync's namespace and service account"
  return {
    namespace: requireAttr(attrs, ATTR.podNamespace, hint),
    name: identity === 'pod' ? requireAttr(attrs, ATTR.podName, hint) : '',
    uid: identity === 'pod' ? requireAttr(attrs, ATTR.podUid, hint) : '',
    serviceAccount: requireAttr(attrs, ATTR.serviceAccount, hint),
  }
}

/** Accepts http(s):// and unix:// (a Vault Agent socket); returns it without a trailing slash. */
export function parseVaultAddress(raw: string, what: string): string {
  return normaliseVaultAddress(raw, what, (message) => new ProviderError('BAD_PARAMETER', message))
}

function parseAuthMount(attrs: ReadonlyMap<string, string>, fallback: string, flavour: ProviderFlavour): string {
  const a = readParameter(attrs, 'authMountPath', flavour)
  const b = readParameter(attrs, 'kubernetesMountPath', flavour)
  if (a !== undefined && b !== undefined) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `set only one of parameters ${q(a.name)} and ${q(b.name)} (they are aliases)`,
    )
  }
  const given = a ?? b
  const raw = given?.value ?? fallback
  const which = given?.name ?? flagAsIn('vault-mount', flavour)
  const mount = normaliseAuthMount(raw)
  if (mount === undefined) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `${which} ${q(raw)} is not a valid auth mount path (e.g. "kubernetes" or "jwt")`,
    )
  }
  return mount
}

/** The name an error gives a parameter: the one the class used, else the flavour's first name. */
function shownName(attrs: ReadonlyMap<string, string>, key: ParameterKey, flavour: ProviderFlavour): string {
  return readParameter(attrs, key, flavour)?.name ?? parameter(key).names[flavour][0]!
}

function parseTls(
  attrs: ReadonlyMap<string, string>,
  defaults: VaultTlsConfig,
  flavour: ProviderFlavour,
): VaultTlsConfig {
  const pick = (key: ParameterKey, fallback: string | undefined): string | undefined =>
    readParameter(attrs, key, flavour)?.value ?? fallback
  let skipVerify = defaults.skipVerify
  const skip = readParameter(attrs, 'skipTlsVerify', flavour)
  if (skip !== undefined) {
    try {
      skipVerify = parseBool(skip.value, `parameter ${q(skip.name)}`)
    } catch (err) {
      throw new ProviderError('BAD_PARAMETER', (err as Error).message)
    }
  }
  const tls: VaultTlsConfig = {
    caCertPath: pick('caCertPath', defaults.caCertPath),
    caDirectory: pick('caDirectory', defaults.caDirectory),
    serverName: pick('tlsServerName', defaults.serverName),
    clientCertPath: pick('tlsClientCertPath', defaults.clientCertPath),
    clientKeyPath: pick('tlsClientKeyPath', defaults.clientKeyPath),
    skipVerify,
  }
  const serverName = readParameter(attrs, 'tlsServerName', flavour)
  const serverNameIssue = serverName && serverNameProblem(serverName.value)
  if (serverName && serverNameIssue) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `parameter ${q(serverName.name)} ${q(serverName.value, 40)} ${serverNameIssue}`,
    )
  }
  if ((tls.clientCertPath === undefined) !== (tls.clientKeyPath === undefined)) {
    const cert = shownName(attrs, 'tlsClientCertPath', flavour)
    const key = shownName(attrs, 'tlsClientKeyPath', flavour)
    throw new ProviderError('BAD_PARAMETER', `parameters ${q(cert)} and ${q(key)} go together: set both or neither`)
  }
  return tls
}

/** The Mount's server address: the address parameter, else -vault-addr / VAULT_ADDR (or their OpenBao names). */
function parseAddress(attrs: ReadonlyMap<string, string>, defaults: VaultDefaults, flavour: ProviderFlavour): string {
  const given = readParameter(attrs, 'address', flavour)
  const addressRaw = given?.value ?? defaults.address
  const product = FLAVOURS[flavour].product
  if (addressRaw === undefined) {
    const name = parameter('address').names[flavour][0]!
    throw new ProviderError(
      'BAD_PARAMETER',
      `no ${product} address: set parameter ${q(name)} or the provider flag ${flagAsIn('vault-addr', flavour)} / ${envAsIn('vault-addr', flavour)}`,
    )
  }
  return parseVaultAddress(addressRaw, given ? `parameter ${q(given.name)}` : `${product} address`)
}

function parseNamespace(
  attrs: ReadonlyMap<string, string>,
  fallback: string | undefined,
  flavour: ProviderFlavour,
  key: 'namespace' | 'authNamespace' = 'namespace',
): string | undefined {
  const given = readParameter(attrs, key, flavour)
  if (given === undefined) return fallback
  const problem = namespaceProblem(given.value)
  if (problem !== undefined) {
    throw new ProviderError('BAD_PARAMETER', `parameter ${q(given.name)} ${q(given.value, 40)} ${problem}`)
  }
  return given.value
}

function parseAudience(attrs: ReadonlyMap<string, string>, flavour: ProviderFlavour): string {
  return readParameter(attrs, 'audience', flavour)?.value ?? FLAVOURS[flavour].defaultAudience
}

/** The Mount's connection: its address, the namespaces of its reads and of its login, and its TLS settings. */
function parseConnection(
  attrs: ReadonlyMap<string, string>,
  address: string,
  defaults: VaultDefaults,
  flavour: ProviderFlavour,
): VaultConnection {
  const namespace = parseNamespace(attrs, defaults.namespace, flavour)
  const authNamespace = parseNamespace(attrs, defaults.authNamespace, flavour, 'authNamespace')
  return {
    address,
    namespace,
    // Only when it differs: a login in the reads' namespace is the connection as it always was.
    ...(authNamespace === undefined || authNamespace === (namespace ?? '') ? {} : { authNamespace }),
    tls: parseTls(attrs, defaults.tls, flavour),
  }
}

/** Where and how a Mount logs in to Vault, as a SecretProviderClass and the provider's flags say. */
export interface VaultSettings {
  vault: VaultConnection
  authMount: string
  audience: string
  /** undefined when the parameters name none (a Mount requires one). */
  roleName?: string
}

/**
 * The Vault connection, auth mount, audience and role a Mount with these
 * SecretProviderClass `parameters` would use: the same functions, defaults
 * and errors as parseMountRequest (for `doctor`, which checks what a Mount
 * would meet). Throws a BAD_PARAMETER ProviderError for a bad parameter.
 * `flavour`: whose parameter names and defaults apply (the class's provider).
 */
export function parseVaultSettings(
  parameters: Readonly<Record<string, string>>,
  defaults: VaultDefaults,
  flavour: ProviderFlavour = DEFAULT_FLAVOUR,
): VaultSettings {
  const attrs: ReadonlyMap<string, string> = new Map(Object.entries(parameters))
  const address = parseAddress(attrs, defaults, flavour)
  return {
    vault: parseConnection(attrs, address, defaults, flavour),
    authMount: parseAuthMount(attrs, defaults.authMount, flavour),
    audience: parseAudience(attrs, flavour),
    roleName: readParameter(attrs, 'roleName', flavour)?.value,
  }
}

/** Turns the `objects` text into objects: parseObjects, or a cache in front of it (request/objects-cache.ts). */
export type ObjectsParser = (text: string, tenant: string) => SecretObject[]

/**
 * `parseObjectsText` is injected by the composition root (a byte-bounded cache
 * owned by the MountService); without it every call parses with the default
 * -max-objects-size. `flavour`: whose parameter names and defaults apply, that
 * is which reference provider the socket the driver called stands for. `identity`: see RequestIdentity.
 */
export function parseMountRequest(
  raw: RawMountRequest,
  defaults: VaultDefaults,
  parseObjectsText: ObjectsParser = (text) => parseObjects(text),
  flavour: ProviderFlavour = DEFAULT_FLAVOUR,
  identity: RequestIdentity = 'pod',
): MountSpec {
  if (Buffer.byteLength(raw.attributes) > MAX_ATTRIBUTES_BYTES) {
    throw new ProviderError('BAD_REQUEST', `attributes are larger than ${MAX_ATTRIBUTES_BYTES} bytes`)
  }
  const attrs = parseStringMap(raw.attributes, 'attributes')
  const secrets = parseSecrets(raw.secrets)
  const defaultMode = parsePermission(raw.permission)
  checkLengths(attrs, flavour)

  // Every flavour accepts the plain name `roleName`: the one the message suggests.
  const roleName = readParameter(attrs, 'roleName', flavour)?.value
  if (roleName === undefined) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `parameter "roleName" is required: the ${FLAVOURS[flavour].product} role the pod logs in with`,
    )
  }

  const address = parseAddress(attrs, defaults, flavour)

  const objectsText = readParameter(attrs, 'objects', flavour)?.value
  if (objectsText === undefined || objectsText.trim() === '') {
    throw new ProviderError('BAD_PARAMETER', 'parameter "objects" is missing: list the secrets to mount')
  }
  const objects = parseObjectsText(objectsText, attrs.get(ATTR.podNamespace) ?? '')

  // Since Kubernetes 1.35 the tokens may travel in the secrets field instead.
  const tokensText = attrs.get(ATTR.tokens) || secrets.get(ATTR.tokens)
  const podTokens = tokensText === undefined || tokensText === '' ? undefined : parsePodTokens(tokensText)

  return {
    pod: parsePod(attrs, identity),
    secretProviderClass: attrs.get(ATTR.secretProviderClass) ?? '',
    roleName,
    authMount: parseAuthMount(attrs, defaults.authMount, flavour),
    audience: parseAudience(attrs, flavour),
    vault: parseConnection(attrs, address, defaults, flavour),
    objects,
    defaultMode,
    podTokens,
  }
}
