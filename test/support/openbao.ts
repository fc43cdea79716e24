// A real OpenBao dev server for tests (binary installed by scripts/setup.sh).
//
// Findings about OpenBao 2.7.2 that shaped this module:
// - Dev mode prints "Unseal Key: ..." on stdout; the key unseals the server after sys/seal.
// - Enabling an audit device through the API (PUT sys/audit/<path>) is refused by default
//   ("cannot enable audit device via API; use declarative, config-based audit device
//   management instead"). Two ways work, both used here:
//     * a config file with an `audit "file" "<path>" { options { file_path = ... } }` stanza,
//       passed with -config next to -dev (see StartOpenBaoOptions.auditFile), and
//     * `unsafe_allow_api_audit_creation = true` in that config file, after which
//       PUT sys/audit/<path> works (enableFileAudit; on by default here).
// - The dev server also binds port+1 for its cluster listener.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { request as httpsRequest } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './ports.js'
import { PACKAGE_ROOT } from '../../src/package-info.js'

/** Path of the bao binary (env OPENBAO_BIN overrides `.cache/bin/bao`). */
export const BAO_BIN = process.env['OPENBAO_BIN'] ?? join(PACKAGE_ROOT, '.cache', 'bin', 'bao')

export interface StartOpenBaoOptions {
  /** Listen port on 127.0.0.1 (port+1 is used for the cluster listener). Default: a free one. */
  port?: number
  /** Root token id. Default: random. */
  rootToken?: string
  /** Serve HTTPS with a dev CA (bao -dev-tls); `caCertPath` then names the CA PEM. */
  tls?: boolean
  /** Declare a `file` audit device at start-up (config-based), writing to this path. */
  auditFile?: string
  /** Allow sys/audit API creation (unsafe_allow_api_audit_creation). Default true. */
  allowApiAudit?: boolean
  /** Extra HCL appended to the server config file. */
  extraConfig?: string
  /** Extra environment for the server process. */
  env?: Record<string, string>
  /** How long to wait for sys/health to answer 200. Default 30 s. */
  startTimeoutMs?: number
  /**
   * mTLS with `cert` auth (implies `tls`): enables the `cert` auth method at `mount` (default
   * 'cert') with one role (default 'provider') trusting client certificates signed by `caPem`.
   * The dev TLS listener asks every client for a certificate, so any client presenting one
   * from that CA can log in there, whatever else it sends.
   */
  certAuth?: { caPem: string; mount?: string; role?: string; policies?: string[] }
}

export interface ApiOptions {
  /** Token for X-Vault-Token; default the root token. Pass '' to send no token. */
  token?: string
  /** X-Vault-Namespace header. */
  namespace?: string
  /** Any extra request headers. */
  headers?: Record<string, string>
  /** Request timeout, default 30 s. */
  timeoutMs?: number
}

/** What set-up helpers (jwt.ts, fixture.ts) need of a server: a dev server, a cluster's active node, a namespace of either. */
export type OpenBaoAdmin = Pick<OpenBao, 'api' | 'enableAuth' | 'enableSecrets' | 'writePolicy'>

/** The admin calls of `api`: for a cluster node, or for one namespace of a server (`inNamespace`). */
export function adminOver(api: OpenBao['api']): OpenBaoAdmin {
  return {
    api,
    async enableAuth(type, mount, config) {
      const body: Record<string, unknown> = { type }
      if (config !== undefined) body['config'] = config
      checkOk(`enable auth ${type} at ${mount}`, await api('POST', `/v1/sys/auth/${mount}`, body))
    },
    async enableSecrets(type, path, options, extra) {
      const body: Record<string, unknown> = { type, ...(extra ?? {}) }
      if (options !== undefined) body['options'] = options
      checkOk(`enable secrets ${type} at ${path}`, await api('POST', `/v1/sys/mounts/${path}`, body))
    },
    async writePolicy(name, hcl) {
      checkOk(`write policy ${name}`, await api('PUT', `/v1/sys/policies/acl/${name}`, { policy: hcl }))
    },
  }
}

/** `bao`'s admin calls inside `namespace` (X-Vault-Namespace on every call). */
export function inNamespace(bao: Pick<OpenBao, 'api'>, namespace: string): OpenBaoAdmin {
  return adminOver((method, path, body, o = {}) => bao.api(method, path, body, { ...o, namespace }))
}

/** Throws, with Vault's answer, unless `res` is a 2xx: for set-up steps that must work. */
export function mustSucceed(what: string, res: { status: number; body: unknown }): void {
  if (res.status < 200 || res.status >= 300) throw new Error(`${what}: HTTP ${res.status}: ${JSON.stringify(res.body)}`)
}

