/**
 * The pod's service-account token: the one kubelet minted for the audience
 * (CSIDriver tokenRequests), or, for drivers configured without
 * tokenRequests, one the provider requests from the Kubernetes API, bound to
 * the pod. The provider never logs in with an identity of its own.
 */
import type { ProviderMode } from '../config/config.js'
import { ProviderError, q } from '../errors.js'
import type { KubeClient } from '../kube/client.js'
import type { MountSpec } from '../request/types.js'
import type { Deadline } from '../util/deadline.js'
import { checkPodToken } from './claims.js'

export const TOKEN_REQUEST_SECONDS = 600

/** Who supplied the token a login used: the CSI driver (kubelet), the provider's TokenRequest, or the Sync Controller. */
export type TokenSource = 'driver' | 'token-request' | 'sync-controller'

export interface PodCredential {
  jwt: string
  source: TokenSource
}

export interface PodTokenOptions {
  /** -token-request-audiences: the audiences the provider may ask the Kubernetes API for. */
  tokenRequestAudiences: readonly string[]
  /** The clock the token's expiry is judged by (injected for tests). */
  now: () => number
  /** The Mount's deadline: bounds the TokenRequest, and its signal ends it when the driver cancels. */
  deadline?: Deadline
  /**
   * -mode: `sync-controller` takes only the tokens the controller passed, never requests one (its pod
   * lives in another namespace than the SecretSync, so no TokenRequest bound to it could be had).
   */
  mode?: ProviderMode
}

/** What to tell whoever runs the Sync Controller when it passed no token for the audience. */
function syncControllerTokenMissing(audience: string, available: string[]): ProviderError {
  const passed =
    available.length === 0
      ? 'passed no service-account token'
      : `passed service-account tokens for audiences ${available.map((a) => q(a)).join(', ')} but not for audience ${q(audience)}`
  return new ProviderError(
    'NO_POD_TOKEN',
    `the Secrets Store Sync Controller ${passed}; the controller's --token-request-audience ` +
      `(its chart's tokenRequestAudience) must include ${q(audience)}, or set the SecretProviderClass's ` +
      '"audience" parameter to an audience it requests (this provider requests no tokens beside the controller)',
  )
}

/**
 * The pod's token, checked against the Mount's attributes before anything
 * (a cached Vault token or secret included) is used for the Mount.
 */
export async function obtainPodToken(
  spec: MountSpec,
  kube: KubeClient | undefined,
  opts: PodTokenOptions,
): Promise<PodCredential> {
  const { audience, pod } = spec
  if (opts.mode === 'sync-controller') {
    const entry = spec.podTokens?.get(audience)
    if (!entry) throw syncControllerTokenMissing(audience, [...(spec.podTokens?.keys() ?? [])])
    checkPodToken(
      entry.token,
      { namespace: pod.namespace, serviceAccount: pod.serviceAccount, podName: pod.name, podUid: pod.uid, audience },
      opts.now(),
    )
    return { jwt: entry.token, source: 'sync-controller' }
  }
  if (spec.podTokens !== undefined) {
    const entry = spec.podTokens.get(audience)
    if (entry) {
      checkPodToken(
        entry.token,
        { namespace: pod.namespace, serviceAccount: pod.serviceAccount, podName: pod.name, podUid: pod.uid, audience },
        opts.now(),
      )
      return { jwt: entry.token, source: 'driver' }
    }
    const available = [...spec.podTokens.keys()].map((a) => q(a)).join(', ') || 'none'
    throw new ProviderError(
      'NO_POD_TOKEN',
      `the driver passed service-account tokens for audiences ${available} but not for audience ${q(audience)}; ` +
        'add it to the CSIDriver tokenRequests or set the "audience" parameter to one of those',
    )
  }
  if (kube === undefined) {
    throw new ProviderError(
      'NO_POD_TOKEN',
      `no service-account token for audience ${q(audience)} in the request and no Kubernetes API to request one; ` +
        'configure the driver with tokenRequests (audience "vault")',
    )
  }
  // Any pod may name any audience; a token for an audience the operator did not allow could open other doors.
  if (!opts.tokenRequestAudiences.includes(audience)) {
    const allowed = opts.tokenRequestAudiences.map((a) => q(a)).join(', ') || 'none'
    throw new ProviderError(
      'AUDIENCE_NOT_ALLOWED',
      `the provider may not request service-account tokens for audience ${q(audience)} ` +
        `(-token-request-audiences allows ${allowed}); set the "audience" parameter to one of those, ` +
        'or configure the driver with tokenRequests for this audience',
    )
  }
  // The API server checks that the pod name, UID and service account belong together before it issues this.
  const issued = await kube.createPodToken(pod.namespace, pod.serviceAccount, {
    audience,
    podName: pod.name,
    podUid: pod.uid,
    expirationSeconds: TOKEN_REQUEST_SECONDS,
    deadline: opts.deadline,
  })
  return { jwt: issued.token, source: 'token-request' }
}
