/**
 * The daemon: `node dist/daemon.js -endpoint=/provider/vault.sock …` (this module and what it
 * imports, joined by scripts/bundle.mjs), or `vault-csi-provider serve …`, which calls runDaemon.
 */
import { realpathSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildProvider } from './app.js'
import { ConfigError, loadConfig } from './config/config.js'
import { createLogger } from './observability/logger.js'
import { stackMapper } from './observability/stack-map.js'
import { PACKAGE_VERSION, RUNTIME_NAME } from './package-info.js'

/** Kubernetes' default terminationGracePeriodSeconds is 30 s; leave time to exit. */
export const SHUTDOWN_GRACE_MS = 25_000

/**
 * What to do when the socket cannot be created for lack of permission: the driver's provider
 * directory belongs to root, and this image runs as uid 65532 unless the manifest says otherwise
 * (vault-helm, for one, sets no securityContext).
 */
export async function socketPermissionHint(endpoint: string, err: unknown): Promise<string> {
  const text = err instanceof Error ? err.message : String(err)
  if (!/\b(EACCES|EPERM)\b/.test(text)) return ''
  const dir = path.dirname(endpoint)
  const st = await stat(dir).catch(() => undefined)
  const owner = st
    ? ` (owner uid ${st.uid}, group ${st.gid}, mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')})`
    : ''
  return (
    `. The provider runs as uid ${process.getuid?.() ?? '?'} and may not create its socket in ${dir}${owner}. ` +
    'Either let the socket directory be prepared for it (the init step of daemonset/ and daemonset/chart), ' +
    'or run it as root like the reference provider (vault-helm: --set csi.daemonSet.securityContext.container.runAsUser=0). ' +
    'See docs/configuration.md, "Running as non-root"'
  )
}

export async function runDaemon(argv: readonly string[]): Promise<void> {
  let config
  try {
    config = loadConfig(argv, process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${RUNTIME_NAME}: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
  if (config.showVersion) {
    process.stdout.write(`${RUNTIME_NAME} ${PACKAGE_VERSION}\n`)
    return
  }
  // Stacks from the bundle are led back to src/ when they are logged (observability/stack-map.ts).
  const logger = createLogger(config.logLevel, undefined, stackMapper(import.meta.url))
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'))

  const provider = await buildProvider(config, logger, process.env)
  // State handover (src/handover/): reach a running predecessor before taking its sockets over.
  const approach = await provider.handover?.approach()
  for (const [i, server] of provider.servers.entries()) {
    const endpoint = config.endpoints[i]!.path
    try {
      await server.start()
    } catch (err) {
      approach?.abandon()
      const message = err instanceof Error ? err.message : String(err)
      const failure = new Error(`cannot serve ${endpoint}: ${message}${await socketPermissionHint(endpoint, err)}`, {
        cause: err,
      })
      // The log line carries the stack, with src/ files and lines.
      logger.error({ err: failure }, 'cannot serve the provider socket')
      throw failure
    }
  }
  provider.handover
    ?.takeOver(approach)
    .catch((err: unknown) => logger.error({ err }, 'state handover failed; the rest starts cold'))
  // The socket is the product: a health port that cannot be bound is reported, and the pod's probes fail.
  await provider.http
    .start()
    .catch((err: unknown) =>
      logger.error({ err, healthAddr: config.healthAddr }, 'cannot serve health and metrics over HTTP'),
    )
  logger.info({ hmacKey: provider.hmacKey.description, cacheSize: config.cacheSize }, 'provider ready')

  let stopping = false
  const shutdown = (signal: string): void => {
    if (stopping) return
    stopping = true
    logger.info({ signal, inFlight: provider.mountService.mountsInFlight }, 'shutting down')
    provider.close(SHUTDOWN_GRACE_MS).then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'error during shutdown')
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
}

/** True when this file is the process's entry (not imported by the CLI). */
function isEntryPoint(): boolean {
  const entry = process.argv[1]
  if (entry === undefined) return false
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

if (isEntryPoint()) {
  runDaemon(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${RUNTIME_NAME}: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}
