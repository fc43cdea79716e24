/**
 * The parts of undici the provider uses — a connection pool, its TLS/TCP/unix
 * connector and the request call — imported from the package's own modules.
 *
 * Why not `from 'undici'`: the package's index also loads fetch, WebSocket,
 * EventSource, caches, mocks and proxy agents. On every node, at every start,
 * that cost about 85 ms of CPU and 8 MiB of RSS that the daemon never used
 * (measured: import of the index 124–135 ms CPU and 59 MiB, these three
 * 37–51 ms and 51 MiB). The version is pinned in package-lock.json and the
 * transport's tests run against real servers, so an upgrade that moves these
 * files fails loudly.
 */
import type { Dispatcher, Pool as PoolType } from 'undici'
import PoolClass from 'undici/lib/dispatcher/pool.js'
import buildConnectorFn from 'undici/lib/core/connect.js'
import requestFn from 'undici/lib/api/api-request.js'

export type Pool = PoolType
export const Pool = PoolClass
export const buildConnector = buildConnectorFn

/** `pool.request(options)`, the promise form, without the index that adds it to every dispatcher. */
export function poolRequest(pool: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
  return requestFn.call(pool, options)
}
