// Stack traces from the built daemon name src/ files and lines: the image runs dist/daemon.js, one
// esbuild bundle, with its map beside it (read when a stack is logged, src/observability/stack-map.ts). Started here exactly as the
// Dockerfile's ENTRYPOINT starts it (its Node flags and script, from the WORKDIR, test/support/image.ts),
// with an endpoint it cannot create, it logs the error with its stack and exits.
import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { isAbsolute, join, sep } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { imageEntrypoint } from '../support/image.js'
import { tempDirFor } from '../support/tmp.js'

interface Frame {
  file: string
  line: number
}

/** The file and line of each `    at fn (file:line:column)` or `    at file:line:column` line of a V8 stack. */
function frames(stack: string): Frame[] {
  return stack
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('at '))
    .map((l) => {
      const location = l.endsWith(')') ? l.slice(l.lastIndexOf('(') + 1, -1) : l.slice('at '.length)
      const parts = location.split(':')
      return { file: parts.slice(0, -2).join(':'), line: Number(parts.at(-2)) }
    })
}

/** Runs the ENTRYPOINT with `args` in a clean environment; resolves with its exit code and output. */
function runEntrypoint(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [, ...rest] = imageEntrypoint()
  return new Promise((resolve, reject) => {
    // The image's node is the one running this test; no NODE_OPTIONS (tap's loaders), as in the image.
    const child = spawn(process.execPath, [...rest, ...args], {
      cwd: PACKAGE_ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'production' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    child.on('error', reject)
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

t.test('an error logged by the built daemon has a stack that names src/main.ts and a line', async (t) => {
  const dir = await tempDirFor(t, 'vcp-stack-')
  const file = join(dir, 'a-file')
  await writeFile(file, '')
  // A socket under a regular file: its directory cannot be made.
  const { code, stdout, stderr } = await runEntrypoint([`-endpoint=${file}/vault.sock`, '-health-addr=off'])
  t.equal(code, 1, `it exits 1 (stderr: ${stderr.slice(0, 1000)})`)
  const lines = stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; msg: string; err?: { stack?: string } })
  const logged = lines.find((l) => l.msg === 'cannot serve the provider socket')
  t.equal(logged?.level, 'error', `the failure is logged (output: ${stdout.slice(0, 2000)})`)
  const stack = logged?.err?.stack ?? ''
  const inMain = frames(stack).filter((f) => f.file.endsWith(`${sep}src${sep}main.ts`))
  t.ok(inMain.length > 0, `a frame in src/main.ts (stack: ${stack})`)
  t.ok(
    inMain.every((f) => isAbsolute(f.file) && Number.isInteger(f.line) && f.line > 0),
    'named by its absolute path and a line number',
  )
  t.notOk(stack.includes(join('dist', 'daemon.js')), 'no frame is left in the bundle')
})
