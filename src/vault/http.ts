/**
 * The HTTP call under node-vault, over node:http with the transport's agents.
 *
 * node-vault 0.12 hands each call to axios, but forwards only the method,
 * URL, headers, body, timeout and agents: maxRedirects, maxContentLength and
 * beforeRedirect never reach axios, which therefore follows redirects (with
 * the X-Vault-Token header and the login JWT) and buffers any body. node-vault
 * takes a replacement for that layer (its `request-promise` option); this is
 * it, with two rules axios could not be given per call:
 *
 * - Redirects are never followed. A 3xx answer fails the call with
 *   VAULT_REDIRECT_REFUSED naming only the target's origin; nothing is sent
 *   there. Vault standbys forward requests to the active node by default, so
 *   a redirect means a set-up that must name the active node (or a load
 *   balancer) in vaultAddress.
 * - A body larger than -max-vault-response-size is not read further: the
 *   stream is cut as soon as it passes the limit (or at once when
 *   Content-Length says so) and the call fails with VAULT_RESPONSE_TOO_LARGE.
 */
import http from 'node:http'
import https from 'node:https'
import { ProviderError, q } from '../errors.js'

/** The answer shape node-vault's response handling expects. */
export interface RawVaultResponse {
  statusCode: number
  body: unknown
  request: { path: string }
}

/** What node-vault passes down for each call (see node-vault/src/index.js, client.request). */
export interface RawVaultRequest {
  uri: string
  method: string
  headers?: Record<string, string>
  json?: unknown
  timeout?: number
  httpAgent?: http.Agent
  httpsAgent?: https.Agent
  /** A tighter cap than -max-vault-response-size for this call (token calls: MAX_TOKEN_ANSWER_BYTES). */
  maxResponseBytes?: number
}

export type VaultRequester = (options: RawVaultRequest) => Promise<RawVaultResponse>

export interface VaultHttpOptions {
  /** -max-vault-response-size */
  maxResponseBytes: number
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
/**
 * An error answer is only ever shown as a few hundred characters of its
 * `errors[]`: past this many bytes it is not read (nor parsed) further, so a
 * hostile Vault's megabytes of error text cost no more than a short one.
 */
export const MAX_ERROR_BODY_BYTES = 64 * 1024
/**
 * Login, renewal and revocation answers carry a token and its policies, a
 * few KiB at most: a larger one is a hostile or broken server, and reading
 * megabytes of it for every retried login would cost every other pod.
 */
export const MAX_TOKEN_ANSWER_BYTES = 64 * 1024
const MAX_ORIGIN_CHARS = 200

/** scheme://host:port of a Location header (relative ones resolve against the request), never its path or query. */
export function redirectOrigin(location: string | undefined, requestUrl: string): string {
  if (location === undefined || location === '') return 'no Location'
  try {
    const url = new URL(location, requestUrl)
    const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '')
    return q(`${url.protocol}//${url.hostname}${port ? `:${port}` : ''}`, MAX_ORIGIN_CHARS)
  } catch {
    return 'an unreadable Location'
  }
}

function timeoutError(ms: number): Error {
  // The code axios used, which the retry policy and error texts know as "no answer in time".
  return Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ECONNABORTED' })
}

/** Like axios: JSON when it parses (BOM stripped), else the text; '' for no body. */
function parseBody(buf: Buffer): unknown {
  let text = buf.toString('utf8')
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  if (text === '') return ''
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

export function createVaultRequester(opts: VaultHttpOptions): VaultRequester {
  return (options) =>
    new Promise<RawVaultResponse>((resolve, reject) => {
      const callMax = options.maxResponseBytes
      const max = callMax !== undefined && callMax < opts.maxResponseBytes ? callMax : opts.maxResponseBytes
      const tooLarge = (): ProviderError =>
        new ProviderError(
          'VAULT_RESPONSE_TOO_LARGE',
          max === opts.maxResponseBytes
            ? `Vault's answer is larger than ${max} bytes (-max-vault-response-size); it was not read further`
            : `Vault's answer is larger than ${max} bytes, the most a token answer (login, renewal) may be ` +
                `(secrets are limited by -max-vault-response-size); it was not read further`,
        )
      const url = new URL(options.uri)
      const isHttps = url.protocol === 'https:'
      const headers: Record<string, string> = { accept: 'application/json', ...(options.headers ?? {}) }
      let payload: Buffer | undefined
      if (options.json !== undefined && options.json !== null && typeof options.json === 'object') {
        payload = Buffer.from(JSON.stringify(options.json))
        headers['content-type'] = 'application/json'
        headers['content-length'] = String(payload.length)
      }
      let settled = false
      const fail = (err: unknown): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        reject(err)
      }
      const mod = isHttps ? https : http
      const req = mod.request(
        url,
        { method: options.method, headers, agent: isHttps ? options.httpsAgent : options.httpAgent },
        (res) => {
          const status = res.statusCode ?? 0
          if (REDIRECT_STATUSES.has(status)) {
            res.destroy()
            fail(
              new ProviderError(
                'VAULT_REDIRECT_REFUSED',
                `Vault answered ${status} with a redirect to ${redirectOrigin(res.headers.location, options.uri)}; ` +
                  'the provider never follows redirects, so nothing was sent there: set vaultAddress (or -vault-addr) ' +
                  'to the active Vault node or to a load balancer in front of the cluster',
              ),
            )
            return
          }
          const declared = Number(res.headers['content-length'])
          if (Number.isFinite(declared) && declared > max && status < 400) {
            res.destroy()
            fail(tooLarge())
            return
          }
          const chunks: Buffer[] = []
          let size = 0
          res.on('data', (c: Buffer) => {
            size += c.length
            if (status >= 400 && size > MAX_ERROR_BODY_BYTES) {
              // The status is what classifies the failure; the text is not worth reading on.
              res.destroy()
              if (settled) return
              settled = true
              clearTimeout(timer)
              const note = `(Vault's error text is longer than ${MAX_ERROR_BODY_BYTES} bytes and was not read)`
              resolve({ statusCode: status, body: { errors: [note] }, request: { path: url.pathname } })
              return
            }
            if (size > max) {
              res.destroy()
              fail(tooLarge())
              return
            }
            chunks.push(c)
          })
          res.on('end', () => {
            if (settled) return
            settled = true
            clearTimeout(timer)
            resolve({ statusCode: status, body: parseBody(Buffer.concat(chunks)), request: { path: url.pathname } })
          })
          res.on('error', fail)
          res.on('close', () => {
            // Closed before 'end': the peer hung up mid-answer.
            if (!res.complete) fail(Object.assign(new Error('the answer was cut short'), { code: 'ECONNRESET' }))
          })
        },
      )
      // The whole call, as axios's timeout was: not only idle time on the socket.
      const ms = options.timeout
      const timer = setTimeout(() => req.destroy(timeoutError(ms ?? 0)), ms ?? 2 ** 31 - 1)
      if (ms === undefined) clearTimeout(timer)
      req.on('error', fail)
      req.end(payload)
    })
}

/** node-vault's `request-promise` option: it calls defaults() once and uses the result for every call. */
export function nodeVaultRequestLayer(requester: VaultRequester): { defaults: () => VaultRequester } {
  return { defaults: () => requester }
}
