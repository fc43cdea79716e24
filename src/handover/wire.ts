/**
 * The handover's messages, and their strict validation: every frame the other process sends is
 * checked field by field (types, bounds, no unknown keys) before anything is taken from it. A
 * frame that fails is refused with a message naming the field, never its value (tokens and
 * secrets travel in these frames).
 */
import { IDENTITY_SCOPES, type IdentityScopeName } from '../config/config.js'
import type { Lifetime } from '../vault/sessions/lifetime.js'
import type { ExportedEntry, ExportedSession, ExportedToken } from '../vault/sessions/exported.js'
import type { VaultIdentity } from '../vault/sessions/session.js'
import { isPlainObject } from '../util/plain-object.js'

export const PROTOCOL = 'vault-csi-provider-handover'
/** The version of the messages and of the state they carry; a successor refuses any other (2: sealed frames). */
export const PROTOCOL_VERSION = 2

/** The settings under which the state is valid: the successor refuses it when its own differ. */
export interface HandoverSettings {
  /** -vault-addr, normalised; '' when unset. */
  vaultAddress: string
  vaultNamespace: string
  /** -vault-mount, normalised. */
  authMount: string
  identityScope: IdentityScopeName
  shareDynamicSecrets: boolean
}

export type Message =
  | { type: 'hello'; protocol: string; version: number; pid: number; nonce: string }
  | { type: 'challenge'; version: number; pid: number; nonce: string; proof: string }
  | { type: 'proof'; proof: string }
  | { type: 'settings'; settings: HandoverSettings }
  | { type: 'decline'; reason: string }
  | { type: 'take' }
  | { type: 'begin'; sessions: number; leases: number }
  | { type: 'session'; session: Omit<ExportedSession, 'entries'> }
  | { type: 'entry'; entry: ExportedEntry }
  | { type: 'end' }

export class InvalidMessage extends Error {
  override name = 'InvalidMessage'
}

/** Bounds of the strings a state carries (the request's own bounds, with room to spare). */
const MAX_NAME = 256
const MAX_ADDRESS = 2048
const MAX_PATH = 4096
const MAX_TOKEN = 4096
const MAX_KEY = 256 * 1024 + 1024
const MAX_REASON = 1024
const MAX_NONCE = 64
const MAX_PROOF = 64

type Fields = Record<string, unknown>

function fields(v: unknown, what: string, required: readonly string[], optional: readonly string[] = []): Fields {
  if (!isPlainObject(v)) throw new InvalidMessage(`${what} is not an object`)
  for (const k of Object.keys(v)) {
    if (!required.includes(k) && !optional.includes(k)) throw new InvalidMessage(`${what} has an unknown field`)
  }
  for (const k of required) if (!(k in v)) throw new InvalidMessage(`${what} lacks ${k}`)
  return v
}

function str(v: unknown, what: string, max: number, allowEmpty = false): string {
  if (typeof v !== 'string' || v.length > max || (!allowEmpty && v === '')) {
    throw new InvalidMessage(`${what} is not a string of at most ${max} characters`)
  }
  return v
}

function optionalStr(v: unknown, what: string, max: number): string | undefined {
  return v === undefined ? undefined : str(v, what, max)
}

function int(v: unknown, what: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new InvalidMessage(`${what} is not an integer between ${min} and ${max}`)
  }
  return v
}

function bool(v: unknown, what: string): boolean {
  if (typeof v !== 'boolean') throw new InvalidMessage(`${what} is not true or false`)
  return v
}

/** A wall-clock time or duration in ms; `null` on the wire is "never" (Infinity) where allowed. */
function time(v: unknown, what: string, neverAllowed = false): number {
  if (v === null && neverAllowed) return Number.POSITIVE_INFINITY
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new InvalidMessage(`${what} is not a time`)
  return v
}

/** Infinity as JSON cannot carry it. */
function wireTime(v: number): number | null {
  return Number.isFinite(v) ? v : null
}

function settings(v: unknown): HandoverSettings {
  const f = fields(v, 'settings', [
    'vaultAddress',
    'vaultNamespace',
    'authMount',
    'identityScope',
    'shareDynamicSecrets',
  ])
  const scope = str(f.identityScope, 'settings.identityScope', MAX_NAME)
  if (!(IDENTITY_SCOPES as readonly string[]).includes(scope))
    throw new InvalidMessage('settings.identityScope is unknown')
  return {
    vaultAddress: str(f.vaultAddress, 'settings.vaultAddress', MAX_ADDRESS, true),
    vaultNamespace: str(f.vaultNamespace, 'settings.vaultNamespace', MAX_NAME, true),
    authMount: str(f.authMount, 'settings.authMount', MAX_NAME),
    identityScope: scope as IdentityScopeName,
    shareDynamicSecrets: bool(f.shareDynamicSecrets, 'settings.shareDynamicSecrets'),
  }
}

