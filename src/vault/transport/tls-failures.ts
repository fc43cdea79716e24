/**
 * What a TLS failure of a Vault connection means, by its code (Node's, OpenSSL's and undici's): the
 * hint a Mount's error gives and the fix `doctor` proposes.
 */

/** One entry of the table: what a Mount's error says (`hint`) and what `doctor` proposes (`fix`). */
interface TlsEntry {
  hint: string
  fix: string
}

const UNTRUSTED_FIX =
  "Vault's certificate is not signed by a CA the provider trusts: set -vault-tls-ca-cert (VAULT_CACERT) or the " +
  'SecretProviderClass parameter vaultCACertPath to the CA that signed it'
const PLAIN_HTTP_FIX = 'the address speaks plain HTTP: use http:// in -vault-addr, or enable TLS on Vault'

const TLS_TABLE: Readonly<Record<string, TlsEntry>> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: {
    hint: 'Vault presents a self-signed certificate; set vaultCACertPath',
    fix: UNTRUSTED_FIX,
  },
  SELF_SIGNED_CERT_IN_CHAIN: {
    hint: 'Vault certificate chain ends in an unknown CA; set vaultCACertPath',
    fix: UNTRUSTED_FIX,
  },
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: {
    hint: 'Vault certificate is not signed by a trusted CA; set vaultCACertPath',
    fix: UNTRUSTED_FIX,
  },
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: {
    hint: 'Vault certificate is not signed by a trusted CA; set vaultCACertPath',
    fix: UNTRUSTED_FIX,
  },
  UNABLE_TO_GET_ISSUER_CERT: {
    hint: 'Vault certificate is not signed by a trusted CA; set vaultCACertPath',
    fix: UNTRUSTED_FIX,
  },
  CERT_HAS_EXPIRED: {
    hint: 'Vault TLS certificate has expired',
    fix: "Vault's certificate has expired: renew it on the Vault servers",
  },
  CERT_NOT_YET_VALID: {
    hint: 'Vault TLS certificate is not valid yet (check the clocks)',
    fix: UNTRUSTED_FIX,
  },
  ERR_TLS_CERT_ALTNAME_INVALID: {
    hint: 'Vault certificate does not match the address; set vaultTLSServerName',
    fix:
      "Vault's certificate does not name this address: use the name in the certificate in -vault-addr / " +
      'vaultAddress, or set -vault-tls-server-name / vaultTLSServerName',
  },
  EPROTO: {
    hint: 'TLS handshake failed (is the address http:// instead of https://?)',
    fix: PLAIN_HTTP_FIX,
  },
  ERR_SSL_WRONG_VERSION_NUMBER: {
    hint: 'TLS handshake failed (is the address http:// instead of https://?)',
    fix: PLAIN_HTTP_FIX,
  },
}

export function isTlsErrorCode(code: string | undefined): boolean {
  return code !== undefined && Object.hasOwn(TLS_TABLE, code)
}

/** What a Mount's error says about a TLS failure; undefined for codes that are not TLS. */
export function tlsHint(code: string | undefined): string | undefined {
  return code !== undefined && Object.hasOwn(TLS_TABLE, code) ? TLS_TABLE[code]!.hint : undefined
}

/** What `doctor` proposes for a TLS failure (the untrusted-CA advice for any code it does not know). */
export function tlsFix(code: string | undefined): string {
  return code !== undefined && Object.hasOwn(TLS_TABLE, code) ? TLS_TABLE[code]!.fix : UNTRUSTED_FIX
}
