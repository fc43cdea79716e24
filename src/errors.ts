/**
 * The one catalogue of errors the provider can return.
 *
 * Every failure that reaches the driver is a ProviderError with a stable
 * `code` (used in logs, metrics and docs/troubleshooting.md); each code's entry
 * says what it means. Nothing here knows gRPC: the gRPC adapter maps codes to
 * the status the driver shows in the pod's FailedMount event
 * (src/server/grpc-status.ts). Messages are built
 * only from safe fields (object names, Vault paths, role, HTTP status, Vault's
 * own error strings): never a secret value, a token or a request body.
 */
import { printable } from './util/printable.js'

export const ERROR_CATALOGUE = {
  BAD_REQUEST: 'The MountRequest itself is malformed (attributes/secrets/permission).',
  BAD_PARAMETER: 'A SecretProviderClass parameter (or a pod volumeAttribute) is invalid.',
  BAD_OBJECT: 'An entry of `objects` is invalid.',
  BAD_FILE_PATH: 'A file path would be refused by the driver (traversal, absolute, duplicate...).',
  NO_POD_TOKEN: 'No service-account token could be had for the pod.',
  KUBERNETES_API: 'The Kubernetes API refused or failed a TokenRequest / Secret call.',
  VAULT_LOGIN_DENIED: "Vault refused the pod's login (role binding, audience, expired JWT...).",
  VAULT_PERMISSION_DENIED: 'Vault answered 403 to a read with a freshly logged-in token.',
  VAULT_NOT_FOUND: 'Vault answered 404: the secret (or the Vault path) does not exist.',
  SECRET_KEY_NOT_FOUND: "The secret Vault returned lacks the key the object's `secretKey` names.",
  VAULT_BAD_REQUEST: 'Vault answered 400 (usually a bad secretArgs / query / method).',
  VAULT_UNAVAILABLE:
    'Vault is unreachable, failing or sealed, or its cluster has no active node (electing a leader), until the deadline.',
  VAULT_RATE_LIMITED: 'Vault answered 429 (rate-limit quota).',
  VAULT_BAD_RESPONSE: 'Vault answered, but with something the provider cannot use.',
  DECODE_FAILED: "The extracted value cannot be decoded with the object's `encoding`.",
  OUTPUT_FAILED: 'The secret cannot be written as the object asks (`format`, `template`, certificate split).',
  VAULT_ADDRESS_NOT_ALLOWED:
    "The Mount's Vault address is not in the provider's -vault-addr-allowlist (no token was sent).",
  RESPONSE_TOO_LARGE: "The Mount's files would exceed the driver's receive limit (-max-response-size).",
  SECRET_TOO_LARGE:
    "-mode=sync-controller: the Mount's files would not fit the one Kubernetes Secret (1 MiB) the controller writes.",
  NO_OBJECT_VERSIONS: '-mode=sync-controller: the answer would carry no object version, which the controller refuses.',
  MOUNT_BUDGET_EXCEEDED:
    'One Mount fetched or rendered more than its budget (-max-mount-bytes, or its render work), or the node-wide budget is spent.',
  VAULT_RESPONSE_TOO_LARGE: "A Vault answer's body is larger than -max-vault-response-size (it is not read further).",
  VAULT_REDIRECT_REFUSED:
    "The address answered with a redirect that is not a standby's (another path or scheme, or permanent): it is probably not Vault's API; nothing was sent there.",
  POD_TOKEN_MISMATCH: 'The service-account token a Mount presents does not belong to the pod its attributes name.',
  LOGIN_IDENTITY_MISMATCH:
    "A login answer was not issued for the pod's service-account token (e.g. a `cert` auth mount).",
  AUDIENCE_NOT_ALLOWED:
    'The provider may not request service-account tokens for this audience (-token-request-audiences).',
  DEADLINE_EXCEEDED: 'The Mount ran out of time.',
  CANCELLED: 'The driver cancelled the Mount (kubelet gave up on it): it stopped where it was.',
  HMAC_KEY_UNAVAILABLE: 'The HMAC key for object versions could not be obtained.',
  SHUTTING_DOWN: 'The provider is shutting down.',
  INTERNAL: 'A bug: should never happen, reported without details.',
} as const satisfies Record<string, string>

export type ErrorCode = keyof typeof ERROR_CATALOGUE

// Anything that looks like a JWT or a Vault/OpenBao token is cut out of
// messages, in case a server ever echoes one back in its error text. Both
// patterns run on untrusted text, so both are linear: a match can start only
// where a run of token characters starts (the lookbehind and `\b`), and
// inside it every quantifier is over a class without the character that
// follows it, so no position is scanned more than a few times.
const JWT_PATTERN = /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g
/** Service (hvs.), batch (hvb.) and recovery (hvr.) tokens, and the pre-1.10 s./b./r. forms, short ones included. */
const VAULT_TOKEN_PATTERN = /\b(?:hv[sbr]|s|b|r)\.[A-Za-z0-9_-]{8,}/g
/** Characters a token or JWT is made of: a cut inside a run of them may leave a piece too short to recognise. */
const TOKEN_CHAR = /[A-Za-z0-9_.-]/

