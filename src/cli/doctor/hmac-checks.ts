/** The object-version HMAC key: the key file, or the Kubernetes Secret. */
import { readFile } from 'node:fs/promises'
import type { ProviderConfig } from '../../config/config.js'
import { HMAC_KEY_BYTES, HMAC_SECRET_KEY } from '../../hmac/hmac-key.js'
import { KubeClient } from '../../kube/client.js'
import type { CheckResult } from './check.js'

export async function hmacChecks(
  config: ProviderConfig,
  namespaceOverride: string | undefined,
): Promise<CheckResult[]> {
  const title = 'object-version HMAC key'
  if (config.hmacKeyFile) {
    const buf = await readFile(config.hmacKeyFile).catch((err: NodeJS.ErrnoException) => err)
    if (buf instanceof Error) {
      const code = (buf as NodeJS.ErrnoException).code
      return [
        {
          id: 'hmac.key',
          title,
          status: code === 'ENOENT' ? 'warn' : 'fail',
          detail: `key file ${config.hmacKeyFile}: ${code}`,
          fix:
            code === 'ENOENT'
              ? 'the provider creates it at the first Mount; make its directory writable and persistent'
              : 'make the key file readable by the provider',
        },
      ]
    }
    return buf.length >= HMAC_KEY_BYTES
      ? [
          {
            id: 'hmac.key',
            title,
            status: 'pass',
            detail: `key file ${config.hmacKeyFile} holds a ${buf.length}-byte key`,
          },
        ]
      : [
          {
            id: 'hmac.key',
            title,
            status: 'fail',
            detail: `key file ${config.hmacKeyFile} holds ${buf.length} bytes`,
            fix: `remove it; the provider writes a new ${HMAC_KEY_BYTES}-byte key (object versions change once)`,
          },
        ]
  }
  const kube = await KubeClient.discover({
    apiUrl: config.kube.apiUrl,
    serviceAccountDir: config.kube.serviceAccountDir,
    env: process.env,
  })
  if (!kube) {
    return [
      {
        id: 'hmac.key',
        title,
        status: 'skip',
        detail: 'no Kubernetes API (not in a cluster; use --kube-api-url, e.g. behind kubectl proxy)',
      },
    ]
  }
  try {
    const namespace = namespaceOverride ?? (await kube.ownNamespace(process.env))
    const where = `Secret ${namespace}/${config.hmacSecretName}`
    const data = await kube.getSecret(namespace, config.hmacSecretName)
    if (!data) {
      return [
        {
          id: 'hmac.key',
          title,
          status: 'warn',
          detail: `${where} does not exist yet`,
          fix: 'the first provider that mounts creates it; grant its ServiceAccount get and create on secrets in its namespace',
        },
      ]
    }
    const key = data.get(HMAC_SECRET_KEY)
    if (!key || key.length < HMAC_KEY_BYTES) {
      return [
        {
          id: 'hmac.key',
          title,
          status: 'fail',
          detail: `${where} has no ${HMAC_KEY_BYTES}-byte "${HMAC_SECRET_KEY}"`,
          fix: `delete the Secret; the provider recreates it (object versions change once)`,
        },
      ]
    }
    return [{ id: 'hmac.key', title, status: 'pass', detail: `${where} holds a ${key.length}-byte key` }]
  } catch (err) {
    return [
      {
        id: 'hmac.key',
        title,
        status: 'fail',
        detail: err instanceof Error ? err.message : String(err),
        fix: "grant the provider's ServiceAccount get (and create) on the HMAC Secret; check -hmac-secret-name",
      },
    ]
  } finally {
    kube.close()
  }
}
