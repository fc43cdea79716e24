/**
 * One TLS context per distinct TLS material. A context holds the parsed CA store, client certificate
 * and key (OpenSSL memory, outside the JS heap); given the files instead, Node builds a context for
 * every connection. Transports whose pods name copies of the same CA at different paths share one.
 */
import { createHash } from 'node:crypto'
import { createSecureContext, type SecureContext } from 'node:tls'
import { LRUCache } from 'lru-cache'
import { ProviderError, q } from '../../errors.js'
import type { TlsMaterial } from './tls-files.js'

/** As many as transports (MAX_TRANSPORTS): a context pushed out stays with the pools that use it. */
export const MAX_SECURE_CONTEXTS = 64

/** What undici's connector passes on to `tls.connect` for a connection with `material`. */
export interface TlsConnectOptions {
  secureContext: SecureContext
  servername?: string
  rejectUnauthorized: boolean
}

function digest(material: TlsMaterial): string {
  const h = createHash('sha256')
  for (const part of [...(material.ca ?? []), material.cert, material.key]) {
    // Each part with its length in front: two lists of parts never hash alike.
    const bytes = part ?? Buffer.alloc(0)
    h.update(`${bytes.length}:`).update(bytes)
  }
  return h.digest('hex')
}

export class SecureContexts {
  private readonly contexts = new LRUCache<string, SecureContext>({ max: MAX_SECURE_CONTEXTS })

  /** The connect options of `material` for Vault at `address` (named in the error when the files cannot be used). */
  connectOptions(material: TlsMaterial, address: string): TlsConnectOptions {
    const key = digest(material)
    let context = this.contexts.get(key)
    if (context === undefined) {
      try {
        context = createSecureContext({ ca: material.ca, cert: material.cert, key: material.key })
      } catch (err) {
        throw new ProviderError(
          'BAD_PARAMETER',
          `the TLS files for Vault at ${q(address)} cannot be used (vaultCACertPath, vaultCADirectory, ` +
            `vaultTLSClientCertPath, vaultTLSClientKeyPath, or the -vault-tls-* flags): ${q(err instanceof Error ? err.message : String(err))}`,
        )
      }
      this.contexts.set(key, context)
    }
    return {
      secureContext: context,
      rejectUnauthorized: material.rejectUnauthorized,
      ...(material.servername !== undefined ? { servername: material.servername } : {}),
    }
  }

  /** Contexts kept (for tests). */
  get size(): number {
    return this.contexts.size
  }
}
