import t from 'tap'
import type { ProviderError } from '../../../src/errors.js'
import { obtainPodToken } from '../../../src/identity/pod-token.js'
import type { KubeClient } from '../../../src/kube/client.js'
import type { MountSpec } from '../../../src/request/types.js'
import { signServiceAccountJwt } from '../../support/jwt.js'

const NOW = Date.UTC(2030, 0, 1)
const pod = { namespace: 'ns', name: 'p-0', uid: 'uid-0', serviceAccount: 'app' }

function spec(audience: string, podTokens?: Map<string, { token: string }>): MountSpec {
  return { pod, audience, podTokens } as unknown as MountSpec
}

/** Records TokenRequests; answers like the API server would for the pod. */
function fakeKube(): { kube: KubeClient; asked: string[] } {
  const asked: string[] = []
  const kube = {
    createPodToken: async (ns: string, sa: string, o: { audience: string; podName: string; podUid: string }) => {
      asked.push(o.audience)
      return {
        token: signServiceAccountJwt({
          namespace: ns,
          serviceAccount: sa,
          podName: o.podName,
          podUid: o.podUid,
          audience: o.audience,
        }),
      }
    },
  } as unknown as KubeClient
  return { kube, asked }
}

const opts = { tokenRequestAudiences: ['vault'], now: () => NOW }

t.test('TokenRequest only for audiences in -token-request-audiences', async (t) => {
  const { kube, asked } = fakeKube()
  const ok = await obtainPodToken(spec('vault'), kube, opts)
  t.equal(ok.source, 'token-request')
  const err = (await obtainPodToken(spec('https://kubernetes.default.svc'), kube, opts).catch(
    (e) => e,
  )) as ProviderError
  t.equal(err.code, 'AUDIENCE_NOT_ALLOWED')
  t.match(err.message, /audience "https:\/\/kubernetes.default.svc" \(-token-request-audiences allows "vault"\)/)
  t.same(asked, ['vault'], 'the refused audience was never asked for')
  const none = (await obtainPodToken(spec('vault'), kube, { ...opts, tokenRequestAudiences: [] }).catch(
    (e) => e,
  )) as ProviderError
  t.match(none.message, /allows none/)
})

t.test('a driver-supplied token must belong to the pod the attributes name', async (t) => {
  const own = signServiceAccountJwt({
    namespace: 'ns',
    serviceAccount: 'app',
    podName: 'p-0',
    podUid: 'uid-0',
    audience: 'vault',
    issuedAtSec: NOW / 1000,
    expiresInSec: 600,
  })
  const other = signServiceAccountJwt({
    namespace: 'ns',
    serviceAccount: 'app',
    podName: 'p-1',
    podUid: 'uid-1',
    audience: 'vault',
    issuedAtSec: NOW / 1000,
    expiresInSec: 600,
  })
  const good = await obtainPodToken(spec('vault', new Map([['vault', { token: own }]])), undefined, opts)
  t.equal(good.source, 'driver')
  const err = (await obtainPodToken(spec('vault', new Map([['vault', { token: other }]])), undefined, opts).catch(
    (e) => e,
  )) as ProviderError
  t.equal(err.code, 'POD_TOKEN_MISMATCH')
  t.match(err.message, /claim "kubernetes.io.pod.name" is not "p-0"/)
  const garbage = (await obtainPodToken(spec('vault', new Map([['vault', { token: 'x' }]])), undefined, opts).catch(
    (e) => e,
  )) as ProviderError
  t.equal(garbage.code, 'POD_TOKEN_MISMATCH')
  t.equal(
    (
      (await obtainPodToken(spec('vault', new Map([['vault', { token: own }]])), undefined, {
        ...opts,
        now: () => NOW + 601_000,
      }).catch((e) => e)) as ProviderError
    ).code,
    'POD_TOKEN_MISMATCH',
    'expired by the injected clock',
  )
})

t.test('no token and no Kubernetes API: NO_POD_TOKEN', async (t) => {
  const err = (await obtainPodToken(spec('vault'), undefined, opts).catch((e) => e)) as ProviderError
  t.equal(err.code, 'NO_POD_TOKEN')
})

t.test('beside the Sync Controller: only the tokens it passed, never a TokenRequest', async (t) => {
  const { kube, asked } = fakeKube()
  const synced = { namespace: 'ns', name: '', uid: '', serviceAccount: 'app' }
  const specOf = (audience: string, podTokens?: Map<string, { token: string }>): MountSpec =>
    ({ pod: synced, audience, podTokens }) as unknown as MountSpec
  const sync = { ...opts, mode: 'sync-controller' as const }
  const unbound = (serviceAccount: string): string =>
    signServiceAccountJwt({
      namespace: 'ns',
      serviceAccount,
      podName: '',
      podUid: '',
      audience: 'vault',
      unbound: true,
      issuedAtSec: NOW / 1000,
    })

  const ok = await obtainPodToken(specOf('vault', new Map([['vault', { token: unbound('app') }]])), kube, sync)
  t.equal(ok.source, 'sync-controller', 'the controller’s token, bound to no pod, for the SecretSync’s account')

  const none = (await obtainPodToken(specOf('vault'), kube, sync).catch((e) => e)) as ProviderError
  t.equal(none.code, 'NO_POD_TOKEN')
  t.match(none.message, /Sync Controller passed no service-account token; the controller's --token-request-audience/)
  t.match(none.message, /must include "vault"/)

  const other = (await obtainPodToken(
    specOf('openbao', new Map([['vault', { token: unbound('app') }]])),
    kube,
    sync,
  ).catch((e) => e)) as ProviderError
  t.equal(other.code, 'NO_POD_TOKEN')
  t.match(other.message, /passed service-account tokens for audiences "vault" but not for audience "openbao"/)
  t.match(other.message, /--token-request-audience \(its chart's tokenRequestAudience\) must include "openbao"/)
  t.same(asked, [], 'the Kubernetes API was never asked, even with a client at hand')

  const foreign = (await obtainPodToken(
    specOf('vault', new Map([['vault', { token: unbound('other') }]])),
    kube,
    sync,
  ).catch((e) => e)) as ProviderError
  t.equal(foreign.code, 'POD_TOKEN_MISMATCH', 'a token of another service account is refused as on a node')
  const bound = signServiceAccountJwt({
    namespace: 'ns',
    serviceAccount: 'app',
    podName: 'controller-0',
    podUid: 'uid-c',
    audience: 'vault',
    issuedAtSec: NOW / 1000,
  })
  const podBound = (await obtainPodToken(specOf('vault', new Map([['vault', { token: bound }]])), kube, sync).catch(
    (e) => e,
  )) as ProviderError
  t.equal(podBound.code, 'POD_TOKEN_MISMATCH', 'a token bound to some pod names a pod this Mount is not for')
})
