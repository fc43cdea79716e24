// A throw-away PostgreSQL cluster on loopback for OpenBao's database secrets engine.
// Uses Debian's server binaries (/usr/lib/postgresql/<major>/bin, installed by
// scripts/setup.sh when missing). PostgreSQL refuses to run as root, so when the tests run
// as root the cluster directory is given to the `postgres` system user (created if missing)
// and initdb/pg_ctl run through `runuser -u postgres --`.
import { execFile, execFileSync } from 'node:child_process'
import { chownSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import { appendFile, chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { freePort } from './ports.js'
import { mustSucceed, type OpenBao } from './openbao.js'

export interface Postgres {
  host: string
  port: number
  /** Superuser role name (password auth over TCP). */
  user: string
  password: string
  /** An existing database, 'postgres'. */
  database: string
  /** Temp dir holding data/, the socket and the server log; removed by stop(). */
  dir: string
  logPath: string
  /**
   * postgresql://... URL. With templated=true it has {{username}}/{{password}} placeholders,
   * as OpenBao's postgresql-database-plugin `connection_url` expects.
   */
  connectionUrl(templated?: boolean): string
  /** Runs SQL with psql as the superuser; returns unaligned, tuples-only output (-At). */
  psql(sql: string, opts?: { user?: string; password?: string; database?: string }): Promise<string>
  /** Immediate shutdown and removal of `dir`. Safe to call more than once. */
  stop(): Promise<void>
}

export interface StartPostgresOptions {
  port?: number
  user?: string
  password?: string
}

/** The newest /usr/lib/postgresql/<major>/bin with initdb, or env PG_BIN. */
export function postgresBinDir(): string {
  const env = process.env['PG_BIN']
  if (env !== undefined && env !== '') return env
  const base = '/usr/lib/postgresql'
  let best: string | undefined
  let bestMajor = -1
  if (existsSync(base)) {
    for (const v of readdirSync(base)) {
      const major = Number(v)
      if (!Number.isInteger(major)) continue
      const bin = join(base, v, 'bin')
      if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl')) && major > bestMajor) {
        bestMajor = major
        best = bin
      }
    }
  }
  if (best === undefined) throw new Error('PostgreSQL server binaries not found: run scripts/setup.sh first')
  return best
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0

function ensurePostgresUser(): { uid: number; gid: number } {
  const ids = (): { uid: number; gid: number } => ({
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
  })
  try {
    return ids()
  } catch {
    execFileSync('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      'postgres',
    ])
    return ids()
  }
}

function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; asPostgres?: boolean; timeoutMs?: number } = {},
): Promise<string> {
  const [file, argv] =
    opts.asPostgres === true && isRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]
  return new Promise((resolvePromise, reject) => {
    execFile(
      file,
      argv,
      { cwd: opts.cwd, env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 60_000, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr}`))
        else resolvePromise(stdout)
      },
    )
  })
}

const live = new Set<string>() // data dirs of running clusters
let hook = false
function installExitHook(): void {
  if (hook) return
  hook = true
  process.on('exit', () => {
    for (const dataDir of live) {
      try {
        const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
        if (pid > 0) process.kill(pid, 'SIGQUIT') // immediate shutdown
      } catch {
        /* not running */
      }
    }
  })
}

/**
 * initdb + pg_ctl start of a fresh cluster in a temp dir, listening on 127.0.0.1:<free port>
 * (TCP: scram-sha-256 password auth; unix socket inside the temp dir: trust).
 */
export async function startPostgres(opts: StartPostgresOptions = {}): Promise<Postgres> {
  const bin = postgresBinDir()
  const user = opts.user ?? 'vcp_admin'
  const password = opts.password ?? randomBytes(18).toString('base64url')
  const dir = await mkdtemp(join(tmpdir(), 'vcp-pg-'))
  const dataDir = join(dir, 'data')
  const sockDir = join(dir, 'sock')
  const logPath = join(dir, 'postgres.log')
  const pwFile = join(dir, 'pwfile')
  const env: NodeJS.ProcessEnv = { ...process.env, LC_ALL: 'C', LANG: 'C' }
  delete env['PGDATA']
  delete env['PGHOST']
  delete env['PGPORT']

  try {
    await writeFile(pwFile, password + '\n', { mode: 0o600 })
    await mkdir(sockDir, { mode: 0o700 })
    if (isRoot) {
      const { uid, gid } = ensurePostgresUser()
      for (const p of [dir, pwFile, sockDir]) chownSync(p, uid, gid)
    }
    await run(
      join(bin, 'initdb'),
      [
        '-D',
        dataDir,
        '-U',
        user,
        `--pwfile=${pwFile}`,
        '--auth-host=scram-sha-256',
        '--auth-local=trust',
        '--no-locale',
        '-E',
        'UTF8',
        '--no-sync',
        '--no-instructions',
      ],
      { cwd: dir, env, asPostgres: true },
    )
    await rm(pwFile, { force: true })
  } catch (err) {
    await rm(dir, { recursive: true, force: true })
    throw err
  }

  const attempts = opts.port === undefined ? 3 : 1
  let port = 0
  let started = false
  let lastErr: unknown
  for (let i = 0; i < attempts && !started; i++) {
    port = opts.port ?? (await freePort())
    // Settings go into postgresql.conf (last one wins), so no shell quoting is involved.
    await appendFile(
      join(dataDir, 'postgresql.conf'),
      [
        '',
        `listen_addresses = '127.0.0.1'`,
        `port = ${port}`,
        `unix_socket_directories = '${sockDir}'`,
        `fsync = off`,
        `synchronous_commit = off`,
        `full_page_writes = off`,
        `max_connections = 100`,
        '',
      ].join('\n'),
    )
    try {
      await run(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', logPath, '-w', '-t', '60', 'start'], {
        cwd: dir,
        env,
        asPostgres: true,
        timeoutMs: 90_000,
      })
      started = true
    } catch (err) {
      const log = existsSync(logPath) ? readFileSync(logPath, 'utf8') : ''
      lastErr = new Error(`${(err as Error).message}\nserver log:\n${log.slice(-2000)}`)
      if (!/could not bind|already in use/i.test(log)) break
    }
  }
  if (!started) {
    await rm(dir, { recursive: true, force: true })
    throw lastErr
  }
  installExitHook()
  live.add(dataDir)
  await chmod(logPath, 0o644).catch(() => undefined)

  let stopped = false
  const pg: Postgres = {
    host: '127.0.0.1',
    port,
    user,
    password,
    database: 'postgres',
    dir,
    logPath,
    connectionUrl(templated = false) {
      const u = templated ? '{{username}}' : encodeURIComponent(user)
      const p = templated ? '{{password}}' : encodeURIComponent(password)
      return `postgresql://${u}:${p}@127.0.0.1:${port}/postgres?sslmode=disable`
    },
    async psql(sql, o = {}) {
      return await run(
        join(bin, 'psql'),
        [
          '-X',
          '-v',
          'ON_ERROR_STOP=1',
          '-At',
          '-h',
          '127.0.0.1',
          '-p',
          String(port),
          '-U',
          o.user ?? user,
          '-d',
          o.database ?? 'postgres',
          '-c',
          sql,
        ],
        { env: { ...env, PGPASSWORD: o.password ?? password, PGCONNECT_TIMEOUT: '10' } },
      )
    },
    async stop() {
      if (stopped) return
      stopped = true
      try {
        await run(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], {
          cwd: dir,
          env,
          asPostgres: true,
        })
      } catch {
        /* already stopped */
      }
      live.delete(dataDir)
      if (process.env['KEEP_TEST_TMP'] !== '1') await rm(dir, { recursive: true, force: true })
    },
  }
  return pg
}

