// The provider as the tests run it: the built daemon the image runs (dist/daemon.js, src/main.ts and its
// packages in one file, scripts/bundle.mjs) in its own process, on a real unix socket, its log lines
// captured to a file. Node's flags are the test's to give (nodeArgs; the image's: test/support/image.ts).
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, openSync, closeSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import net from 'node:net'
import { join } from 'node:path'
import { processTempDir } from './tmp.js'
import { PACKAGE_ROOT } from '../../src/package-info.js'

/** The built daemon; VCP_PROVIDER_MAIN points at another build (e.g. a private outDir). */
export const PROVIDER_MAIN = process.env.VCP_PROVIDER_MAIN ?? join(PACKAGE_ROOT, 'dist', 'daemon.js')
/** The built CLI (tsc's output; the image ships it as dist/src/cli/main.js); VCP_CLI_MAIN names another. */
export const CLI_MAIN = process.env.VCP_CLI_MAIN ?? join(PACKAGE_ROOT, 'dist', 'src', 'cli', 'main.js')

export interface StartProviderOptions {
  /** Directory for vault.sock (default: a fresh temp dir). */
  socketDir?: string
  /** Socket file names in socketDir the daemon serves (one -endpoint list); default ['vault.sock']. */
  socketNames?: string[]
  /** Extra flags. */
  args?: string[]
  /** Node's own flags, before the script (e.g. the image's heap flags). */
  nodeArgs?: string[]
  /** Extra environment (the process gets a clean one: PATH and HOME only). */
  env?: Record<string, string>
  /** Default trace: the log-hygiene checks then cover every level. */
  logLevel?: string
  /** Default: a key file in the socket dir, so versions survive restarts; '' for none. */
  hmacKeyFile?: string
}

export interface ProviderProcess {
  socketDir: string
  socketPath: string
  logPath: string
  child: ChildProcess
  pid: number
  /** Everything the process wrote to stdout and stderr so far. */
  logs(): Promise<string>
  /** Parsed JSON log lines (non-JSON lines are skipped). */
  logLines(): Promise<Array<Record<string, unknown>>>
  /** Sends `signal` and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Whether something accepts connections on the unix socket. */
export function canConnect(socketPath: string): Promise<boolean> {
  return new Promise((res) => {
    const s = net.connect({ path: socketPath })
    s.once('connect', () => {
      s.destroy()
      res(true)
    })
    s.once('error', () => res(false))
  })
}

export async function startProvider(opts: StartProviderOptions = {}): Promise<ProviderProcess> {
  if (!existsSync(PROVIDER_MAIN)) throw new Error(`${PROVIDER_MAIN} missing: run npm run build first`)
  const socketDir = opts.socketDir ?? (await processTempDir('sock-'))
  const socketNames = opts.socketNames ?? ['vault.sock']
  const socketPath = join(socketDir, socketNames[0]!)
  const logDir = await processTempDir('log-')
  const logPath = join(logDir, 'provider.log')
  const fd = openSync(logPath, 'a')
  const args = [
    PROVIDER_MAIN,
    `-endpoint=${socketNames.map((n) => join(socketDir, n)).join(',')}`,
    `-log-level=${opts.logLevel ?? 'trace'}`,
    // Parallel test files must not fight over :8080; a test that needs the port passes its own.
    ...((opts.args ?? []).some((a) => a.startsWith('-health-addr')) ? [] : ['-health-addr=127.0.0.1:0']),
    // An empty hmacKeyFile means: no key file, use the Kubernetes Secret.
    ...(opts.hmacKeyFile === '' ? [] : [`-hmac-key-file=${opts.hmacKeyFile ?? join(socketDir, 'hmac.key')}`]),
    ...(opts.args ?? []),
  ]
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...args], {
    stdio: ['ignore', fd, fd],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', ...(opts.env ?? {}) },
  })
  closeSync(fd)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.once('exit', (code, signal) => res({ code, signal })),
  )
  let done = false
  void exited.then(() => {
    done = true
  })
  const logs = (): Promise<string> => readFile(logPath, 'utf8')
  const deadline = Date.now() + 15_000
  for (;;) {
    if (done) throw new Error(`provider exited during start-up:\n${await logs()}`)
    if (existsSync(socketPath) && (await canConnect(socketPath))) break
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`provider did not serve ${socketPath} within 15 s:\n${await logs()}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  return {
    socketDir,
    socketPath,
    logPath,
    child,
    pid: child.pid!,
    logs,
    async logLines() {
      return (await logs())
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => {
          try {
            return JSON.parse(l) as Record<string, unknown>
          } catch {
            return {}
          }
        })
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (!done) child.kill(signal)
      return exited
    },
    exited,
  }
}

/** The port a provider started with `-health-addr=127.0.0.1:0` logged for its health and metrics. */
export async function healthPort(provider: ProviderProcess): Promise<number> {
  const until = Date.now() + 10_000
  for (;;) {
    const line = (await provider.logLines()).find((l) => l.msg === 'serving health and metrics over HTTP')
    if (line && typeof line.port === 'number') return line.port
    if (Date.now() > until) throw new Error(`no health/metrics port in the log:\n${await provider.logs()}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
