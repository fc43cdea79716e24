/**
 * The connection guard: undici's connector with a check in front, given to every pool as its
 * `connect` option, so that it runs for every new connection whoever asks for it. A connection
 * goes to the transport's own host and port only (`origin`: Vault's, or the egress proxy's for a
 * connection to it), and only while the -vault-addr-allowlist admits the Vault address; anything
 * else fails with VAULT_ADDRESS_NOT_ALLOWED before a byte is sent. Redirects are never followed
 * (no-redirects.ts); this holds even if some code path tried.
 */
import { buildConnector } from 'undici'
import { ProviderError, q } from '../../errors.js'
import type { AddressAllowlist } from './address-allowlist.js'
import type { TlsConnectOptions } from './secure-contexts.js'

export interface GuardOptions {
  /** Checked on every new connection: the address the transport was built for must be allowed. */
  allowlist: Pick<AddressAllowlist, 'allows'>
}

/**
 * `options`: how undici connects (a unix socket, TLS); `connect`: how a connection is opened
 * once admitted (through an egress proxy), instead of straight to `origin` with `options`.
 */
export function guardedConnector(
  address: string,
  options: { socketPath?: string } | TlsConnectOptions,
  opts: GuardOptions,
  origin: string,
  connect?: buildConnector.connector,
): buildConnector.connector {
  const url = new URL(origin)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  const inner = connect ?? buildConnector({ ...options, keepAlive: true } as buildConnector.BuildOptions)
  return (connectOptions, callback) => {
    const wantHost = String(connectOptions.hostname ?? '').replace(/^\[|\]$/g, '')
    const wantPort = Number(connectOptions.port || (connectOptions.protocol === 'https:' ? 443 : 80))
    const refused =
      wantHost !== host || wantPort !== port
        ? `a connection to ${q(`${wantHost}:${String(wantPort)}`)} is not the transport's Vault address ${q(address)}`
        : !opts.allowlist.allows(address)
          ? `Vault address ${q(address)} is not in the provider's -vault-addr-allowlist`
          : undefined
    if (refused !== undefined) {
      const err = new ProviderError('VAULT_ADDRESS_NOT_ALLOWED', `${refused}; nothing was sent`)
      queueMicrotask(() => callback(err, null))
      return
    }
    inner(connectOptions, callback)
  }
}
