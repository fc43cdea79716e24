// The built daemon checks every flag before it starts anything: a bad value
// exits 2 with the flag named on stderr, creates no socket and binds no port.
// (Before: -health-addr=bogus logged and ran on without health,
// -vault-addr-allowlist=foo exited 1, -mount-timeout=foo exited 2.)
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { PROVIDER_MAIN } from '../support/provider.js'
import { tempDirFor } from '../support/tmp.js'

interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
  stderr: string
  started: boolean
}

/**
 * Runs the daemon until it exits, or until its socket appears (it started
 * although a flag was bad: then it is stopped and the exit is reported as
 * `started`).
 */
function runDaemon(args: string[], socketPath: string, t: { teardown(fn: () => unknown): void }): Promise<Exit> {
  const child = spawn(process.execPath, [PROVIDER_MAIN, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    // A clean environment, as a container has: no VAULT_* from the developer's shell.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root' },
  })
  // A daemon that starts anyway would run until killed: the test then fails on the exit code.
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => (stderr += chunk))
  const closed = new Promise<Exit>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, stderr, started })),
  )
  let started = false
  const watch = setInterval(() => {
    if (!existsSync(socketPath)) return
    started = true
    child.kill('SIGKILL')
  }, 50)
  return closed.finally(() => clearInterval(watch))
}

const CASES: Array<{ flag: string; value: string; why: RegExp }> = [
  { flag: '-health-addr', value: 'bogus', why: /-health-addr must be host:port such as :8080/ },
  {
    flag: '-vault-addr-allowlist',
    value: 'foo',
    why: /-vault-addr-allowlist entry "foo" is not a URL such as https:\/\/vault\.example:8200/,
  },
  { flag: '-mount-timeout', value: 'foo', why: /-mount-timeout must be a duration such as 90s, 2m or 1m30s/ },
]

for (const c of CASES) {
  t.test(`${c.flag}=${c.value}: exit 2 before anything starts`, async (t) => {
    const dir = await tempDirFor(t, 'vcp-config-')
    const socketPath = join(dir, 'vault.sock')
    const exit = await runDaemon(
      [`-endpoint=${socketPath}`, `-hmac-key-file=${join(dir, 'hmac.key')}`, `${c.flag}=${c.value}`],
      socketPath,
      t,
    )
    t.equal(exit.started, false, 'the daemon did not start serving')
    t.equal(exit.code, 2, `exit code (stderr: ${exit.stderr.slice(0, 300)})`)
    t.match(exit.stderr, c.why, 'stderr names the flag and says why')
    t.match(exit.stderr, /^vault-csi-provider-ts: /, 'one line from the daemon, not a stack trace')
    t.notMatch(exit.stderr, /\n\s+at /, 'no stack trace')
  })
}

t.test('-mode=sync-controller: no start without the mounted key file', async (t) => {
  const dir = await tempDirFor(t, 'vcp-config-')
  const socketPath = join(dir, 'vault.sock')
  const noFlag = await runDaemon([`-endpoint=${socketPath}`, '-mode=sync-controller'], socketPath, t)
  t.equal(noFlag.started, false)
  t.equal(noFlag.code, 2, 'without -hmac-key-file: a configuration error')
  t.match(noFlag.stderr, /-mode=sync-controller needs -hmac-key-file/)

  const keyPath = join(dir, 'hmac', 'key')
  const noFile = await runDaemon(
    [`-endpoint=${socketPath}`, '-mode=sync-controller', `-hmac-key-file=${keyPath}`],
    socketPath,
    t,
  )
  t.equal(noFile.started, false, 'the socket was never served')
  t.equal(noFile.code, 1, `exit code (stderr: ${noFile.stderr.slice(0, 300)})`)
  t.match(noFile.stderr, /HMAC key file .*\/hmac\/key does not exist: mount the key from a Secret there/)
  t.notOk(existsSync(keyPath), 'no key file was created in its place')
})
