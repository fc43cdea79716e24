/**
 * The syntax of a Vault address and of a Vault auth mount path, shared by
 * the daemon's flags (-vault-addr, -vault-addr-allowlist, -vault-mount,
 * checked at start-up) and the SecretProviderClass parameters (checked per
 * Mount, request/parse-request.ts). Each caller supplies the error type
 * (`fail`): a ConfigError at start-up, a ProviderError in a Mount; the texts
 * are the same.
 */
import { q } from '../errors.js'

/** An address as it may be shown in an error: without user-info, query or fragment, which can hold credentials. */
export function displayAddress(raw: string): string {
  return q(raw.replace(/\/\/[^/@]*@/, '//…@').replace(/[?#].*$/, ''))
}

/**
 * Accepts http(s):// and unix:// (a Vault Agent socket); returns it without a
 * trailing slash. `what` names the field in the error.
 */
export function normaliseVaultAddress(raw: string, what: string, fail: (message: string) => Error): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw fail(`${what} ${displayAddress(raw)} is not a URL such as https://vault.example:8200`)
  }
  if (url.username || url.password) throw fail(`${what} must not carry credentials`)
  if (url.search || url.hash) throw fail(`${what} ${displayAddress(raw)} must not have a query or fragment`)
  if (url.protocol === 'unix:') {
    if (url.pathname === '' || url.pathname === '/') throw fail(`${what} ${displayAddress(raw)} names no socket path`)
    return `unix://${url.pathname}`
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw fail(`${what} ${displayAddress(raw)} must start with https://, http:// or unix://`)
  }
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`
}

/** An auth mount path without surrounding slashes, or undefined when `raw` is not one (e.g. "kubernetes", "jwt"). */
export function normaliseAuthMount(raw: string): string | undefined {
  const mount = raw.replace(/^\/+|\/+$/g, '')
  if (
    mount === '' ||
    !/^[A-Za-z0-9_.\-/]+$/.test(mount) ||
    mount.split('/').some((s) => s === '' || s === '..' || s === '.')
  ) {
    return undefined
  }
  return mount
}

/**
 * Why `raw` cannot be a Vault namespace, or undefined when it can. It travels as the
 * X-Vault-Namespace header: visible ASCII only (no spaces, controls, CR/LF or non-ASCII text, which
 * an HTTP header cannot carry as it is), path segments separated by single slashes.
 */
export function namespaceProblem(raw: string): string | undefined {
  if (!/^[\x21-\x7e]+$/.test(raw))
    return 'may hold only visible ASCII characters (no spaces, controls or non-ASCII letters)'
  if (raw.split('/').some((s, i, all) => (s === '' && i !== 0 && i !== all.length - 1) || s === '.' || s === '..')) {
    return 'must be a path of namespace names such as "team-a" or "admin/team-a"'
  }
  return undefined
}

/**
 * Why `raw` cannot be the TLS server name (SNI, and the name Vault's certificate is checked
 * against), or undefined when it can: a DNS name or an IPv4 address.
 */
export function serverNameProblem(raw: string): string | undefined {
  return /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?$/.test(raw)
    ? undefined
    : 'must be a DNS name such as "vault.example.com"'
}
