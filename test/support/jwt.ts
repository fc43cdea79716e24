// Kubernetes-shaped service-account JWTs signed with a test RSA key (node:crypto only),
// and OpenBao `jwt` auth set-up that validates them with that key's public half.
// This lets tests log in "as a pod" without a Kubernetes API server.
import { createHash, createSign, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto'
import { mustSucceed, type OpenBaoAdmin } from './openbao.js'

export interface JwtKeyPair {
  privateKey: KeyObject
  /** SPKI PEM ("-----BEGIN PUBLIC KEY-----"), what jwt_validation_pubkeys takes. */
  publicKeyPem: string
  /** Key id put in the JWT header (SHA-256 of the public key DER, base64url). */
  kid: string
}

/** A fresh RSA key pair (2048 bits by default). */
export function generateRsaKeyPair(bits = 2048): JwtKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits })
  const der = publicKey.export({ type: 'spki', format: 'der' })
  return {
    privateKey,
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    kid: createHash('sha256').update(der).digest('base64url'),
  }
}

let defaultPair: JwtKeyPair | undefined
/** One key pair per test process, generated on first use. */
export function defaultKeyPair(): JwtKeyPair {
  defaultPair ??= generateRsaKeyPair()
  return defaultPair
}

function b64url(s: string | Buffer): string {
  return Buffer.from(s).toString('base64url')
}

/** Signs any payload as an RS256 JWT. */
export function signJwt(payload: Record<string, unknown>, key: JwtKeyPair = defaultKeyPair()): string {
  const header = { alg: 'RS256', kid: key.kid }
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`
  const sig = createSign('RSA-SHA256').update(input).sign(key.privateKey)
  return `${input}.${b64url(sig)}`
}

/** Decodes (does not verify) a JWT's payload. */
export function decodeJwtPayload(jwt: string): Record<string, any> {
  const part = jwt.split('.')[1]
  if (part === undefined) throw new Error('not a JWT')
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
}

export const DEFAULT_ISSUER = 'https://kubernetes.default.svc.cluster.local'

export interface ServiceAccountJwtOptions {
  namespace: string
  serviceAccount: string
  podName: string
  podUid: string
  /** One audience or several; always emitted as an array, like Kubernetes. */
  audience: string | string[]
  /** Default https://kubernetes.default.svc.cluster.local */
  issuer?: string
  /** Lifetime in seconds from now. Default 3600. Negative gives an already-expired token. */
  expiresInSec?: number
  /** Default: a random UUID. */
  serviceAccountUid?: string
  /** Issued-at, seconds since the epoch. Default: now. */
  issuedAtSec?: number
  /** Extra or overriding top-level claims. */
  extraClaims?: Record<string, unknown>
  /** No `pod` claim: a TokenRequest bound to nothing, as the Secrets Store Sync Controller gets them. */
  unbound?: boolean
}

/**
 * An RS256 JWT shaped like a Kubernetes projected service-account token:
 * iss, sub (system:serviceaccount:<ns>:<sa>), aud (array), iat, nbf, exp, jti and
 * kubernetes.io {namespace, pod {name, uid}, serviceaccount {name, uid}}.
 */
export function signServiceAccountJwt(o: ServiceAccountJwtOptions, key: JwtKeyPair = defaultKeyPair()): string {
  const iat = o.issuedAtSec ?? Math.floor(Date.now() / 1000)
  const exp = iat + (o.expiresInSec ?? 3600)
  const payload: Record<string, unknown> = {
    aud: Array.isArray(o.audience) ? o.audience : [o.audience],
    exp,
    iat,
    iss: o.issuer ?? DEFAULT_ISSUER,
    jti: randomUUID(),
    'kubernetes.io': {
      namespace: o.namespace,
      ...(o.unbound === true ? {} : { pod: { name: o.podName, uid: o.podUid } }),
      serviceaccount: { name: o.serviceAccount, uid: o.serviceAccountUid ?? randomUUID() },
    },
    nbf: iat,
    sub: `system:serviceaccount:${o.namespace}:${o.serviceAccount}`,
    ...(o.extraClaims ?? {}),
  }
  return signJwt(payload, key)
}

/**
 * Enables the `jwt` auth method at `mount` and configures it to validate tokens with
 * `publicKeyPem` (default: the default key pair's). `boundIssuer` optionally pins `iss`.
 */
export async function configureJwtAuth(
  bao: OpenBaoAdmin,
  mount: string,
  publicKeyPem: string = defaultKeyPair().publicKeyPem,
  opts: { boundIssuer?: string } = {},
): Promise<void> {
  await bao.enableAuth('jwt', mount)
  const config: Record<string, unknown> = { jwt_validation_pubkeys: [publicKeyPem] }
  if (opts.boundIssuer !== undefined) config['bound_issuer'] = opts.boundIssuer
  mustSucceed(`configure jwt auth at ${mount}`, await bao.api('POST', `/v1/auth/${mount}/config`, config))
}

export interface JwtRoleOptions {
  policies: string[]
  boundAudiences: string[]
  boundSubject?: string
  /** e.g. {"/kubernetes.io/namespace": "ns1"} (JSON-pointer keys reach nested claims). */
  boundClaims?: Record<string, string | string[]>
  /** token_ttl, e.g. "1h" or seconds. */
  ttl?: string | number
  /** token_max_ttl */
  maxTtl?: string | number
  /** Any other role fields, passed through. */
  extra?: Record<string, unknown>
}

/** Creates a `jwt` role (role_type jwt, user_claim sub). */
export async function createJwtRole(bao: OpenBaoAdmin, mount: string, role: string, o: JwtRoleOptions): Promise<void> {
  const body: Record<string, unknown> = {
    role_type: 'jwt',
    user_claim: 'sub',
    bound_audiences: o.boundAudiences,
    token_policies: o.policies,
  }
  if (o.boundSubject !== undefined) body['bound_subject'] = o.boundSubject
  if (o.boundClaims !== undefined) {
    body['bound_claims'] = o.boundClaims
    body['bound_claims_type'] = 'string'
  }
  if (o.ttl !== undefined) body['token_ttl'] = o.ttl
  if (o.maxTtl !== undefined) body['token_max_ttl'] = o.maxTtl
  Object.assign(body, o.extra ?? {})
  mustSucceed(`create jwt role ${role} at ${mount}`, await bao.api('POST', `/v1/auth/${mount}/role/${role}`, body))
}
