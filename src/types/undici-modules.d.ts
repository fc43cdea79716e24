// The three undici modules src/http/undici.ts imports directly (see there for why), typed as
// the package's own declarations type them.
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici'
  const PoolClass: typeof Pool
  export default PoolClass
}

declare module 'undici/lib/core/connect.js' {
  import type { buildConnector } from 'undici'
  const build: typeof buildConnector
  export default build
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici'
  /** Dispatcher.prototype.request, called with the dispatcher as `this`. */
  function request(this: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>
  export default request
}
