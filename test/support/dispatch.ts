// One interceptor of the Vault HTTP path (src/vault/transport/) at a time, over a real undici
// Pool to a real server on 127.0.0.1: what a call dispatched through it ends with.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import { Pool, type Dispatcher } from 'undici'

export interface Server {
  url: string
  /** Request paths as the server got them. */
  seen: string[]
  /** Connections the server accepted. */
  connections(): number
}

/** A server of the test's own, closed at teardown. */
export async function serve(
  t: Test,
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<Server> {
  const seen: string[] = []
  let connections = 0
  const s = http.createServer((req, res) => {
    seen.push(req.url ?? '')
    handler(req, res)
  })
  s.on('connection', () => connections++)
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    s.closeAllConnections()
    return new Promise<void>((r) => s.close(() => r()))
  })
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen, connections: () => connections }
}

/** A pool to `url` with `interceptors` composed (the first nearest the pool), destroyed at teardown. */
export function composed(
  t: Test,
  url: string,
  interceptors: Dispatcher.DispatcherComposeInterceptor[],
  options: Pool.Options = {},
): Dispatcher {
  const pool = new Pool(url, options)
  t.teardown(() => pool.destroy())
  return pool.compose(...interceptors)
}

export type Outcome =
  { status: number; body: string; headers: Record<string, unknown> } | { error: Error & { code?: string } }

/** Dispatches one call and collects what comes up: the answer, or the one error. */
export function outcome(dispatcher: Dispatcher, opts: Partial<Dispatcher.DispatchOptions> & object): Promise<Outcome> {
  return new Promise((resolve) => {
    let status = 0
    let headers: Record<string, unknown> = {}
    const chunks: Buffer[] = []
    dispatcher.dispatch({ path: '/v1/x', method: 'GET', ...opts } as Dispatcher.DispatchOptions, {
      onRequestStart: () => undefined,
      onResponseStart: (_c, s, h) => {
        status = s
        headers = h
      },
      onResponseData: (_c, chunk) => void chunks.push(chunk),
      onResponseEnd: () => resolve({ status, headers, body: Buffer.concat(chunks).toString('utf8') }),
      onResponseError: (_c, error) => resolve({ error }),
    })
  })
}

/** The error of an outcome that must have failed. */
export function failed(o: Outcome): Error & { code?: string; kind?: string } {
  if (!('error' in o)) throw new Error(`expected a failure, got ${o.status}`)
  return o.error
}