function identity(v: unknown): VaultIdentity {
  const f = fields(v, 'identity', ['connection', 'authMount', 'role', 'audience', 'pod'])
  const c = fields(f.connection, 'identity.connection', ['address', 'tls'], ['namespace', 'authNamespace'])
  const tls = fields(
    c.tls,
    'identity.connection.tls',
    ['skipVerify'],
    ['caCertPath', 'caDirectory', 'serverName', 'clientCertPath', 'clientKeyPath'],
  )
  const pod = fields(f.pod, 'identity.pod', ['namespace', 'name', 'uid', 'serviceAccount'])
  const namespace = optionalStr(c.namespace, 'identity.connection.namespace', MAX_NAME)
  const authNamespace = optionalStr(c.authNamespace, 'identity.connection.authNamespace', MAX_NAME)
  const tlsOut: VaultIdentity['connection']['tls'] = { skipVerify: bool(tls.skipVerify, 'tls.skipVerify') }
  for (const k of ['caCertPath', 'caDirectory', 'serverName', 'clientCertPath', 'clientKeyPath'] as const) {
    const value = optionalStr(tls[k], `tls.${k}`, MAX_PATH)
    if (value !== undefined) tlsOut[k] = value
  }
  return {
    connection: {
      address: str(c.address, 'identity.connection.address', MAX_ADDRESS),
      ...(namespace === undefined ? {} : { namespace }),
      ...(authNamespace === undefined ? {} : { authNamespace }),
      tls: tlsOut,
    },
    authMount: str(f.authMount, 'identity.authMount', MAX_NAME),
    role: str(f.role, 'identity.role', MAX_NAME),
    audience: str(f.audience, 'identity.audience', MAX_NAME),
    pod: {
      namespace: str(pod.namespace, 'identity.pod.namespace', MAX_NAME),
      name: str(pod.name, 'identity.pod.name', MAX_NAME),
      uid: str(pod.uid, 'identity.pod.uid', MAX_NAME),
      serviceAccount: str(pod.serviceAccount, 'identity.pod.serviceAccount', MAX_NAME),
    },
  }
}

const MAX_GENERATION = 2 ** 31

function token(v: unknown): ExportedToken {
  const f = fields(v, 'token', ['value', 'generation', 'obtainedAt', 'ttlMs', 'renewable', 'renewAt', 'expiresAt'])
  return {
    value: str(f.value, 'token.value', MAX_TOKEN),
    generation: int(f.generation, 'token.generation', 1, MAX_GENERATION),
    obtainedAt: time(f.obtainedAt, 'token.obtainedAt'),
    ttlMs: time(f.ttlMs, 'token.ttlMs'),
    renewable: bool(f.renewable, 'token.renewable'),
    renewAt: time(f.renewAt, 'token.renewAt', true),
    expiresAt: time(f.expiresAt, 'token.expiresAt', true),
  }
}

function lifetime(v: unknown): Lifetime {
  if (!isPlainObject(v)) throw new InvalidMessage('entry.lifetime is not an object')
  switch (v.kind) {
    case 'static':
      fields(v, 'entry.lifetime', ['kind'])
      return { kind: 'static' }
    case 'leased': {
      const f = fields(v, 'entry.lifetime', ['kind', 'leaseId', 'ttlMs', 'renewable'])
      return {
        kind: 'leased',
        leaseId: str(f.leaseId, 'entry.lifetime.leaseId', MAX_PATH),
        ttlMs: time(f.ttlMs, 'entry.lifetime.ttlMs'),
        renewable: bool(f.renewable, 'entry.lifetime.renewable'),
      }
    }
    case 'issued': {
      const f = fields(v, 'entry.lifetime', ['kind', 'notBefore', 'notAfter'])
      return {
        kind: 'issued',
        notBefore: time(f.notBefore, 'entry.lifetime.notBefore'),
        notAfter: time(f.notAfter, 'entry.lifetime.notAfter'),
      }
    }
    default:
      throw new InvalidMessage('entry.lifetime.kind is unknown')
  }
}

const ENTRY_KEY_PREFIXES = ['pod:', 'shared|', 'static|']

function entry(v: unknown): ExportedEntry {
  const f = fields(v, 'entry', [
    'key',
    'body',
    'lifetime',
    'obtainedAt',
    'renewAt',
    'expiresAt',
    'tokenGeneration',
    'firstTtlMs',
  ])
  const key = str(f.key, 'entry.key', MAX_KEY)
  if (!ENTRY_KEY_PREFIXES.some((p) => key.startsWith(p))) throw new InvalidMessage('entry.key is of an unknown kind')
  const lt = lifetime(f.lifetime)
  // A leased or issued answer is a Vault response object; only a static one may be anything JSON.
  if (lt.kind !== 'static' && !isPlainObject(f.body)) throw new InvalidMessage('entry.body is not an object')
  return {
    key,
    body: f.body,
    lifetime: lt,
    obtainedAt: time(f.obtainedAt, 'entry.obtainedAt'),
    renewAt: time(f.renewAt, 'entry.renewAt', true),
    expiresAt: time(f.expiresAt, 'entry.expiresAt', true),
    tokenGeneration: int(f.tokenGeneration, 'entry.tokenGeneration', 0, MAX_GENERATION),
    firstTtlMs: time(f.firstTtlMs, 'entry.firstTtlMs', true),
  }
}