export interface ApiResponse {
  status: number
  /** Parsed JSON; the raw text if not JSON; null for an empty body. */
  body: any
  /** Response headers, lower-case names. */
  headers: Record<string, string>
}

export interface OpenBao {
  /** e.g. http://127.0.0.1:41234 (https://... with tls). */
  addr: string
  port: number
  rootToken: string
  /** Dev-mode unseal key captured from the server's output. */
  unsealKey: string
  /** CA certificate PEM path when started with tls, else undefined. */
  caCertPath: string | undefined
  /** Server stdout+stderr. */
  logPath: string
  /** Temp dir holding the log, config and audit files; removed by stop(). */
  dir: string
  pid: number
  /**
   * Raw HTTP call, path like '/v1/sys/mounts/x'. Never throws on a non-2xx status;
   * rejects only on a transport error (connection refused, timeout).
   */
  api(method: string, path: string, body?: unknown, opts?: ApiOptions): Promise<ApiResponse>
  /** POST sys/auth/<mount> {type, config}. Throws on non-2xx. */
  enableAuth(type: string, mount: string, config?: Record<string, unknown>): Promise<void>
  /** POST sys/mounts/<path> {type, options, ...extra}. Throws on non-2xx. */
  enableSecrets(
    type: string,
    path: string,
    options?: Record<string, string>,
    extra?: Record<string, unknown>,
  ): Promise<void>
  /** PUT sys/policies/acl/<name>. Throws on non-2xx. */
  writePolicy(name: string, hcl: string): Promise<void>
  /**
   * Enables a `file` audit device through the API (works because the server is started with
   * unsafe_allow_api_audit_creation). Default file: <dir>/audit-<device>.log. Returns the path.
   */
  enableFileAudit(filePath?: string, device?: string): Promise<string>
  /** Reads an audit log as parsed JSON lines (default: the auditFile option's path). */
  readAuditLog(filePath?: string): Promise<any[]>
  /** PUT sys/seal. Throws on non-2xx. */
  seal(): Promise<void>
  /** PUT sys/unseal with the dev unseal key. Throws unless the server reports sealed:false. */
  unseal(): Promise<void>
  /** SIGKILL the server (fault tests); resolves when it has exited. Does not remove `dir`. */
  kill(): Promise<void>
  /** SIGTERM (SIGKILL after 10 s), wait for exit, remove `dir`. Safe to call more than once. */
  stop(): Promise<void>
  /** True while the server process runs. */
  running(): boolean
}

const live = new Set<ChildProcess>()
let exitHookInstalled = false
function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => {
    for (const c of live) {
      try {
        c.kill('SIGKILL')
      } catch {
        /* already gone */
      }
    }
  })
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

function hclString(s: string): string {
  return JSON.stringify(s)
}

function parseBody(text: string): any {
  if (text.length === 0) return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

async function httpCall(
  base: string,
  ca: string | undefined,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<ApiResponse> {
  const url = base + path
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
  if (payload !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json'
  if (ca === undefined) {
    const init: RequestInit = { method, headers, signal: AbortSignal.timeout(timeoutMs) }
    if (payload !== undefined) init.body = payload
    const res = await fetch(url, init)
    const text = await res.text()
    const h: Record<string, string> = {}
    res.headers.forEach((v, k) => {
      h[k] = v
    })
    return { status: res.status, body: parseBody(text), headers: h }
  }
  // Global fetch cannot take a custom CA without undici; use node:https for TLS mode.
  return await new Promise<ApiResponse>((resolvePromise, reject) => {
    const req = httpsRequest(url, { method, headers, ca, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const h: Record<string, string> = {}
        for (const [k, v] of Object.entries(res.headers)) {
          if (v !== undefined) h[k] = Array.isArray(v) ? v.join(', ') : v
        }
        resolvePromise({
          status: res.statusCode ?? 0,
          body: parseBody(Buffer.concat(chunks).toString('utf8')),
          headers: h,
        })
      })
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error(`request timed out after ${timeoutMs} ms`)))
    req.on('error', reject)
    if (payload !== undefined) req.write(payload)
    req.end()
  })
}

function cleanEnv(extra: Record<string, string> | undefined, home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('VAULT_') || k.startsWith('BAO_')) continue
    env[k] = v
  }
  env['HOME'] = home
  return { ...env, ...(extra ?? {}) }
}

function checkOk(what: string, res: ApiResponse): void {
  if (res.status < 200 || res.status >= 300) {
    throw new Error(`${what}: HTTP ${res.status}: ${JSON.stringify(res.body)}`)
  }
}

/** The last 2,000 characters of a dev server's log, without its root token and unseal key lines. */
function logTail(logPath: string): string {
  if (!existsSync(logPath)) return ''
  return readFileSync(logPath, 'utf8')
    .split('\n')
    .filter((line) => !/root token|unseal key/i.test(line))
    .join('\n')
    .slice(-2000)
}

