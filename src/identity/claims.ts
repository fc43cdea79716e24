/**
 * Does the service-account token a Mount presents belong to the pod its
 * attributes name? Checked before any cached Vault session, token or secret
 * serves the Mount: the cache is keyed by those attributes, so a token for
 * someone else (or garbage) must not reach the cached answers of the pod it
 * names.
 *
 * The token is only decoded here, not verified: its signature is Vault's to
 * check at login. What this stops is a Mount whose token and attributes
 * disagree — a garbage token, another pod's or service account's token, an
 * expired one, one for another audience.
 */
import { ProviderError, q } from '../errors.js'

/** Kubernetes service-account JWTs are about 1 KiB; nothing legitimate comes near this. */
export const MAX_POD_JWT_BYTES = 16 * 1024

/** The claims of a Kubernetes projected service-account token the provider relies on. */
export interface ServiceAccountClaims {
  sub: string
  aud: string[]
  /** Seconds since the epoch. */
  exp: number
  namespace: string
  serviceAccount: { name: string; uid?: string }
  /** Present in tokens bound to a pod (kubelet's tokenRequests, TokenRequest with a boundObjectRef). */
  pod?: { name: string; uid: string }
}

export interface ExpectedIdentity {
  namespace: string
  serviceAccount: string
  podName: string
  podUid: string
  audience: string
}

function mismatch(what: string): ProviderError {
  return new ProviderError(
    'POD_TOKEN_MISMATCH',
    `the service-account token the Mount presents ${what}; the provider serves a Mount only with the token of ` +
      'the pod its attributes name (check the CSIDriver tokenRequests and that nothing rewrites the volume attributes)',
  )
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}

/** Decodes (without verifying) a service-account JWT; POD_TOKEN_MISMATCH naming what is wrong, never the token. */
export function decodeServiceAccountJwt(jwt: string): ServiceAccountClaims {
  if (jwt.length > MAX_POD_JWT_BYTES) throw mismatch(`is longer than ${MAX_POD_JWT_BYTES} bytes`)
  const parts = jwt.split('.')
  if (parts.length !== 3) throw mismatch('is not a JWT')
  let payload: unknown
  try {
    payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'))
  } catch {
    throw mismatch('is not a JWT (its payload is not JSON)')
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw mismatch('is not a JWT')
  const p = payload as Record<string, unknown>
  const k8s = p['kubernetes.io'] as Record<string, unknown> | undefined
  const namespace = str(k8s?.namespace)
  const sa = k8s?.serviceaccount as Record<string, unknown> | undefined
  const saName = str(sa?.name)
  if (namespace === undefined || saName === undefined) {
    throw mismatch('has no claim "kubernetes.io" with namespace and serviceaccount.name (not a service-account token)')
  }
  const sub = str(p.sub)
  if (sub === undefined) throw mismatch('has no claim "sub"')
  if (typeof p.exp !== 'number') throw mismatch('has no claim "exp"')
  const audRaw = p.aud
  const aud =
    typeof audRaw === 'string' ? [audRaw] : Array.isArray(audRaw) ? audRaw.filter((a) => typeof a === 'string') : []
  const podRaw = k8s?.pod as Record<string, unknown> | undefined
  const podName = str(podRaw?.name)
  const podUid = str(podRaw?.uid)
  return {
    sub,
    aud,
    exp: p.exp,
    namespace,
    serviceAccount: { name: saName, uid: str(sa?.uid) },
    pod: podName !== undefined && podUid !== undefined ? { name: podName, uid: podUid } : undefined,
  }
}

/**
 * Throws POD_TOKEN_MISMATCH naming the first claim that disagrees with the
 * attributes (claim and expected value only: attributes are not secret).
 */
export function checkPodToken(jwt: string, expected: ExpectedIdentity, nowMs: number): ServiceAccountClaims {
  const c = decodeServiceAccountJwt(jwt)
  const claim = (name: string, want: string): ProviderError =>
    mismatch(`was issued for another identity: claim ${q(name)} is not ${q(want)}`)
  if (c.namespace !== expected.namespace) throw claim('kubernetes.io.namespace', expected.namespace)
  if (c.serviceAccount.name !== expected.serviceAccount)
    throw claim('kubernetes.io.serviceaccount.name', expected.serviceAccount)
  const sub = `system:serviceaccount:${expected.namespace}:${expected.serviceAccount}`
  if (c.sub !== sub) throw claim('sub', sub)
  if (c.pod !== undefined) {
    if (c.pod.name !== expected.podName) throw claim('kubernetes.io.pod.name', expected.podName)
    if (c.pod.uid !== expected.podUid) throw claim('kubernetes.io.pod.uid', expected.podUid)
  }
  if (!c.aud.includes(expected.audience)) {
    throw mismatch(`is not for audience ${q(expected.audience)} (claim "aud")`)
  }
  if (c.exp * 1000 <= nowMs) {
    throw mismatch(`expired at ${new Date(c.exp * 1000).toISOString()} (claim "exp")`)
  }
  return c
}
