/**
 * The composition root: builds every piece from the configuration and wires
 * them. The only module that knows all the others.
 */
import type { ProviderConfig } from './config/config.js'
import { ephemeralKey, fileKey, kubernetesSecretKey, type HmacKeySource } from './hmac/hmac-key.js'
import { KubeClient } from './kube/client.js'
import { MountService } from './mount/service.js'
import type { Logger } from './observability/logger.js'
import { ProviderServer } from './server/grpc-server.js'
import { SessionPool } from './vault/pool.js'

export interface Provider {
  mountService: MountService
  server: ProviderServer
  hmacKey: HmacKeySource
  close(graceMs: number): Promise<void>
}

async function chooseHmacKey(
  config: ProviderConfig,
  kube: KubeClient | undefined,
  env: NodeJS.ProcessEnv,
  logger: Logger,
): Promise<HmacKeySource> {
  if (config.hmacKeyFile) return fileKey(config.hmacKeyFile)
  if (kube) return kubernetesSecretKey(kube, await kube.ownNamespace(env), config.hmacSecretName)
  logger.warn(
    'no Kubernetes API and no -hmac-key-file: object versions use a key that lives only as long as this process',
  )
  return ephemeralKey()
}

export async function buildProvider(config: ProviderConfig, logger: Logger, env: NodeJS.ProcessEnv): Promise<Provider> {
  const kube = await KubeClient.discover({
    apiUrl: config.kube.apiUrl,
    serviceAccountDir: config.kube.serviceAccountDir,
    env,
  })
  const hmacKey = await chooseHmacKey(config, kube, env, logger)
  const pool = new SessionPool(config.cacheSize, logger)
  const mountService = new MountService({ pool, kube, hmacKey, logger, vaultDefaults: config.vault })
  const server = new ProviderServer({
    socketPath: config.endpoint,
    mountService,
    mountTimeoutMs: config.mountTimeoutMs,
    logger,
  })
  return {
    mountService,
    server,
    hmacKey,
    async close(graceMs: number) {
      await server.stop(graceMs)
      pool.close()
      kube?.close()
    },
  }
}
