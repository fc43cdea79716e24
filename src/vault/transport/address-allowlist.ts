/**
 * Which Vault addresses a Mount may send a pod's token to.
 *
 * Any SecretProviderClass, and any pod through its volumeAttributes, can name
 * a `vaultAddress`; the provider would log in there with the pod's JWT. With
 * `-vault-addr-allowlist` set, only the listed addresses are used and any
 * other fails the Mount with PERMISSION_DENIED before a token is obtained or
 * sent. Unset (the default), every address is allowed, as before.
 *
 * Entries are compared after the same normalisation as `vaultAddress`
 * (scheme and host lower-cased, default port dropped, no trailing slash):
 * `https://vault.example:8200`, `unix:///run/vault/agent.sock`, or a host
 * wildcard `https://*.vault.svc:8200` (one or more labels in place of `*`).
 */
import { ProviderError, q } from '../../errors.js'
import { normaliseVaultAddress } from '../../config/vault-address.js'

interface Entry {
  exact?: string
  /** For `scheme://*.suffix[:port][/path]`: the parts around the wildcard. */
  scheme?: string
  hostSuffix?: string
  rest?: string
}

export interface AddressAllowlistOptions {
  /** Told about every Mount that check() lets through only because no list is configured (a metric). */
  onUnrestricted?: () => void
}

export class AddressAllowlist {
  private readonly entries: Entry[]
  private readonly onUnrestricted: (() => void) | undefined
  readonly raw: readonly string[]

  /** Throws an Error naming the entry when one is not a valid address. */
  constructor(entries: readonly string[], opts: AddressAllowlistOptions = {}) {
    this.raw = entries
    this.onUnrestricted = opts.onUnrestricted
    this.entries = entries.map((e) => {
      const normal = normaliseVaultAddress(e, '-vault-addr-allowlist entry', (message) => new Error(message))
      const m = /^(https?:)\/\/\*\.([^/:]+)(.*)$/.exec(normal)
      if (m) return { scheme: m[1]!, hostSuffix: `.${m[2]!}`, rest: m[3]! }
      if (normal.includes('*'))
        throw new Error(`-vault-addr-allowlist entry ${q(e)}: only a leading "*." host wildcard is allowed`)
      return { exact: normal }
    })
  }

  /** True when no list was configured: every address is allowed. */
  get allowsAny(): boolean {
    return this.entries.length === 0
  }

  allows(address: string): boolean {
    if (this.entries.length === 0) return true
    return this.entries.some((e) => {
      if (e.exact !== undefined) return e.exact === address
      const m = /^(https?:)\/\/([^/:]+)(.*)$/.exec(address)
      if (!m || m[1] !== e.scheme || m[3] !== e.rest) return false
      const host = m[2]!
      return host.endsWith(e.hostSuffix!) && host.length > e.hostSuffix!.length
    })
  }

  /** Throws PERMISSION_DENIED naming the address, where it came from and what is allowed. */
  check(address: string): void {
    if (this.entries.length === 0) {
      this.onUnrestricted?.()
      return
    }
    if (this.allows(address)) return
    throw new ProviderError(
      'VAULT_ADDRESS_NOT_ALLOWED',
      `Vault address ${q(address)} (parameter vaultAddress, or -vault-addr) is not in the provider's -vault-addr-allowlist (${this.raw.map((r) => q(r)).join(', ')}); the pod's token was not sent`,
    )
  }
}
