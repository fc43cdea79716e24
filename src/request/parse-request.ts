/**
 * MountRequest (attributes, secrets, permission) -> MountSpec. Pure.
 *
 * Every attribute is pod-controlled input: the driver copies the pod's
 * volumeAttributes over the SecretProviderClass parameters. Only kubelet's
 * `csi.storage.k8s.io/*` keys are trustworthy, and only because kubelet
 * writes them last.
 */
import {
  DEFAULT_READ_CONSISTENCY,
  parseBool,
  READ_CONSISTENCIES,
  type ReadConsistency,
  type VaultDefaults,
  type VaultTlsConfig,
} from '../config/config.js'
import { DEFAULT_FLAVOUR, FLAVOURS, type ProviderFlavour } from '../config/flavour.js'
import {
  namespaceProblem,
  normaliseAuthMount,
  normaliseVaultAddress,
  serverNameProblem,
} from '../config/vault-address.js'
import { ProviderError, q } from '../errors.js'
import { parseObjects } from './objects.js'
import { Issues } from './issues.js'
import { MAX_NAME_PARAMETER_CHARS, resolveParameters, type ClassParameters, type ParameterKey } from './parameters.js'
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

/** The driver's and kubelet's attributes within Kubernetes' limits, before any of them is used or logged. */
function checkIdentityLengths(attrs: ReadonlyMap<string, string>, issues: Issues): void {
  for (const key of IDENTITY_ATTRIBUTES) {
    const value = attrs.get(key)
    if (value !== undefined && value.length > MAX_NAME_PARAMETER_CHARS) {
      issues.add(
        new ProviderError('BAD_REQUEST', `attribute ${q(key)} is longer than ${MAX_NAME_PARAMETER_CHARS} characters`),
      )
    }
  }
}

