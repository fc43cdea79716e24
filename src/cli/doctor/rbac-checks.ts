import type { ProviderConfig } from '../../config/config.js'
import { KubeClient } from '../../kube/client.js'
import type { CheckResult } from './check.js'

/**
 * The provider's RBAC, asked of the API server as the provider (SelfSubjectAccessReview):
 * what daemonset/base/rbac.yaml grants, and that it grants nothing more on Secrets.
 */
export async function rbacChecks(config: ProviderConfig): Promise<CheckResult[]> {
  const id = 'kube.rbac'
  const title = "the provider's RBAC"
  if (config.hmacKeyFile) return []
  const kube = await KubeClient.discover({
    apiUrl: config.kube.apiUrl,
    serviceAccountDir: config.kube.serviceAccountDir,
    env: process.env,
  })
  if (!kube) return [{ id, title, status: 'skip', detail: 'no Kubernetes API' }]
  try {
    const ns = await kube.ownNamespace(process.env)
    const name = config.hmacSecretName
    const [get, create, list, anyGet, tokens] = await Promise.all([
      kube.canI(ns, 'get', 'secrets', { name }),
      kube.canI(ns, 'create', 'secrets'),
      kube.canI(ns, 'list', 'secrets'),
      kube.canI('', 'get', 'secrets'),
      kube.canI('', 'create', 'serviceaccounts', { subresource: 'token' }),
    ])
    const tokenNote = tokens
      ? 'may request pod tokens (TokenRequest, daemonset/overlays/token-request)'
      : 'no TokenRequest (fine when the CSIDriver passes tokens: tokenRequests audience "vault")'
    if (!get) {
      return [
        {
          id,
          title,
          status: 'fail',
          detail: `may not get Secret ${ns}/${name}; ${tokenNote}`,
          fix: `apply daemonset/ (base/rbac.yaml: get on secrets named ${name}, create on secrets in ${ns}); with -hmac-secret-name, rename resourceNames there too`,
        },
      ]
    }
    const extra = [list ? `list secrets in ${ns}` : '', anyGet ? 'get every Secret of the cluster' : ''].filter(
      (x) => x !== '',
    )
    if (extra.length > 0) {
      return [
        {
          id,
          title,
          status: 'warn',
          detail: `more than it needs: ${extra.join(', ')}; ${tokenNote}`,
          fix: 'bind the provider only to the Role of daemonset/base/rbac.yaml (get on its one Secret, create in its namespace)',
        },
      ]
    }
    if (!create) {
      return [
        {
          id,
          title,
          status: 'warn',
          detail: `may get Secret ${ns}/${name} but not create Secrets in ${ns}; ${tokenNote}`,
          fix: 'fine once the Secret exists; otherwise grant create on secrets in this namespace (daemonset/base/rbac.yaml)',
        },
      ]
    }
    return [
      {
        id,
        title,
        status: 'pass',
        detail: `get Secret ${ns}/${name}, create Secrets in ${ns}, no other Secret access; ${tokenNote}`,
      },
    ]
  } catch (err) {
    return [
      {
        id,
        title,
        status: 'fail',
        detail: err instanceof Error ? err.message : String(err),
        fix: 'check --kube-api-url and the service-account directory (token, ca.crt)',
      },
    ]
  } finally {
    kube.close()
  }
}
