/** The typed form of one MountRequest, produced by parse-request.ts. */
import type { ReadConsistency, VaultTlsConfig } from '../config/config.js'

export const ENCODINGS = ['utf-8', 'base64', 'hex'] as const
export type Encoding = (typeof ENCODINGS)[number]

/** What an object writes besides the reference provider's one value / whole response (docs/outputs.md). */
export const OUTPUT_FORMATS = ['json', 'yaml', 'env', 'properties', 'files', 'tls', 'pkcs12'] as const
export type OutputFormat = (typeof OUTPUT_FORMATS)[number]

export const METHODS = ['GET', 'PUT', 'POST'] as const
export type HttpMethod = (typeof METHODS)[number]

/** A JSON value as it may appear in secretArgs or a Vault response. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

export interface SecretObject {
  objectName: string
  /**
   * Vault API path without `/v1/` and without the query, e.g. `secret/data/app`.
   * Empty only for a `template` object that reads no secret of its own.
   */
  secretPath: string
  /** Query parameters from `secretPath?…`, in the order written. */
  query: Array<[string, string]>
  method: HttpMethod
  secretArgs?: { [key: string]: Json }
  secretKey?: string
  /** `secretKeyPath`, parsed: map keys (strings) and array indexes (numbers) inside the secret's data. */
  secretKeyPath?: Array<string | number>
  /** Absent: one value or the whole response, as the reference provider writes them. */
  format?: OutputFormat
  /** A Mustache template rendered into the object's file (src/render/template.ts). */
  template?: string
  /** `format: pkcs12`: the object whose value is the keystore's password; absent: an empty password. */
  passwordObject?: string
  /** When Vault answers that its secret does not exist (404), the Mount goes on without it. */
  optional?: true
  /** The namespace this object is read in, instead of the Mount's (`vaultNamespace`). */
  namespace?: string
  encoding: Encoding
  /** Absent means the request's default permission. */
  filePermission?: number
  /** The object's fields as configured, canonicalised (templates read them as `@config`). */
  config: { [key: string]: Json }
  /**
   * canonicalJson(config), the first input of the object's version HMAC: made once when the
   * `objects` text is parsed (and cached with it), not on every Mount.
   */
  configJson: string
}

export interface VaultConnection {
  address: string
  /** The namespace of every read (an object may name its own), and of the login unless `authNamespace` is set. */
  namespace?: string
  /** The namespace of the login (and of the token's own calls), when it is not `namespace`. */
  authNamespace?: string
  tls: VaultTlsConfig
}

/** The namespace a connection logs in in ('' is the root namespace). */
export function loginNamespace(conn: Pick<VaultConnection, 'namespace' | 'authNamespace'>): string {
  return conn.authNamespace ?? conn.namespace ?? ''
}

export interface PodIdentity {
  namespace: string
  name: string
  uid: string
  serviceAccount: string
}

/** A service-account token the driver minted for the pod (kubelet tokenRequests). */
export interface PodToken {
  token: string
  expirationTimestamp?: string
}

export interface MountSpec {
  pod: PodIdentity
  secretProviderClass: string
  roleName: string
  authMount: string
  audience: string
  vault: VaultConnection
  /** Whether the Mount's reads may come from a cluster's standby (vaultReadConsistency, -vault-read-consistency). */
  readConsistency: ReadConsistency
  objects: SecretObject[]
  /** Default file mode from the request's `permission`. */
  defaultMode: number
  /** Driver-supplied tokens by audience; undefined when the driver sent none. */
  podTokens?: Map<string, PodToken>
}
