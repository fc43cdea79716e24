/** Socket checks: the provider socket exists, is owner-only, answers Version and gRPC Health. */
import { lstat } from 'node:fs/promises'
import { checkGrpcHealth, checkSocket } from '../../server/health.js'
import { ms } from '../output.js'
import type { CheckResult } from './check.js'

export async function socketChecks(socketPath: string): Promise<CheckResult[]> {
  const out: CheckResult[] = []
  const st = await lstat(socketPath).catch((err: NodeJS.ErrnoException) => err)
  if (st instanceof Error) {
    out.push({
      id: 'socket.exists',
      title: 'provider socket exists',
      status: 'fail',
      detail: `${socketPath}: ${(st as NodeJS.ErrnoException).code ?? st.message}`,
      fix: 'start the provider (its DaemonSet pod on this node) with -endpoint pointing at this path; the driver looks for <provider-volume>/vault.sock (default /var/run/secrets-store-csi-providers/vault.sock)',
    })
    for (const [id, title] of [
      ['socket.permissions', 'socket is owner-only'],
      ['socket.version', 'socket answers Version'],
      ['socket.health', 'gRPC health is SERVING'],
    ] as const) {
      out.push({ id, title, status: 'skip', detail: 'no socket' })
    }
    return out
  }
  if (!st.isSocket()) {
    out.push({
      id: 'socket.exists',
      title: 'provider socket exists',
      status: 'fail',
      detail: `${socketPath} exists but is not a socket`,
      fix: 'remove the file; the provider refuses to replace anything that is not a socket',
    })
    return out
  }
  out.push({ id: 'socket.exists', title: 'provider socket exists', status: 'pass', detail: socketPath })
  const mode = st.mode & 0o777
  out.push(
    (mode & 0o077) === 0
      ? {
          id: 'socket.permissions',
          title: 'socket is owner-only',
          status: 'pass',
          detail: `mode 0${mode.toString(8)}, uid ${st.uid}`,
        }
      : {
          id: 'socket.permissions',
          title: 'socket is owner-only',
          status: 'fail',
          detail: `mode 0${mode.toString(8)}: other users on the node can ask the provider for any pod's secrets`,
          fix: 'run a provider version that creates the socket 0600, and make sure nothing chmods the socket directory contents',
        },
  )
  const v = await checkSocket(socketPath)
  out.push(
    v.ok
      ? {
          id: 'socket.version',
          title: 'socket answers Version',
          status: 'pass',
          detail: `${v.detail} in ${ms(v.durationMs)}`,
        }
      : {
          id: 'socket.version',
          title: 'socket answers Version',
          status: 'fail',
          detail: v.detail,
          fix: "the socket file is left over or the provider hangs: check the provider pod's log and restart it (a new provider removes a stale socket)",
        },
  )
  const h = await checkGrpcHealth(socketPath)
  out.push(
    h.ok
      ? {
          id: 'socket.health',
          title: 'gRPC health is SERVING',
          status: 'pass',
          detail: 'grpc.health.v1.Health/Check: SERVING',
        }
      : {
          id: 'socket.health',
          title: 'gRPC health is SERVING',
          status: v.ok ? 'warn' : 'fail',
          detail: `grpc.health.v1.Health/Check: ${h.status}`,
          fix: v.ok
            ? 'the provider answers Version but not Health: it is older than this CLI or shutting down'
            : 'see socket.version',
        },
  )
  return out
}
