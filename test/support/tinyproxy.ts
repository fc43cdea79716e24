// A real forward proxy for the egress-proxy tests: Debian's tinyproxy (package tinyproxy-bin,
// installed by scripts/setup.sh), on a free loopback port, with a generated config and its own log.
//
// What tinyproxy 1.11 does that these tests rely on (seen, not assumed):
// - `tinyproxy -d -c FILE` stays in the foreground and writes its log to the config's LogFile.
// - At LogLevel Info each request is one line, `Request (file descriptor N): CONNECT host:port
//   HTTP/1.1` for a tunnel or `Request (file descriptor N): GET http://host:port/path HTTP/1.1`
//   for an absolute-form request, logged before access checks and authentication.
// - `ConnectPort N` lines restrict CONNECT to those ports (403 "Access violation" for others);
//   `BasicAuth user password` answers 407 to requests without those credentials.
// - Run as root without a `User` line it warns and keeps the current user.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import net from 'node:net'
import { join } from 'node:path'
import { freePort } from './ports.js'
import { processTempDir } from './tmp.js'

export const TINYPROXY_BIN = process.env.TINYPROXY_BIN ?? '/usr/bin/tinyproxy'

export interface TinyproxyOptions {
  /** Ports CONNECT may open (tinyproxy's ConnectPort); default: any. */
  connectPorts?: number[]
  /** Require these credentials (tinyproxy's BasicAuth). */
  basicAuth?: { user: string; password: string }
}

export interface Tinyproxy {
  /** 127.0.0.1 */
  host: string
  port: number
  /** http://127.0.0.1:port (no credentials). */
  url: string
  logPath: string
  /** The request lines the proxy logged: `CONNECT host:port HTTP/1.1`, `GET http://… HTTP/1.1`. */
  requests(): Promise<string[]>
  /** The whole log. */
  log(): Promise<string>
  /** SIGTERM, and wait for the exit. Safe to call more than once. */
  stop(): Promise<void>
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port })
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

export async function startTinyproxy(opts: TinyproxyOptions = {}): Promise<Tinyproxy> {
  if (!existsSync(TINYPROXY_BIN))
    throw new Error(`${TINYPROXY_BIN} not found: run scripts/setup.sh (it installs Debian's tinyproxy-bin)`)
  const dir = await processTempDir('tinyproxy-')
  const port = await freePort()
  const logPath = join(dir, 'tinyproxy.log')
  const lines = [
    `Port ${port}`,
    'Listen 127.0.0.1',
    'Timeout 30',
    `LogFile "${logPath}"`,
    'LogLevel Info',
    `PidFile "${join(dir, 'tinyproxy.pid')}"`,
    'MaxClients 100',
    'Allow 127.0.0.1',
    'DisableViaHeader Yes',
    ...(opts.connectPorts ?? []).map((p) => `ConnectPort ${p}`),
    ...(opts.basicAuth ? [`BasicAuth ${opts.basicAuth.user} ${opts.basicAuth.password}`] : []),
  ]
  const configPath = join(dir, 'tinyproxy.conf')
  await writeFile(configPath, lines.join('\n') + '\n')
  const child: ChildProcess = spawn(TINYPROXY_BIN, ['-d', '-c', configPath], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()))
  let exited = false
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true
      resolve()
    }),
  )
  process.once('exit', () => {
    if (!exited) child.kill('SIGKILL')
  })
  const log = async (): Promise<string> => (existsSync(logPath) ? readFile(logPath, 'utf8') : '')
  const deadline = Date.now() + 10_000
  while (!(await accepts(port))) {
    if (exited || Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`tinyproxy did not listen on 127.0.0.1:${port}: ${stderr}\n${await log()}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  return {
    host: '127.0.0.1',
    port,
    url: `http://127.0.0.1:${port}`,
    logPath,
    log,
    async requests() {
      return (await log())
        .split('\n')
        .map((l) => /Request \(file descriptor \d+\): (.*)$/.exec(l)?.[1])
        .filter((r): r is string => r !== undefined)
    },
    async stop() {
      if (!exited) child.kill('SIGTERM')
      await exit
    },
  }
}
