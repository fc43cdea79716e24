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
