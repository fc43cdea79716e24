/**
 * The TLS material of a Vault connection, read from files with caps: a pod
 * names these paths, so every read is bounded (size, directory entries),
 * checked (regular file, -tls-file-dirs after symlinks) and never blocks
 * (O_NONBLOCK in case a FIFO was swapped in).
 */
import { constants as fsConstants } from 'node:fs'
import { open, opendir, realpath, stat } from 'node:fs/promises'
import path from 'node:path'
import type { VaultTlsConfig } from '../../config/config.js'
import { ProviderError, q } from '../../errors.js'
import type { VaultConnection } from '../../request/types.js'
import type { AddressAllowlist } from './address-allowlist.js'

/** What transports may read and where they may connect (wired from config.limits and the allow-list). */
export interface TransportOptions {
  /** -max-tls-file-size: no TLS file (or CA directory in total) is read past this. */
  maxTlsFileBytes: number
  /** -tls-file-dirs: pod-named TLS files must resolve under one of these ('/'-terminated); [] = anywhere. */
  tlsFileDirs: readonly string[]
  /** The operator's -vault-tls-* files: read with the size cap, but not restricted to tlsFileDirs. */
  operatorTls?: VaultTlsConfig
  /** Checked on every new connection (connection-guard.ts): the address the transport was built for must be allowed. */
  allowlist: Pick<AddressAllowlist, 'allows'>
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

/** A file found over the cap, possibly after reading cap+1 bytes of it (readCaDirectory stops scanning then). */
class TlsFileTooLarge extends ProviderError {}

/**
 * Reads a regular file of at most `cap` bytes: stat before opening (a device,
 * FIFO or directory is never opened), O_NONBLOCK in case it was swapped for a
 * FIFO meanwhile, fstat on the open descriptor, and never more than cap+1
 * bytes read whatever the file claims.
 */
async function readCapped(real: string, shown: string, src: FileSource, cap: number): Promise<Buffer> {
  const notRegular = (): ProviderError =>
    new ProviderError('BAD_PARAMETER', `${src.name} ${q(shown)} is not a regular file`)
  const tooLarge = (): ProviderError =>
    new TlsFileTooLarge('BAD_PARAMETER', `${src.name} ${q(shown)} is larger than ${cap} bytes (-max-tls-file-size)`)
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
      if (err instanceof TlsFileTooLarge) total = opts.maxTlsFileBytes
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

/** What a TLS connection to Vault presents and trusts; undefined members are the system's defaults. */
export interface TlsMaterial {
  ca?: Buffer[]
  cert?: Buffer
  key?: Buffer
  servername?: string
  rejectUnauthorized: boolean
}

/** Reads the connection's TLS files (CA file, CA directory, client certificate and key) within the caps. */
export async function readTlsMaterial(conn: VaultConnection, opts: TransportOptions): Promise<TlsMaterial> {
  const t = conn.tls
  const ca: Buffer[] = []
  if (t.caCertPath) ca.push(await readTlsFile(t.caCertPath, sourceOf('caCertPath', t.caCertPath, opts), opts))
  if (t.caDirectory)
    ca.push(...(await readCaDirectory(t.caDirectory, sourceOf('caDirectory', t.caDirectory, opts), opts)))
  const material: TlsMaterial = { rejectUnauthorized: !t.skipVerify }
  if (ca.length > 0) material.ca = ca
  if (t.serverName) material.servername = t.serverName
  if (t.clientCertPath && t.clientKeyPath) {
    material.cert = await readTlsFile(t.clientCertPath, sourceOf('clientCertPath', t.clientCertPath, opts), opts)
    material.key = await readTlsFile(t.clientKeyPath, sourceOf('clientKeyPath', t.clientKeyPath, opts), opts)
  }
  return material
}
