/**
 * Connection pools towards one Vault address and TLS configuration. Shared by
 * every identity that talks to the same Vault, so keep-alive connections are
 * reused across pods; tokens never live here.
 */
import { constants as fsConstants } from 'node:fs'
import { open, opendir, realpath, stat } from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import path from 'node:path'
import { DEFAULT_MAX_TLS_FILE_BYTES, type VaultTlsConfig } from '../config/config.js'
import { ProviderError, q } from '../errors.js'
import type { VaultConnection } from '../request/types.js'
import type { AddressAllowlist } from './address-allowlist.js'

export const MAX_SOCKETS_PER_VAULT = 64
/** Requests to a unix:// Vault (an Agent socket) go to this placeholder host. */
const UNIX_PLACEHOLDER_ENDPOINT = 'http://localhost'

export interface Transport {
  /** Base URL given to node-vault (no trailing slash, no /v1). */
  endpoint: string
  httpAgent?: http.Agent
  httpsAgent?: https.Agent
}

export function connectionKey(conn: VaultConnection): string {
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

/** What transports may read and where they may connect (wired from config.limits and the allow-list). */
export interface TransportOptions {
  /** -max-tls-file-size: no TLS file (or CA directory in total) is read past this. */
  maxTlsFileBytes: number
  /** -tls-file-dirs: pod-named TLS files must resolve under one of these ('/'-terminated); [] = anywhere. */
  tlsFileDirs: readonly string[]
  /** The operator's -vault-tls-* files: read with the size cap, but not restricted to tlsFileDirs. */
  operatorTls?: VaultTlsConfig
  /** Checked on every new connection: the address the transport was built for must be allowed. */
  allowlist?: Pick<AddressAllowlist, 'allows'>
}

export const DEFAULT_TRANSPORT_OPTIONS: TransportOptions = {
  maxTlsFileBytes: DEFAULT_MAX_TLS_FILE_BYTES,
  tlsFileDirs: [],
}

/** A CA directory contributes at most this many entries (sorted by name among the first ones listed). */
export const MAX_CA_DIRECTORY_ENTRIES = 256

/** Which setting a TLS path came from, as errors name it. */
interface FileSource {
  /** e.g. `parameter "vaultCACertPath"` or `-vault-tls-ca-cert`. */
  name: string
  /** Named by the pod (SecretProviderClass / volumeAttributes): subject to -tls-file-dirs. */
  podChosen: boolean
}

const TLS_SETTINGS = {
  caCertPath: { parameter: 'vaultCACertPath', flag: '-vault-tls-ca-cert' },
  caDirectory: { parameter: 'vaultCADirectory', flag: '-vault-tls-ca-directory' },
  clientCertPath: { parameter: 'vaultTLSClientCertPath', flag: '-vault-tls-client-cert' },
  clientKeyPath: { parameter: 'vaultTLSClientKeyPath', flag: '-vault-tls-client-key' },
} as const

function sourceOf(field: keyof typeof TLS_SETTINGS, value: string, opts: TransportOptions): FileSource {
  const s = TLS_SETTINGS[field]
  // The same path as the operator's flag is the operator's file, whoever repeats it.
  if (opts.operatorTls?.[field] === value) return { name: s.flag, podChosen: false }
  return { name: `parameter ${q(s.parameter)}`, podChosen: true }
}

function fsCode(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'error'
}

/** Resolves symlinks and, for pod-chosen paths with -tls-file-dirs set, requires the result under one of them. */
async function resolveAllowed(file: string, src: FileSource, opts: TransportOptions): Promise<string> {
  let real: string
  try {
    real = await realpath(file)
  } catch (err) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `${src.name} ${q(file)} cannot be read in the provider pod (${fsCode(err)})`,
    )
  }
  if (src.podChosen && opts.tlsFileDirs.length > 0 && !opts.tlsFileDirs.some((dir) => real.startsWith(dir))) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `${src.name} ${q(file)} is outside the directories the provider reads TLS files from ` +
        `(-tls-file-dirs: ${opts.tlsFileDirs.map((d) => q(d)).join(', ')}); mount the file there`,
    )
  }
  return real
}

