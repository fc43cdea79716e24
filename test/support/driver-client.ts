// Typed wrappers around .cache/bin/driver-client (test/driver-client), which calls a
// provider through the Secrets Store CSI driver's own client code (v1.6.0): same dialing,
// same retry policy, same response checks, and the kubelet atomic writer for the files.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../src/package-info.js'

/** Path of the driver-client binary (env DRIVER_CLIENT_BIN overrides). */
export const DRIVER_CLIENT_BIN =
  process.env['DRIVER_CLIENT_BIN'] ?? join(PACKAGE_ROOT, '.cache', 'bin', 'driver-client')

export interface DriverMountOptions {
  /** Directory holding `<provider>.sock`. */
  socketDir: string
  /** Provider name (the SecretProviderClass `spec.provider`), e.g. 'vault'. */
  provider: string
  /** Existing directory the files are written into (the pod's volume). */
  targetPath: string
  /** Default file mode, JSON-encoded decimal as the driver sends it. Default '420' (0644). */
  permission?: string | number
  /** MountRequest.attributes: an object is JSON-encoded; a string is sent verbatim. */
  attributes: Record<string, string> | string
  /**
   * MountRequest.secrets: an object is JSON-encoded; a string is sent verbatim. Driver v1.6.0
   * sends 'null' when the volume has no nodePublishSecretRef (json.Marshal of a nil map).
   */
  secrets: Record<string, string> | string
  /** Sent as current_object_version (driver v1.6.0 always sends none). */
  oldObjectVersions?: Record<string, string>
  /** gRPC deadline for the call. Default 30 000 ms. */
  timeoutMs?: number
  /** Client's max receive size in bytes (driver default 4 MiB). */
  maxCallRecvMsgSize?: number
}

export interface DriverMountResult {
  ok: boolean
  /** id -> version, as stored in the SecretProviderClassPodStatus. Empty when !ok. */
  objectVersions: Record<string, string>
  /**
   * The driver's error reason: the provider's Error.code, or 'GRPCProviderError' for a gRPC
   * error or missing object versions, or 'FileWriteError'; '' on success or when no client
   * could be made (e.g. 'provider not found').
   */
  errorCode: string
  /** gRPC status code name ('OK', 'InvalidArgument', 'Unknown', 'DeadlineExceeded', ...). */
  grpcCode: string
  /** err.Error() as the driver would wrap into the FailedMount event. */
  message: string
}

export interface DriverVersionOptions {
  socketDir: string
  provider: string
  /** Default 5000 ms (the driver's health-check timeout). */
  timeoutMs?: number
}

export interface DriverVersionResult {
  ok: boolean
  version?: string
  runtimeName?: string
  runtimeVersion?: string
  grpcCode?: string
  message?: string
}

function runClient(args: string[], timeoutMs: number): Promise<string> {
  if (!existsSync(DRIVER_CLIENT_BIN)) {
    return Promise.reject(new Error(`driver-client not found at ${DRIVER_CLIENT_BIN}: run scripts/setup.sh first`))
  }
  return new Promise((resolvePromise, reject) => {
    execFile(
      DRIVER_CLIENT_BIN,
      args,
      { timeout: timeoutMs + 15_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err) {
          reject(new Error(`driver-client ${args[0]} failed (${err.message}); stderr: ${stderr}`))
          return
        }
        const line = stdout
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l !== '')
          .pop()
        if (line === undefined) {
          reject(new Error(`driver-client ${args[0]} printed nothing; stderr: ${stderr}`))
          return
        }
        resolvePromise(line)
      },
    )
  })
}

function goDuration(ms: number): string {
  return `${Math.max(1, Math.round(ms))}ms`
}

/** Runs one Mount through the driver's MountContent; the files land in `targetPath`. */
export async function driverMount(o: DriverMountOptions): Promise<DriverMountResult> {
  const dir = await mkdtemp(join(tmpdir(), 'vcp-dc-'))
  try {
    const attrFile = join(dir, 'attributes.json')
    const secFile = join(dir, 'secrets.json')
    await writeFile(attrFile, typeof o.attributes === 'string' ? o.attributes : JSON.stringify(o.attributes))
    await writeFile(secFile, typeof o.secrets === 'string' ? o.secrets : JSON.stringify(o.secrets))
    const timeoutMs = o.timeoutMs ?? 30_000
    const args = [
      'mount',
      '--socket-dir',
      o.socketDir,
      '--provider',
      o.provider,
      '--target',
      o.targetPath,
      '--permission',
      String(o.permission ?? '420'),
      '--attributes-file',
      attrFile,
      '--secrets-file',
      secFile,
      '--timeout',
      goDuration(timeoutMs),
    ]
    if (o.oldObjectVersions !== undefined) {
      const f = join(dir, 'old-versions.json')
      await writeFile(f, JSON.stringify(o.oldObjectVersions))
      args.push('--old-versions-file', f)
    }
    if (o.maxCallRecvMsgSize !== undefined) args.push('--max-call-recv-msg-size', String(o.maxCallRecvMsgSize))
    const line = await runClient(args, timeoutMs)
    const r = JSON.parse(line) as DriverMountResult
    r.objectVersions ??= {}
    return r
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Calls the provider's Version RPC through the driver's client. */
export async function driverVersion(o: DriverVersionOptions): Promise<DriverVersionResult> {
  const timeoutMs = o.timeoutMs ?? 5000
  const line = await runClient(
    ['version', '--socket-dir', o.socketDir, '--provider', o.provider, '--timeout', goDuration(timeoutMs)],
    timeoutMs,
  )
  return JSON.parse(line) as DriverVersionResult
}

export interface MountedFile {
  bytes: Buffer
  /** Permission bits only (mode & 0o777). */
  mode: number
}

/**
 * The files a pod would see in a volume written by the atomic writer: walks `targetPath`,
 * skipping names that start with '..' (the `..data` link and the timestamped dirs), following
 * the visible symlinks into `..data`. Keys are relative paths with '/' separators.
 */
export async function readMountedFiles(targetPath: string): Promise<Map<string, MountedFile>> {
  const out = new Map<string, MountedFile>()
  async function walk(abs: string, rel: string): Promise<void> {
    const names = (await readdir(abs)).sort()
    for (const name of names) {
      if (name.startsWith('..')) continue
      const p = join(abs, name)
      const r = rel === '' ? name : `${rel}/${name}`
      const st = await stat(p) // follows symlinks
      if (st.isDirectory()) await walk(p, r)
      else if (st.isFile()) out.set(r, { bytes: await readFile(p), mode: st.mode & 0o777 })
    }
  }
  await walk(targetPath, '')
  return out
}

/**
 * Where `<targetPath>/..data` points (the current timestamped payload dir), or null if absent.
 * Unchanged when a Mount rewrote nothing.
 */
export async function mountedDataDir(targetPath: string): Promise<string | null> {
  try {
    return await readlink(join(targetPath, '..data'))
  } catch {
    return null
  }
}
