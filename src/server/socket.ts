/**
 * The unix socket file the driver dials: `<dir>/<provider>.sock`.
 */
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises'
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