/** Errors of files found over the cap, possibly after reading cap+1 bytes of them (see readCaDirectory). */
const TOO_LARGE = new WeakSet<Error>()

/**
 * Reads a regular file of at most `cap` bytes: stat before opening (a device,
 * FIFO or directory is never opened), O_NONBLOCK in case it was swapped for a
 * FIFO meanwhile, fstat on the open descriptor, and never more than cap+1
 * bytes read whatever the file claims.
 */
async function readCapped(real: string, shown: string, src: FileSource, cap: number): Promise<Buffer> {
  const notRegular = (): ProviderError =>
    new ProviderError('BAD_PARAMETER', `${src.name} ${q(shown)} is not a regular file`)
  const tooLarge = (): ProviderError => {
    const err = new ProviderError(
      'BAD_PARAMETER',
      `${src.name} ${q(shown)} is larger than ${cap} bytes (-max-tls-file-size)`,
    )
    TOO_LARGE.add(err)
    return err
  }
  let st
  try {
    st = await stat(real)
  } catch (err) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `${src.name} ${q(shown)} cannot be read in the provider pod (${fsCode(err)})`,
    )
  }
  if (!st.isFile()) throw notRegular()
  if (st.size > cap) throw tooLarge()
  let fh
  try {
    fh = await open(real, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY)
  } catch (err) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `${src.name} ${q(shown)} cannot be read in the provider pod (${fsCode(err)})`,
    )
  }
  try {
    const opened = await fh.stat()
    if (!opened.isFile()) throw notRegular()
    if (opened.size > cap) throw tooLarge()
    // procfs and sysfs files report size 0 and still have content: read to the cap, not to the size.
    const buf = Buffer.alloc(cap + 1)
    let length = 0
    while (length < buf.length) {
      const { bytesRead } = await fh.read(buf, length, buf.length - length, null)
      if (bytesRead === 0) break
      length += bytesRead
    }
    if (length > cap) throw tooLarge()
    return buf.subarray(0, length)
  } catch (err) {
    if (err instanceof ProviderError) throw err
    throw new ProviderError(
      'BAD_PARAMETER',
      `${src.name} ${q(shown)} cannot be read in the provider pod (${fsCode(err)})`,
    )
  } finally {
    await fh.close()
  }
}

async function readTlsFile(file: string, src: FileSource, opts: TransportOptions): Promise<Buffer> {
  const real = await resolveAllowed(file, src, opts)
  return readCapped(real, file, src, opts.maxTlsFileBytes)
}

/**
 * The certificates of a CA directory: the first MAX_CA_DIRECTORY_ENTRIES
 * entries listed (never the whole of a huge directory), regular files only,
 * each and all together within -max-tls-file-size. Entries that are not
 * usable are skipped; a directory with none usable is an error.
 */
async function readCaDirectory(dir: string, src: FileSource, opts: TransportOptions): Promise<Buffer[]> {
  const realDir = await resolveAllowed(dir, src, opts)
  const names: string[] = []
  let handle
  try {
    handle = await opendir(realDir)
    for (;;) {
      const entry = await handle.read()
      if (entry === null || names.length >= MAX_CA_DIRECTORY_ENTRIES) break
      if (!entry.name.startsWith('.')) names.push(entry.name)
    }
  } catch (err) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `${src.name} ${q(dir)} cannot be read in the provider pod (${fsCode(err)})`,
    )
  } finally {
    await handle?.close().catch(() => undefined)
  }
  const pems: Buffer[] = []
  let total = 0
  for (const name of names.sort()) {
    const file = path.join(realDir, name)
    const content = await (async () => {
      // Each entry passes the same checks as a single file (symlinks resolved, -tls-file-dirs, regular, capped).
      const real = await resolveAllowed(file, src, opts)
      return readCapped(real, file, src, opts.maxTlsFileBytes - total)
    })().catch((err: unknown) => {
      // Possibly read up to the cap before it was found too large (procfs files claim size 0): that ends the scan.
      if (err instanceof Error && TOO_LARGE.has(err)) total = opts.maxTlsFileBytes
      return undefined
    })
    if (!content) {
      if (total >= opts.maxTlsFileBytes) break
      continue
    }
    // Everything read counts, certificate or not: a directory of junk costs no more than the cap.
    total += content.length
    if (content.includes('-----BEGIN CERTIFICATE-----')) pems.push(content)
    if (total >= opts.maxTlsFileBytes) break
  }
  if (pems.length === 0) {
    throw new ProviderError(
      'BAD_PARAMETER',
      `${src.name} ${q(dir)} holds no readable PEM certificate file among its first ${MAX_CA_DIRECTORY_ENTRIES} ` +
        `entries (regular files within ${opts.maxTlsFileBytes} bytes in total, -max-tls-file-size)`,
    )
  }
  return pems
}