function session(v: unknown): Omit<ExportedSession, 'entries'> {
  const f = fields(v, 'session', ['identity', 'token', 'earlierTokens', 'lastUsedAt'])
  if (!Array.isArray(f.earlierTokens) || f.earlierTokens.length > 2) {
    throw new InvalidMessage('session.earlierTokens is not a list of at most 2')
  }
  return {
    identity: identity(f.identity),
    token: token(f.token),
    earlierTokens: f.earlierTokens.map((e: unknown) => {
      const g = fields(e, 'session.earlierTokens[]', ['generation', 'expiresAt'])
      return {
        generation: int(g.generation, 'earlierTokens.generation', 1, MAX_GENERATION),
        expiresAt: time(g.expiresAt, 'earlierTokens.expiresAt', true),
      }
    }),
    lastUsedAt: time(f.lastUsedAt, 'session.lastUsedAt'),
  }
}

/** Checks one frame against the message its type names; throws InvalidMessage naming the field. */
export function parseMessage(v: unknown): Message {
  if (!isPlainObject(v) || typeof v.type !== 'string') throw new InvalidMessage('a frame without a type')
  switch (v.type) {
    case 'hello': {
      const f = fields(v, 'hello', ['type', 'protocol', 'version', 'pid', 'nonce'])
      return {
        type: 'hello',
        protocol: str(f.protocol, 'hello.protocol', MAX_NAME),
        version: int(f.version, 'hello.version', 0, 1_000_000),
        pid: int(f.pid, 'hello.pid', 0, 2 ** 32),
        nonce: str(f.nonce, 'hello.nonce', MAX_NONCE),
      }
    }
    case 'challenge': {
      const f = fields(v, 'challenge', ['type', 'version', 'pid', 'nonce', 'proof'])
      return {
        type: 'challenge',
        version: int(f.version, 'challenge.version', 0, 1_000_000),
        pid: int(f.pid, 'challenge.pid', 0, 2 ** 32),
        nonce: str(f.nonce, 'challenge.nonce', MAX_NONCE),
        proof: str(f.proof, 'challenge.proof', MAX_PROOF),
      }
    }
    case 'proof':
      return { type: 'proof', proof: str(fields(v, 'proof', ['type', 'proof']).proof, 'proof.proof', MAX_PROOF) }
    case 'settings':
      return { type: 'settings', settings: settings(fields(v, 'settings frame', ['type', 'settings']).settings) }
    case 'decline':
      return {
        type: 'decline',
        reason: str(fields(v, 'decline', ['type', 'reason']).reason, 'decline.reason', MAX_REASON),
      }
    case 'take':
      fields(v, 'take', ['type'])
      return { type: 'take' }
    case 'begin': {
      const f = fields(v, 'begin', ['type', 'sessions', 'leases'])
      return {
        type: 'begin',
        sessions: int(f.sessions, 'begin.sessions', 0, 2 ** 31),
        leases: int(f.leases, 'begin.leases', 0, 2 ** 31),
      }
    }
    case 'session':
      return { type: 'session', session: session(fields(v, 'session frame', ['type', 'session']).session) }
    case 'entry':
      return { type: 'entry', entry: entry(fields(v, 'entry frame', ['type', 'entry']).entry) }
    case 'end':
      fields(v, 'end', ['type'])
      return { type: 'end' }
    default:
      throw new InvalidMessage('a frame of an unknown type')
  }
}

/** A session frame as it goes on the wire (Infinity as null). */
export function sessionFrame(s: ExportedSession): unknown {
  return {
    type: 'session',
    session: {
      identity: s.identity,
      lastUsedAt: s.lastUsedAt,
      token: { ...s.token, renewAt: wireTime(s.token.renewAt), expiresAt: wireTime(s.token.expiresAt) },
      earlierTokens: s.earlierTokens.map((e) => ({ generation: e.generation, expiresAt: wireTime(e.expiresAt) })),
    },
  }
}

export function entryFrame(e: ExportedEntry): unknown {
  return {
    type: 'entry',
    entry: { ...e, renewAt: wireTime(e.renewAt), expiresAt: wireTime(e.expiresAt), firstTtlMs: wireTime(e.firstTtlMs) },
  }
}
