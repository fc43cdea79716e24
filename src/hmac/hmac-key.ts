/**
 * The key behind object versions. In a cluster it lives in an immutable
 * Kubernetes Secret shared by every node (first writer wins, the others read
 * it); outside a cluster, in a local file. Read once, then kept in memory:
 * the API server is not asked on every Mount.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile } from 'node:fs/promises'
import path from 'node:path'
import { ProviderError } from '../errors.js'
import type { KubeClient } from '../kube/client.js'
import { Deadline } from '../util/deadline.js'
import { SharedCall } from '../util/shared-call.js'
import type { Time } from '../util/time.js'

/** How long a caller without a deadline of its own (the CLI) waits for the key. */
const DEFAULT_KEY_WAIT_MS = 60_000

export const HMAC_KEY_BYTES = 32
export const HMAC_SECRET_KEY = 'key'

export interface HmacKeySource {
  /** Where the key comes from, for logs. */
  readonly description: string
  /** `deadline`: the Mount's; its caller gives up on it (and its signal) while a shared load goes on for others. */
  get(deadline?: Deadline): Promise<Buffer>
}

/**
 * Caches the first successful answer and shares one in-flight attempt (util/shared-call.ts): each caller
 * waits on its own deadline, and the load's Kubernetes calls stop once nobody waits. Failures are retried
 * next time.
 */
function memoise(
  where: string,
  load: (deadline: Deadline) => Promise<Buffer>,
  time: Time,
): (deadline?: Deadline) => Promise<Buffer> {
  let key: Buffer | undefined
  let inFlight: SharedCall<Buffer> | undefined
  const giveUp = (cancelled: boolean): ProviderError =>
    new ProviderError(
      cancelled ? 'CANCELLED' : 'DEADLINE_EXCEEDED',
      cancelled
        ? `${where}: the driver cancelled the Mount before the key was read`
        : `${where}: the key was not read before the Mount's deadline`,
    )
  return (deadline = Deadline.in(DEFAULT_KEY_WAIT_MS, undefined, time)) => {
    if (key) return Promise.resolve(key)
    if (inFlight?.joinable) return inFlight.join(deadline, giveUp)
    const call = new SharedCall<Buffer>(async (shared) => {
      const k = await load(shared)
      key = k
      return k
    }, time)
    inFlight = call
    const joined = call.join(deadline, giveUp)
    void call.done.then(() => {
      if (inFlight === call) inFlight = undefined
    })
    return joined
  }
}

function checkKey(buf: Buffer | undefined, where: string): Buffer {
  if (!buf || buf.length < HMAC_KEY_BYTES) {
    throw new ProviderError('HMAC_KEY_UNAVAILABLE', `${where} holds no ${HMAC_KEY_BYTES}-byte key`)
  }
  return buf
}

export function kubernetesSecretKey(kube: KubeClient, namespace: string, name: string, time: Time): HmacKeySource {
  const where = `HMAC key Secret ${namespace}/${name} (key "${HMAC_SECRET_KEY}")`
  const load = async (deadline: Deadline): Promise<Buffer> => {
    const existing = await kube.getSecret(namespace, name, deadline)
    if (existing) return checkKey(existing.get(HMAC_SECRET_KEY), where)
    const created = await kube.createSecret(
      namespace,
      name,
      new Map([[HMAC_SECRET_KEY, randomBytes(HMAC_KEY_BYTES)]]),
      deadline,
    )
    // Whether we won the race or not, the stored key is the one every node uses.
    if (!created) await new Promise((r) => setTimeout(r, 50))
    const stored = await kube.getSecret(namespace, name, deadline)
    return checkKey(stored?.get(HMAC_SECRET_KEY), where)
  }
  return { description: `Kubernetes Secret ${namespace}/${name}`, get: memoise(where, load, time) }
}

export function fileKey(file: string, time: Time): HmacKeySource {
  const where = `HMAC key file ${file}`
  const load = async (): Promise<Buffer> => {
    try {
      return checkKey(await readFile(file), where)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        if (err instanceof ProviderError) throw err
        throw new ProviderError(
          'HMAC_KEY_UNAVAILABLE',
          `${where} cannot be read (${(err as NodeJS.ErrnoException).code})`,
        )
      }
    }
    await mkdir(path.dirname(file), { recursive: true })
    try {
      const handle = await open(file, 'wx', 0o600)
      await handle.writeFile(randomBytes(HMAC_KEY_BYTES))
      await handle.close()
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new ProviderError(
          'HMAC_KEY_UNAVAILABLE',
          `${where} cannot be created (${(err as NodeJS.ErrnoException).code})`,
        )
      }
      // Another process is creating it: give it a moment to finish writing.
      await new Promise((r) => setTimeout(r, 50))
    }
    return checkKey(await readFile(file), where)
  }
  return { description: `file ${file}`, get: memoise(where, load, time) }
}

/**
 * A key file that must be there, e.g. mounted from a Secret (-mode=sync-controller): never created,
 * since a key made inside one container would differ from every other replica's.
 */
export function mountedFileKey(file: string, time: Time): HmacKeySource {
  const where = `HMAC key file ${file}`
  const load = async (): Promise<Buffer> => {
    try {
      return checkKey(await readFile(file), where)
    } catch (err) {
      if (err instanceof ProviderError) throw err
      const code = (err as NodeJS.ErrnoException).code
      throw new ProviderError(
        'HMAC_KEY_UNAVAILABLE',
        code === 'ENOENT'
          ? `${where} does not exist: mount the key from a Secret there (it is never created in this mode)`
          : `${where} cannot be read (${code})`,
      )
    }
  }
  return { description: `mounted file ${file}`, get: memoise(where, load, time) }
}

/** Versions stay stable for the life of the process only: a warning is logged at start-up. */
export function ephemeralKey(): HmacKeySource {
  const key = randomBytes(HMAC_KEY_BYTES)
  return { description: 'ephemeral in-memory key', get: () => Promise.resolve(key) }
}