export interface DatabaseEngineOptions {
  /** Secrets engine mount. Default 'database'. */
  mount?: string
  /** Connection name (config/<name>). Default 'pg'. */
  connection?: string
  /** Role name (roles/<role>). Default 'app'. */
  role?: string
  defaultTtl?: string
  maxTtl?: string
  /** Skip enabling the mount (already enabled). */
  mountExists?: boolean
}

/**
 * Enables the database secrets engine, configures a postgresql-database-plugin connection
 * to `pg` (connection_url with {{username}}/{{password}} templating, superuser credentials)
 * and creates a role whose creds are new LOGIN roles. Read `<mount>/creds/<role>` afterwards.
 */
export async function configurePostgresSecretsEngine(
  bao: OpenBao,
  pg: Postgres,
  o: DatabaseEngineOptions = {},
): Promise<{ mount: string; connection: string; role: string }> {
  const mount = o.mount ?? 'database'
  const connection = o.connection ?? 'pg'
  const role = o.role ?? 'app'
  if (o.mountExists !== true) await bao.enableSecrets('database', mount)
  mustSucceed(
    'configure database connection',
    await bao.api('POST', `/v1/${mount}/config/${connection}`, {
      plugin_name: 'postgresql-database-plugin',
      connection_url: pg.connectionUrl(true),
      username: pg.user,
      password: pg.password,
      allowed_roles: [role],
      verify_connection: true,
    }),
  )
  mustSucceed(
    'create database role',
    await bao.api('POST', `/v1/${mount}/roles/${role}`, {
      db_name: connection,
      creation_statements: [
        `CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';`,
        `GRANT CONNECT ON DATABASE postgres TO "{{name}}";`,
      ],
      default_ttl: o.defaultTtl ?? '1h',
      max_ttl: o.maxTtl ?? '24h',
    }),
  )
  return { mount, connection, role }
}
