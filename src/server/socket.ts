/**
 * The unix socket file the driver dials: `<dir>/<provider>.sock`.
 */
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'

/** Only the owner (the driver runs as root) may connect: the socket is the only access control. */
export const SOCKET_MODE = 0o600
const SOCKET_UMASK = 0o177

/**
 * Makes `socketPath` free to bind: creates its directory, and removes a socket
 * file left behind by an earlier process (killed, or being replaced). Refuses
 * to remove anything that is not a socket.
 */
export async function prepareSocketPath(socketPath: string): Promise<{ removedStale: boolean }> {
  await mkdir(path.dirname(socketPath), { recursive: true })
  let stat
  try {
    stat = await lstat(socketPath)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { removedStale: false }
    throw err
  }
  if (!stat.isSocket()) {
    throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`)
  }
  await unlink(socketPath)
  return { removedStale: true }
}

/**
 * Runs `bind` with a umask that creates the socket owner-only, then enforces
 * the mode. Returns the socket's inode, so that shutdown removes only our own
 * socket and never one a newer instance has bound at the same path since.
 */
export async function bindOwnerOnly(socketPath: string, bind: () => Promise<void>): Promise<number> {
  const previous = process.umask(SOCKET_UMASK)
  try {
    await bind()
  } finally {
    process.umask(previous)
  }
  await chmod(socketPath, SOCKET_MODE)
  return (await lstat(socketPath)).ino
}

export async function removeOwnSocket(socketPath: string, inode: number): Promise<void> {
  const stat = await lstat(socketPath).catch(() => undefined)
  if (stat?.isSocket() && stat.ino === inode) await unlink(socketPath).catch(() => undefined)
}

/** Longest unix socket path Linux accepts (sun_path is 108 bytes with the NUL). */
export const MAX_SOCKET_PATH_BYTES = 107

/**
 * The private name an instance binds before renaming its socket over the
 * public path. Unique per process; undefined when it would be too long.
 * (Binding the public path directly would also make libuv unlink that path
 * when this instance closes its listener, removing a successor's socket.)
 */
export function privateSocketPath(socketPath: string, unique: string | number = process.pid): string | undefined {
  const p = `${socketPath}.${unique}~`
  return Buffer.byteLength(p) <= MAX_SOCKET_PATH_BYTES ? p : undefined
}

/** How long a connect to an existing socket file may take before the file counts as stale. */
export const SOCKET_PROBE_TIMEOUT_MS = 1000

/**
 * What is at the socket path: nothing, a socket nobody answers on, or a live server. For a
 * stale one, `why` says how that was decided: a refused connect (the usual leftover of
 * kill -9, decided at once) or no answer within SOCKET_PROBE_TIMEOUT_MS (a hung process).
 */
export type SocketAtPath = { state: 'none' } | { state: 'live' } | { state: 'stale'; why: string }

export async function inspectSocketPath(socketPath: string): Promise<SocketAtPath> {
  await mkdir(path.dirname(socketPath), { recursive: true })
  const stat = await lstat(socketPath).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined
    throw err
  })
  if (stat === undefined) return { state: 'none' }
  if (!stat.isSocket()) throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`)
  return new Promise((resolve) => {
    const s = net.connect({ path: socketPath })
    const done = (found: SocketAtPath): void => {
      s.destroy()
      resolve(found)
    }
    s.setTimeout(SOCKET_PROBE_TIMEOUT_MS, () =>
      done({ state: 'stale', why: `no answer within ${SOCKET_PROBE_TIMEOUT_MS} ms` }),
    )
    s.once('connect', () => done({ state: 'live' }))
    s.once('error', (err: NodeJS.ErrnoException) =>
      done({ state: 'stale', why: `nothing listens on it (${err.code ?? err.message})` }),
    )
  })
}

/** The inode of the socket at the path, or undefined when there is none. */
export async function socketInodeAt(socketPath: string): Promise<number | undefined> {
  const stat = await lstat(socketPath).catch(() => undefined)
  return stat?.isSocket() ? stat.ino : undefined
}