class StartupError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message)
  }
}

async function launch(opts: StartOpenBaoOptions, dir: string, port: number): Promise<OpenBao> {
  const rootToken = opts.rootToken ?? `dev-root-${randomBytes(12).toString('hex')}`
  const logPath = join(dir, `bao-${port}.log`)
  const configPath = join(dir, 'config.hcl')
  const lines: string[] = []
  if (opts.allowApiAudit ?? true) lines.push('unsafe_allow_api_audit_creation = true')
  if (opts.auditFile !== undefined) {
    lines.push(`audit "file" "declared" {`, `  options {`, `    file_path = ${hclString(opts.auditFile)}`, `  }`, `}`)
  }
  if (opts.extraConfig !== undefined) lines.push(opts.extraConfig)
  await writeFile(configPath, lines.join('\n') + '\n')

  const args = [
    'server',
    '-dev',
    `-dev-root-token-id=${rootToken}`,
    `-dev-listen-address=127.0.0.1:${port}`,
    '-dev-no-store-token',
    `-config=${configPath}`,
  ]
  let caCertPath: string | undefined
  if (opts.tls === true) {
    // One directory per attempt: bao writes a new CA on every start, and a retry must not read
    // the CA a failed attempt left behind (seen in CI: every health probe then failed its handshake).
    const certDir = join(dir, `tls-${port}`)
    // bao writes its dev CA and certificate here, but does not create the directory.
    mkdirSync(certDir, { recursive: true })
    args.push('-dev-tls', `-dev-tls-cert-dir=${certDir}`)
    caCertPath = join(certDir, 'vault-ca.pem')
  }

  const logFd = openSync(logPath, 'a')
  let child: ChildProcess
  try {
    child = spawn(BAO_BIN, args, {
      cwd: dir,
      env: cleanEnv(opts.env, dir),
      stdio: ['ignore', logFd, logFd],
    })
  } finally {
    closeSync(logFd)
  }
  installExitHook()
  live.add(child)
  let exited = false
  let exitInfo = ''
  const exitPromise = new Promise<void>((res) => {
    child.once('exit', (code, signal) => {
      exited = true
      exitInfo = `code=${code} signal=${signal}`
      live.delete(child)
      res()
    })
    child.once('error', (err) => {
      exited = true
      exitInfo = `spawn error: ${err.message}`
      live.delete(child)
      res()
    })
  })

  const scheme = opts.tls === true ? 'https' : 'http'
  const addr = `${scheme}://127.0.0.1:${port}`
  let ca: string | undefined
  const deadline = Date.now() + (opts.startTimeoutMs ?? 30_000)
  let unsealKey = ''
  for (;;) {
    if (exited) {
      const log = logTail(logPath)
      const inUse = /address already in use/i.test(log)
      throw new StartupError(`bao exited during start-up (${exitInfo}); log ${logPath}:\n${log}`, inUse)
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      await exitPromise
      // Retryable on a fresh port: seen once in CI (a -dev-tls server still not healthy after 30 s,
      // the rest of the suite fine). The log's tail goes into the message, since the temp dir is
      // removed after the last attempt.
      const log = logTail(logPath)
      throw new StartupError(
        `bao did not become healthy within the timeout (unseal key seen: ${unsealKey !== ''}, CA seen: ${ca !== undefined}); log ${logPath}:\n${log}`,
        true,
      )
    }
    if (unsealKey === '') {
      const m = /Unseal Key: (\S+)/.exec(readFileSync(logPath, 'utf8'))
      if (m?.[1] !== undefined) unsealKey = m[1]
    }
    if (opts.tls === true && caCertPath !== undefined && existsSync(caCertPath)) {
      // Read again on every probe until healthy: the file may be caught half written.
      const pem = readFileSync(caCertPath, 'utf8')
      ca = pem.includes('-----END CERTIFICATE-----') ? pem : undefined
    }
    if (unsealKey !== '' && (opts.tls !== true || ca !== undefined)) {
      try {
        const res = await httpCall(addr, ca, 'GET', '/v1/sys/health', undefined, {}, 2000)
        if (res.status === 200) break
      } catch {
        /* not listening yet */
      }
    }
    await sleep(50)
  }

  let stopped = false
  const api: OpenBao['api'] = async (method, path, body, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) }
    const token = o.token ?? rootToken
    if (token !== '') headers['x-vault-token'] = token
    if (o.namespace !== undefined) headers['x-vault-namespace'] = o.namespace
    return await httpCall(addr, ca, method.toUpperCase(), path, body, headers, o.timeoutMs ?? 30_000)
  }

  const bao: OpenBao = {
    addr,
    port,
    rootToken,
    unsealKey,
    caCertPath,
    logPath,
    dir,
    pid: child.pid ?? -1,
    api,
    async enableAuth(type, mount, config) {
      const body: Record<string, unknown> = { type }
      if (config !== undefined) body['config'] = config
      checkOk(`enable auth ${type} at ${mount}`, await api('POST', `/v1/sys/auth/${mount}`, body))
    },
    async enableSecrets(type, path, options, extra) {
      const body: Record<string, unknown> = { type, ...(extra ?? {}) }
      if (options !== undefined) body['options'] = options
      checkOk(`enable secrets ${type} at ${path}`, await api('POST', `/v1/sys/mounts/${path}`, body))
    },
    async writePolicy(name, hcl) {
      checkOk(`write policy ${name}`, await api('PUT', `/v1/sys/policies/acl/${name}`, { policy: hcl }))
    },
    async enableFileAudit(filePath, device = 'file') {
      const p = filePath ?? join(dir, `audit-${device}.log`)
      checkOk(
        `enable file audit at ${device}`,
        await api('PUT', `/v1/sys/audit/${device}`, { type: 'file', options: { file_path: p } }),
      )
      return p
    },
    async readAuditLog(filePath) {
      const p = filePath ?? opts.auditFile
      if (p === undefined) throw new Error('readAuditLog: no path given and no auditFile option')
      if (!existsSync(p)) return []
      return readFileSync(p, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l))
    },
    async seal() {
      checkOk('seal', await api('PUT', '/v1/sys/seal'))
    },
    async unseal() {
      const res = await api('PUT', '/v1/sys/unseal', { key: unsealKey }, { token: '' })
      checkOk('unseal', res)
      if (res.body?.sealed !== false) throw new Error(`unseal: still sealed: ${JSON.stringify(res.body)}`)
      // Wait until the node is active again.
      const until = Date.now() + 15_000
      while (Date.now() < until) {
        const h = await api('GET', '/v1/sys/health', undefined, { token: '' }).catch(() => undefined)
        if (h?.status === 200) return
        await sleep(50)
      }
      throw new Error('unseal: server did not become active')
    },
    async kill() {
      if (!exited) child.kill('SIGKILL')
      await exitPromise
    },
    async stop() {
      if (stopped) return
      stopped = true
      if (!exited) {
        child.kill('SIGTERM')
        const t = setTimeout(() => {
          if (!exited) child.kill('SIGKILL')
        }, 10_000)
        await exitPromise
        clearTimeout(t)
      }
      if (process.env['KEEP_TEST_TMP'] !== '1') await rm(dir, { recursive: true, force: true })
    },
    running() {
      return !exited
    },
  }
  return bao
}

