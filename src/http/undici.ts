/**
 * The parts of undici the provider uses — a connection pool, its TLS/TCP/unix
 * connector and the request call — loaded (require()) from the package's own modules,
 * and only when a first call needs them.
 *
 * Why not `from 'undici'`: the package's index also loads fetch, WebSocket,
 * EventSource, caches, mocks and proxy agents. On every node, at every start,
 * that cost about 85 ms of CPU and 8 MiB of RSS that the daemon never used
 * (measured: import of the index 124–135 ms CPU and 59 MiB, these three
 * 37–51 ms and 51 MiB). The version is pinned in package-lock.json and the
 * transport's tests run against real servers, so an upgrade that moves these
 * files fails loudly.
 *
 * Why on first use: a node's daemon serves Mounts only when pods start, and
 * the socket must accept the driver's calls as soon as possible. The Vault
 * transports and the Kubernetes client build their pools on their first call
 * (both are async there) and keep them. Nothing is memoised here: Node's module
 * map is the cache, so a second loadUndici() costs a few resolved promises and
 * no module state of ours exists.
 */
import type { Dispatcher, Pool as PoolType, buildConnector as BuildConnector } from 'undici'
import type PoolModule from 'undici/lib/dispatcher/pool.js'
import type ConnectModule from 'undici/lib/core/connect.js'
import type RequestModule from 'undici/lib/api/api-request.js'
import { loadCommonJs } from '../util/libraries.js'

export type Pool = PoolType

export interface Undici {
  Pool: typeof PoolType
  buildConnector: typeof BuildConnector
  /** `pool.request(options)`, the promise form, without the index that adds it to every dispatcher. */
  request(pool: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>
}

export async function loadUndici(): Promise<Undici> {
  const Pool = loadCommonJs<typeof PoolModule>('undici/lib/dispatcher/pool.js')
  const buildConnector = loadCommonJs<typeof ConnectModule>('undici/lib/core/connect.js')
  const request = loadCommonJs<typeof RequestModule>('undici/lib/api/api-request.js')
  return { Pool, buildConnector, request: (dispatcher, options) => request.call(dispatcher, options) }
}