type ConnectionFactory = (options: net.NetConnectOpts & { host?: string; port?: number }, cb: unknown) => unknown

/**
 * Every new connection of the agent is checked before it is opened: to the
 * transport's own host and port only, and only while the allow-list admits
 * the address. Redirects are never followed (vault/http.ts); this holds even
 * if some code path tried.
 */
function guardConnections(agent: http.Agent, address: string, opts: TransportOptions): void {
  const url = new URL(address)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  const target = agent as unknown as { createConnection: ConnectionFactory }
  const original = target.createConnection.bind(agent)
  target.createConnection = (options, cb) => {
    const wantHost = String(options.host ?? '').replace(/^\[|\]$/g, '')
    const refused =
      wantHost !== host || Number(options.port) !== port
        ? `a connection to ${q(`${wantHost}:${String(options.port)}`)} is not the transport's Vault address ${q(address)}`
        : opts.allowlist && !opts.allowlist.allows(address)
          ? `Vault address ${q(address)} is not in the provider's -vault-addr-allowlist`
          : undefined
    if (refused !== undefined) {
      const err = new ProviderError('VAULT_ADDRESS_NOT_ALLOWED', `${refused}; nothing was sent`)
      process.nextTick(() => (cb as (e: Error) => void)(err))
      return undefined
    }
    return original(options, cb)
  }
}

export async function createTransport(
  conn: VaultConnection,
  opts: TransportOptions = DEFAULT_TRANSPORT_OPTIONS,
): Promise<Transport> {
  if (conn.address.startsWith('unix://')) {
    const socketPath = conn.address.slice('unix://'.length)
    const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_VAULT })
    // http.Agent opens TCP by default; route every connection to the socket.
    ;(agent as unknown as { createConnection: () => net.Socket }).createConnection = () =>
      net.createConnection({ path: socketPath })
    return { endpoint: UNIX_PLACEHOLDER_ENDPOINT, httpAgent: agent }
  }
  if (conn.address.startsWith('http://')) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_VAULT })
    guardConnections(agent, conn.address, opts)
    return { endpoint: conn.address, httpAgent: agent }
  }
  const t = conn.tls
  const ca: Buffer[] = []
  if (t.caCertPath) ca.push(await readTlsFile(t.caCertPath, sourceOf('caCertPath', t.caCertPath, opts), opts))
  if (t.caDirectory)
    ca.push(...(await readCaDirectory(t.caDirectory, sourceOf('caDirectory', t.caDirectory, opts), opts)))
  const options: https.AgentOptions = {
    keepAlive: true,
    maxSockets: MAX_SOCKETS_PER_VAULT,
    rejectUnauthorized: !t.skipVerify,
  }
  if (ca.length > 0) options.ca = ca
  if (t.serverName) options.servername = t.serverName
  if (t.clientCertPath && t.clientKeyPath) {
    options.cert = await readTlsFile(t.clientCertPath, sourceOf('clientCertPath', t.clientCertPath, opts), opts)
    options.key = await readTlsFile(t.clientKeyPath, sourceOf('clientKeyPath', t.clientKeyPath, opts), opts)
  }
  const agent = new https.Agent(options)
  guardConnections(agent, conn.address, opts)
  return { endpoint: conn.address, httpsAgent: agent }
}

export function destroyTransport(t: Transport): void {
  t.httpAgent?.destroy()
  t.httpsAgent?.destroy()
}