async function enableCertAuth(bao: OpenBao, o: NonNullable<StartOpenBaoOptions['certAuth']>): Promise<void> {
  const mount = o.mount ?? 'cert'
  const role = o.role ?? 'provider'
  try {
    await bao.enableAuth('cert', mount)
    mustSucceed(
      `create cert role ${role} at ${mount}`,
      await bao.api('POST', `/v1/auth/${mount}/certs/${role}`, {
        certificate: o.caPem,
        token_policies: o.policies ?? ['default'],
      }),
    )
  } catch (err) {
    await bao.stop()
    throw err
  }
}

/**
 * Starts `bao server -dev` on 127.0.0.1 with a random root token, waits until
 * GET /v1/sys/health answers 200, and returns handles to it. Server output goes to
 * `logPath` in a temp dir. Set KEEP_TEST_TMP=1 to keep the dir after stop().
 */
export async function startOpenBao(options: StartOpenBaoOptions = {}): Promise<OpenBao> {
  const opts = options.certAuth === undefined ? options : { ...options, tls: true }
  if (!existsSync(BAO_BIN)) {
    throw new Error(`OpenBao binary not found at ${BAO_BIN}: run scripts/setup.sh first`)
  }
  const dir = await mkdtemp(join(tmpdir(), 'vcp-bao-'))
  const attempts = opts.port === undefined ? 3 : 1
  let lastErr: unknown
  for (let i = 0; i < attempts; i++) {
    const port = opts.port ?? (await freePort({ consecutive: 2 }))
    try {
      const bao = await launch(opts, dir, port)
      if (opts.certAuth !== undefined) await enableCertAuth(bao, opts.certAuth)
      return bao
    } catch (err) {
      lastErr = err
      if (!(err instanceof StartupError && err.retryable)) break
    }
  }
  if (process.env['KEEP_TEST_TMP'] !== '1') {
    // Keep the log of a failed start visible in the error message only.
    await rm(dir, { recursive: true, force: true })
  }
  throw lastErr
}
