/**
 * The transports of the process, one per connection (connectionKey), bounded; and the one way a
 * session calls through them (callThrough), which follows a standby's redirect at most once, where
 * the operator's allow-list says it may. The composition root builds one registry, with the
 * options and TLS contexts every transport of the process shares.
 */
import type { VaultConnection } from '../../request/types.js'
import { FairCache } from '../../util/fair-cache.js'
import type { AddressAllowlist } from './address-allowlist.js'
import { VaultRedirect } from './call-errors.js'
import type { SecureContexts } from './secure-contexts.js'
import {
  TransportClosed,
  VaultTransport,
  type VaultAnswer,
  type VaultCall,
  type VaultCaller,
  type VaultTransportOptions,
} from './transport.js'

export const MAX_TRANSPORTS = 64
/** Pools one namespace holds at most: what its pools and their connections hold in memory is bounded by this. */
export const MAX_TRANSPORTS_PER_TENANT = 16
/** The tenant of the provider's own calls (the breaker's probes of the default address, /health/vault). */
export const PROVIDER_TENANT = ''

/**
 * What makes two connections different: the address, and the TLS settings only where TLS is spoken
 * (an `http://` or `unix://` address ignores them, so they must not make another pool).
 */
export function connectionKey(conn: VaultConnection): string {
  if (!conn.address.startsWith('https://')) return JSON.stringify([conn.address])
  const t = conn.tls
  return JSON.stringify([
    conn.address,
    t.caCertPath ?? '',
    t.caDirectory ?? '',
    t.serverName ?? '',
    t.clientCertPath ?? '',
    t.clientKeyPath ?? '',
    t.skipVerify,
  ])
}

/** Where sessions and the breaker's probes get the transport of a connection. */
export interface TransportSource {
  /** `tenant`: the namespace whose Mount needs it (PROVIDER_TENANT for the provider's own calls). */
  get(conn: VaultConnection, tenant: string): Promise<VaultCaller>
  /** Whether a call to `from` that a standby redirected may be sent on, token and all, to `to` (absent: never). */
  followsRedirect?(from: string, to: string): boolean
}

/**
 * Whether a standby's redirect from `from` may be followed to `to`: only when the operator set
 * -vault-addr-allowlist (`targets`, undefined otherwise) and it names `to`, and never from https
 * to http. Anything else is never followed: the pod's token goes nowhere the operator did not name.
 */
export function followsRedirect(targets: Pick<AddressAllowlist, 'allows'> | undefined, from: string, to: string) {
  if (targets === undefined) return false
  if (from.startsWith('https://') && !to.startsWith('https://')) return false
  return targets.allows(to)
}

/** One call through the transport `source` has for `conn` now; a pool closed meanwhile is looked up again. */
async function callOnce(source: TransportSource, conn: VaultConnection, call: VaultCall): Promise<VaultAnswer> {
  try {
    return await (await source.get(conn, call.tenant)).call(call)
  } catch (err) {
    if (!(err instanceof TransportClosed)) throw err
    return (await source.get(conn, call.tenant)).call(call)
  }
}

/**
 * One call through the transport `source` has for `conn` now, held by the call's tenant: a pool
 * closed to make room between the lookup and the call is looked up again (its replacement is
 * built), so a session never holds a closed pool. A standby's redirect (VaultRedirect) is sent on
 * once, to the transport of its target with the same TLS settings, when `source` says it may
 * (followsRedirect); a redirect from there is not followed again.
 */
export async function callThrough(
  source: TransportSource,
  conn: VaultConnection,
  call: VaultCall,
): Promise<VaultAnswer> {
  try {
    return await callOnce(source, conn, call)
  } catch (err) {
    if (!(err instanceof VaultRedirect) || call.redirected === true) throw err
    if (source.followsRedirect?.(conn.address, err.target) !== true) throw err
    return callOnce(source, { ...conn, address: err.target }, { ...call, redirected: true })
  }
}

/**
 * When a new transport needs room, the tenant holding the most gives up its least recently used
 * (util/fair-cache.ts), which finishes the calls under way and then closes; past
 * MAX_TRANSPORTS_PER_TENANT a namespace gives up its own. A namespace that names many addresses or
 * TLS variants pushes out only its own pools. Transports of the same TLS material share one TLS
 * context (secure-contexts.ts).
 */
export class TransportRegistry implements TransportSource {
  private readonly opts: VaultTransportOptions
  private readonly transports: FairCache<Promise<VaultTransport>>
  private readonly contexts: SecureContexts

  constructor(
    opts: VaultTransportOptions,
    contexts: SecureContexts,
    max = MAX_TRANSPORTS,
    maxPerTenant = MAX_TRANSPORTS_PER_TENANT,
  ) {
    this.opts = opts
    this.contexts = contexts
    this.transports = new FairCache<Promise<VaultTransport>>({
      maxEntries: max,
      maxEntriesPerTenant: maxPerTenant,
      onEvict: (p) => {
        p.then(
          (t) => t.retire(),
          () => undefined,
        )
      },
    })
  }

  followsRedirect(from: string, to: string): boolean {
    return followsRedirect(this.opts.redirectTargets, from, to)
  }

  get(conn: VaultConnection, tenant: string): Promise<VaultTransport> {
    const key = connectionKey(conn)
    let t = this.transports.get(key)
    if (!t) {
      t = VaultTransport.create(conn, this.opts, this.contexts)
      // A failed set-up (unreadable CA file) must not stay cached.
      t.catch(() => this.transports.delete(key))
      this.transports.set(tenant, key, t)
    }
    return t
  }

  /**
   * A transport with the registry's options outside its bounds, for one call of the provider's own
   * (the breaker's probe of an address only a Mount named): the caller closes it.
   */
  oneOff(conn: VaultConnection): Promise<VaultTransport> {
    return VaultTransport.create(conn, this.opts, this.contexts)
  }

  /** Pools held by `tenant` (for tests and metrics). */
  heldBy(tenant: string): number {
    return this.transports.sizeOf(tenant)
  }

  close(): void {
    for (const [, t] of this.transports.entries()) {
      t.then(
        (transport) => transport.close(),
        () => undefined,
      )
    }
    this.transports.clear()
  }
}