/** A refused parameter: `name` is the one the class used, when the problem is one of its parameters. */
function badParameter(detail: string, name: string | undefined): ProviderError {
  return new ProviderError('BAD_PARAMETER', detail, name === undefined ? {} : { parameter: name })
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

function parseAttributes(text: string): Map<string, string> {
  if (Buffer.byteLength(text) > MAX_ATTRIBUTES_BYTES) {
    throw new ProviderError('BAD_REQUEST', `attributes are larger than ${MAX_ATTRIBUTES_BYTES} bytes`)
  }
  return parseStringMap(text, 'attributes')
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
export function parseVaultAddress(raw: string, what: string, parameter?: string): string {
  return normaliseVaultAddress(raw, what, (message) => badParameter(message, parameter))
}

// Each check below throws its problem; parseMountRequest and parseVaultSettings run them in turn.

/** Every flavour accepts the plain name `roleName`: the one the message suggests. */
function parseRoleName(params: ClassParameters): string | undefined {
  const roleName = params.value('roleName')
  if (roleName === undefined && !params.refused('roleName')) {
    throw badParameter(
      `parameter "roleName" is required: the ${params.product} role the pod logs in with`,
      params.nameOf('roleName'),
    )
  }
  return roleName
}

function parseAuthMount(params: ClassParameters, fallback: string): string {
  const a = params.given('authMountPath')
  const b = params.given('kubernetesMountPath')
  if (a !== undefined && b !== undefined) {
    throw badParameter(`set only one of parameters ${q(a.name)} and ${q(b.name)} (they are aliases)`, a.name)
  }
  const given = a ?? b
  const raw = given?.value ?? fallback
  const mount = normaliseAuthMount(raw)
  if (mount === undefined) {
    throw badParameter(
      `${given?.name ?? params.authMountFlag} ${q(raw)} is not a valid auth mount path (e.g. "kubernetes" or "jwt")`,
      given?.name,
    )
  }
  return mount
}

function parseSkipVerify(params: ClassParameters, fallback: boolean): boolean {
  const skip = params.given('skipTlsVerify')
  if (skip === undefined) return fallback
  try {
    return parseBool(skip.value, `parameter ${q(skip.name)}`)
  } catch (err) {
    throw badParameter((err as Error).message, skip.name)
  }
}

function checkServerName(params: ClassParameters): void {
  const serverName = params.given('tlsServerName')
  const problem = serverName && serverNameProblem(serverName.value)
  if (serverName && problem) {
    throw badParameter(`parameter ${q(serverName.name)} ${q(serverName.value, 40)} ${problem}`, serverName.name)
  }
}

function checkClientPair(params: ClassParameters, tls: VaultTlsConfig): void {
  if ((tls.clientCertPath === undefined) === (tls.clientKeyPath === undefined)) return
  // One of the two refused for its length: said already.
  if (params.refused('tlsClientCertPath') || params.refused('tlsClientKeyPath')) return
  const cert = params.nameOf('tlsClientCertPath')
  const key = params.nameOf('tlsClientKeyPath')
  throw badParameter(
    `parameters ${q(cert)} and ${q(key)} go together: set both or neither`,
    params.given('tlsClientCertPath')?.name ?? params.given('tlsClientKeyPath')?.name,
  )
}

function parseTls(params: ClassParameters, defaults: VaultTlsConfig, issues: Issues): VaultTlsConfig {
  const pick = (key: ParameterKey, fallback: string | undefined): string | undefined => params.value(key) ?? fallback
  const skipVerify = issues.attempt(() => parseSkipVerify(params, defaults.skipVerify)) ?? defaults.skipVerify
  const tls: VaultTlsConfig = {
    caCertPath: pick('caCertPath', defaults.caCertPath),
    caDirectory: pick('caDirectory', defaults.caDirectory),
    serverName: pick('tlsServerName', defaults.serverName),
    clientCertPath: pick('tlsClientCertPath', defaults.clientCertPath),
    clientKeyPath: pick('tlsClientKeyPath', defaults.clientKeyPath),
    skipVerify,
  }
  issues.attempt(() => checkServerName(params))
  issues.attempt(() => checkClientPair(params, tls))
  return tls
}

/**
 * The Mount's server address: the address parameter, else -vault-addr / VAULT_ADDR (or their
 * OpenBao names); undefined when the parameter was refused for its length.
 */
function parseAddress(params: ClassParameters, defaults: VaultDefaults): string | undefined {
  if (params.refused('address')) return undefined
  const given = params.given('address')
  const addressRaw = given?.value ?? defaults.address
  if (addressRaw === undefined) {
    const name = params.nameOf('address')
    throw badParameter(
      `no ${params.product} address: set parameter ${q(name)} or the provider flag ${params.addressFlags}`,
      name,
    )
  }
  return given
    ? parseVaultAddress(addressRaw, `parameter ${q(given.name)}`, given.name)
    : parseVaultAddress(addressRaw, `${params.product} address`)
}

function parseNamespace(
  params: ClassParameters,
  fallback: string | undefined,
  key: 'namespace' | 'authNamespace',
): string | undefined {
  const given = params.given(key)
  if (given === undefined) return fallback
  const problem = namespaceProblem(given.value)
  if (problem !== undefined) {
    throw badParameter(`parameter ${q(given.name)} ${q(given.value, 40)} ${problem}`, given.name)
  }
  return given.value
}

/** Whether the Mount's reads may come from a standby: the class's parameter, else -vault-read-consistency. */
function parseReadConsistency(params: ClassParameters, defaults: VaultDefaults): ReadConsistency {
  const given = params.given('readConsistency')
  if (given === undefined) return defaults.readConsistency ?? DEFAULT_READ_CONSISTENCY
  if (!(READ_CONSISTENCIES as readonly string[]).includes(given.value)) {
    throw badParameter(
      `parameter ${q(given.name)} ${q(given.value, 40)} must be ${READ_CONSISTENCIES.join(' or ')}`,
      given.name,
    )
  }
  return given.value as ReadConsistency
}

/** The Mount's connection but its address: the namespaces of its reads and of its login, and its TLS settings. */
function parseConnection(
  params: ClassParameters,
  defaults: VaultDefaults,
  issues: Issues,
): Omit<VaultConnection, 'address'> {
  const namespace = issues.attempt(() => parseNamespace(params, defaults.namespace, 'namespace'))
  const authNamespace = issues.attempt(() => parseNamespace(params, defaults.authNamespace, 'authNamespace'))
  return {
    namespace,
    // Only when it differs: a login in the reads' namespace is the connection as it always was.
    ...(authNamespace === undefined || authNamespace === (namespace ?? '') ? {} : { authNamespace }),
    tls: parseTls(params, defaults.tls, issues),
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
  const params = resolveParameters(new Map(Object.entries(parameters)), flavour)
  const issues = new Issues()
  const address = issues.attempt(() => parseAddress(params, defaults))
  const connection = parseConnection(params, defaults, issues)
  const authMount = issues.attempt(() => parseAuthMount(params, defaults.authMount))
  issues.throwFirst()
  return {
    vault: { address: address!, ...connection },
    authMount: authMount!,
    audience: params.value('audience') ?? params.defaultAudience,
    roleName: params.value('roleName'),
  }
}

/** Turns the `objects` text into objects: parseObjects, or a cache in front of it (request/objects-cache.ts). */
export type ObjectsParser = (text: string, tenant: string) => SecretObject[]

function parseObjectsParameter(
  params: ClassParameters,
  parseObjectsText: ObjectsParser,
  tenant: string,
): SecretObject[] {
  const text = params.value('objects')
  if (text === undefined || text.trim() === '') {
    throw badParameter('parameter "objects" is missing: list the secrets to mount', params.nameOf('objects'))
  }
  return parseObjectsText(text, tenant)
}

/** Every problem of a MountRequest, and its MountSpec when there is none. */
export interface CollectedMountRequest {
  spec?: MountSpec
  /** The server address the Mount would use, when it is valid (lint checks it against the allowlist). */
  address?: string
  /** In the order the checks run: a Mount fails with the first. */
  issues: ProviderError[]
}

/**
 * Every check of a Mount on `raw`, each problem kept (at most MAX_ISSUES): only a request whose
 * attributes cannot be read at all stops at once. The arguments are parseMountRequest's.
 */
export function collectMountRequest(
  raw: RawMountRequest,
  defaults: VaultDefaults,
  parseObjectsText: ObjectsParser = (text) => parseObjects(text),
  flavour: ProviderFlavour = DEFAULT_FLAVOUR,
  identity: RequestIdentity = 'pod',
): CollectedMountRequest {
  const issues = new Issues()
  const attrs = issues.attempt(() => parseAttributes(raw.attributes))
  if (attrs === undefined) return { issues: issues.list() }
  const secrets = issues.attempt(() => parseSecrets(raw.secrets))
  const defaultMode = issues.attempt(() => parsePermission(raw.permission))
  const params = resolveParameters(attrs, flavour, issues)
  checkIdentityLengths(attrs, issues)

  const roleName = issues.attempt(() => parseRoleName(params))
  const address = issues.attempt(() => parseAddress(params, defaults))
  const objects = issues.attempt(() =>
    parseObjectsParameter(params, parseObjectsText, attrs.get(ATTR.podNamespace) ?? ''),
  )
  // Since Kubernetes 1.35 the tokens may travel in the secrets field instead.
  const tokensText = attrs.get(ATTR.tokens) || secrets?.get(ATTR.tokens)
  const podTokens =
    tokensText === undefined || tokensText === '' ? undefined : issues.attempt(() => parsePodTokens(tokensText))
  const pod = issues.attempt(() => parsePod(attrs, identity))
  const authMount = issues.attempt(() => parseAuthMount(params, defaults.authMount))
  const connection = parseConnection(params, defaults, issues)
  const readConsistency = issues.attempt(() => parseReadConsistency(params, defaults))

  if (!issues.none) return { address, issues: issues.list() }
  return {
    spec: {
      pod: pod!,
      secretProviderClass: attrs.get(ATTR.secretProviderClass) ?? '',
      roleName: roleName!,
      authMount: authMount!,
      audience: params.value('audience') ?? params.defaultAudience,
      vault: { address: address!, ...connection },
      readConsistency: readConsistency!,
      objects: objects!,
      defaultMode: defaultMode!,
      podTokens,
    },
    address,
    issues: [],
  }
}

/**
 * `parseObjectsText` is injected by the composition root (a byte-bounded cache
 * owned by the MountService); without it every call parses with the default
 * -max-objects-size. `flavour`: whose parameter names and defaults apply, that
 * is which reference provider the socket the driver called stands for. `identity`: see RequestIdentity.
 * Throws the first problem collectMountRequest finds.
 */
export function parseMountRequest(
  raw: RawMountRequest,
  defaults: VaultDefaults,
  parseObjectsText?: ObjectsParser,
  flavour: ProviderFlavour = DEFAULT_FLAVOUR,
  identity: RequestIdentity = 'pod',
): MountSpec {
  const { spec, issues } = collectMountRequest(raw, defaults, parseObjectsText, flavour, identity)
  if (spec === undefined) throw issues[0]!
  return spec
}