/** The longest message a ProviderError carries (a FailedMount event shows about 1 KiB anyway). */
export const MAX_ERROR_MESSAGE_CHARS = 2048

export function scrub(text: string): string {
  return text.replace(JWT_PATTERN, '[redacted-jwt]').replace(VAULT_TOKEN_PATTERN, '[redacted-token]')
}

/**
 * `text` cut to at most `max` characters for scrubbing: when the cut falls
 * inside a run of token characters, the whole run is dropped, so that no
 * piece of a credential too short for scrub() to recognise survives. Linear.
 */
export function cutForScrub(text: string, max: number): string {
  if (text.length <= max) return text
  let end = max
  while (end > 0 && TOKEN_CHAR.test(text[end - 1]!) && TOKEN_CHAR.test(text[end]!)) end -= 1
  return text.slice(0, end)
}

/** Untrusted text longer than this is cut (cutForScrub) before it is scrubbed. */
export const SCRUB_WINDOW_CHARS = 64 * 1024

/**
 * Untrusted text made safe to show: scrubbed first (within a bounded window),
 * its terminal controls escaped (util/printable.ts), then cut to `max`, so
 * that the cut can never leave a credential fragment that scrub() would no
 * longer recognise.
 */
export function safeText(text: string, max: number): string {
  return printable(scrubbedAndCut(text, max))
}

function scrubbedAndCut(text: string, max: number): string {
  const clean = scrub(cutForScrub(text, SCRUB_WINDOW_CHARS))
  return clean.length > max ? `${clean.slice(0, max)}…` : clean
}

/**
 * What an error is about, each field only where it applies: code reads these (lint, the CLI, tests),
 * never the message. `errorText` is the one place they become the line a person reads.
 */
export interface ErrorFields {
  /** The SecretProviderClass parameter (or pod volume attribute) at fault, as the class spells it. */
  readonly parameter?: string
  /** The entry of `objects`: its position (0-based) and, once known, its objectName. */
  readonly object?: ObjectRef
  /** A file of the answer, relative to the volume. */
  readonly file?: string
  /** The Vault call and who made it, as people read it: `GET secret/data/db (role "app", auth mount "kubernetes")`. */
  readonly call?: string
  /** Vault's HTTP status, when Vault answered. */
  readonly vaultStatus?: number
  /** The Vault address the call went to. */
  readonly address?: string
  /** The egress proxy the call went through, as shown (`host:port`, never its credentials). */
  readonly proxy?: string
  /** How many attempts the retry layer made, when it made more than one. */
  readonly attempts?: number
}

export interface ObjectRef {
  readonly index: number
  readonly name?: string
}

/** How a message names an object: by its objectName once it has one, else by its place in the list. */
export function objectLabel(object: ObjectRef): string {
  return object.name === undefined ? `objects[${object.index}]` : `object ${q(object.name)}`
}

/**
 * The one line a person reads: the object and the Vault call it is about, then the cause, then how
 * often it was tried. `detail` says what went wrong and may itself name a parameter or file.
 */
export function errorText(detail: string, fields: ErrorFields): string {
  const context: string[] = []
  if (fields.object !== undefined) context.push(objectLabel(fields.object))
  if (fields.call !== undefined) context.push(fields.call)
  context.push(detail)
  const text = context.join(': ')
  return fields.attempts !== undefined && fields.attempts > 1 ? `${text} (after ${fields.attempts} attempts)` : text
}

export class ProviderError extends Error {
  readonly code: ErrorCode
  /** The cause alone, without the context `fields` add to the message. */
  readonly detail: string
  readonly fields: ErrorFields

  constructor(code: ErrorCode, detail: string, fields: ErrorFields = {}) {
    super(safeText(errorText(detail, fields), MAX_ERROR_MESSAGE_CHARS))
    this.name = 'ProviderError'
    this.code = code
    this.detail = detail
    this.fields = fields
  }

  /** The same error with more context (fields already set win: the innermost knows best). */
  within(fields: ErrorFields): ProviderError {
    return new ProviderError(this.code, this.detail, { ...fields, ...this.fields })
  }
}

export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError
}

/** Turns anything thrown into a ProviderError without ever echoing unknown data. */
export function toProviderError(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err
  return new ProviderError('INTERNAL', 'internal error (see the provider log for details)')
}

/** Quotes a user-supplied string for an error message: scrubbed before it is cut to a sane length. */
export function q(value: string, max = 120): string {
  // JSON escapes C0 controls itself; printable() then escapes what JSON leaves (C1, bidirectional marks).
  return printable(JSON.stringify(scrubbedAndCut(value, max)))
}

/**
 * A name for an error message, or what makes it: hot paths (every Vault read, every object) pass a
 * function, so that the text — often a q() or two — is made only when an error shows it.
 */
export type LazyText = string | (() => string)

export function textOf(text: LazyText): string {
  return typeof text === 'string' ? text : text()
}
