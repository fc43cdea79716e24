// Vault transports outside the composition root, for tests of the transport itself: the flags'
// default limits, no egress proxy unless a test names one, nobody observing, every address allowed
// unless a test says otherwise. The daemon builds its transports in src/app.ts (buildVaultTransports).
import { DEFAULT_MAX_TLS_FILE_BYTES } from '../../src/config/config.js'
import type { VaultConnection } from '../../src/request/types.js'
import { SecureContexts } from '../../src/vault/transport/secure-contexts.js'
import {
  NO_OBSERVER,
  NO_PROXY_SETTINGS,
  VaultTransport,
  type VaultTransportOptions,
} from '../../src/vault/transport/transport.js'

export const ANY_ADDRESS_ALLOWED = { allows: (): boolean => true }

export function testTransportOptions(
  maxResponseBytes: number,
  more: Partial<VaultTransportOptions> = {},
): VaultTransportOptions {
  return {
    maxTlsFileBytes: DEFAULT_MAX_TLS_FILE_BYTES,
    tlsFileDirs: [],
    allowlist: ANY_ADDRESS_ALLOWED,
    maxResponseBytes,
    observer: NO_OBSERVER,
    proxy: NO_PROXY_SETTINGS,
    ...more,
  }
}

/** One transport with its own TLS contexts (the registry shares them between its transports). */
export function testTransport(conn: VaultConnection, opts: VaultTransportOptions): Promise<VaultTransport> {
  return VaultTransport.create(conn, opts, new SecureContexts())
}
