/**
 * Connection pools towards one Vault address and TLS configuration. Shared by
 * every identity that talks to the same Vault, so keep-alive connections are
 * reused across pods; tokens never live here.
 */
import { readFile, readdir } from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import path from 'node:path'
import { ProviderError, q } from '../errors.js'
import type { VaultConnection } from '../request/types.js'

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

async function readTlsFile(file: string, what: string): Promise<Buffer> {
  try {
    return await readFile(file)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error'
    throw new ProviderError('BAD_PARAMETER', `${what} ${q(file)} cannot be read in the provider pod (${code})`)
  }
}

async function readCaDirectory(dir: string): Promise<Buffer[]> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error'
    throw new ProviderError(
      'BAD_PARAMETER',
      `Vault CA directory ${q(dir)} cannot be read in the provider pod (${code})`,
    )
  }
  const pems: Buffer[] = []
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue
    const content = await readFile(path.join(dir, name)).catch(() => undefined)
    if (content && content.includes('-----BEGIN CERTIFICATE-----')) pems.push(content)
  }
  return pems
}

export async function createTransport(conn: VaultConnection): Promise<Transport> {
  if (conn.address.startsWith('unix://')) {
    const socketPath = conn.address.slice('unix://'.length)
    const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_VAULT })
    // http.Agent opens TCP by default; route every connection to the socket.
    ;(agent as unknown as { createConnection: () => net.Socket }).createConnection = () =>
      net.createConnection({ path: socketPath })
    return { endpoint: UNIX_PLACEHOLDER_ENDPOINT, httpAgent: agent }
  }
  if (conn.address.startsWith('http://')) {
    return { endpoint: conn.address, httpAgent: new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_VAULT }) }
  }
  const t = conn.tls
  const ca: Buffer[] = []
  if (t.caCertPath) ca.push(await readTlsFile(t.caCertPath, 'Vault CA certificate'))
  if (t.caDirectory) ca.push(...(await readCaDirectory(t.caDirectory)))
  const options: https.AgentOptions = {
    keepAlive: true,
    maxSockets: MAX_SOCKETS_PER_VAULT,
    rejectUnauthorized: !t.skipVerify,
  }
  if (ca.length > 0) options.ca = ca
  if (t.serverName) options.servername = t.serverName
  if (t.clientCertPath && t.clientKeyPath) {
    options.cert = await readTlsFile(t.clientCertPath, 'Vault TLS client certificate')
    options.key = await readTlsFile(t.clientKeyPath, 'Vault TLS client key')
  }
  return { endpoint: conn.address, httpsAgent: new https.Agent(options) }
}

export function destroyTransport(t: Transport): void {
  t.httpAgent?.destroy()
  t.httpsAgent?.destroy()
}
