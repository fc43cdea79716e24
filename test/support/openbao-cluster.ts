// A real 3-node OpenBao Raft cluster on 127.0.0.1 for tests: what production runs (HA, integrated
// storage), started the way an operator does: `bao server` with a config file per node, `sys/init` on
// the first, unseal, `sys/storage/raft/join` for the others, then jwt auth and KV v2 as fixture.ts sets
// them up for the dev server.
//
// Findings about OpenBao 2.7.2 that shaped this module:
// - Each node needs its own API and cluster port (`cluster_address`); api_addr and cluster_addr are
//   what the others dial (a standby forwards to the active node's cluster address).
// - An audit device enabled through the API is in the replicated audit table, so every node writes it;
//   `file_path = "stdout"` makes each node write its own entries into its own log, which tells which
//   node served a request (a request a standby forwards is audited by the active node only).
// - A node restarted after it joined comes back sealed and stays so until it is unsealed: the
//   unseal keys live in the cluster's temp dir, as an operator's would in a vault of their own.
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { allowDefaultApp } from './fixture.js'
import { adminOver, BAO_BIN, mustSucceed, type ApiOptions, type ApiResponse, type OpenBaoAdmin } from './openbao.js'
import { freePort } from './ports.js'

export interface ClusterNode {
  /** node0, node1, node2 */
  id: string
  /** http://127.0.0.1:<apiPort> */
  addr: string
  apiPort: number
  clusterPort: number
  logPath: string
  running(): boolean
  /** Raw HTTP call with the root token (unless `token` says otherwise); never throws on a status. */
  api(method: string, path: string, body?: unknown, opts?: ApiOptions): Promise<ApiResponse>
  /** This node's audit entries so far (its own log's JSON lines of the `stdout` audit device). */
  auditEntries(): Array<Record<string, any>>
}

export interface OpenBaoCluster {
  nodes: ClusterNode[]
  rootToken: string
  /** Holds the unseal key, the nodes' configs, data and logs; removed by stop(). */
  dir: string
  /** The node that answers sys/health 200 (active), polled a bounded number of times. */
  activeNode(opts?: { except?: ClusterNode; attempts?: number }): Promise<ClusterNode>
  /** Admin calls (jwt.ts, fixture.ts helpers) against the active node. */
  admin(): Promise<OpenBaoAdmin>
  /** SIGKILL one node; resolves when it has exited. */
  kill(node: ClusterNode): Promise<void>
  /** Starts a stopped node again with its data; it comes up sealed and is left so. */
  restartSealed(node: ClusterNode): Promise<void>
  /** Unseals a node with the cluster's key. */
  unseal(node: ClusterNode): Promise<void>
  /** Every node's audit entries so far. */
  auditEntries(): Array<Record<string, any>>
  stop(): Promise<void>
}

interface NodeProcess {
  child: ChildProcess
  exited: Promise<void>
  done: boolean
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

async function call(
  addr: string,
  method: string,
  path: string,
  body: unknown,
  token: string,
  o: ApiOptions = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) }
  const t = o.token ?? token
  if (t !== '') headers['x-vault-token'] = t
  if (o.namespace !== undefined) headers['x-vault-namespace'] = o.namespace
  const init: RequestInit = { method, headers, signal: AbortSignal.timeout(o.timeoutMs ?? 10_000), redirect: 'manual' }
  if (body !== undefined) {
    headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  const res = await fetch(addr + path, init)
  const text = await res.text()
  const h: Record<string, string> = {}
  res.headers.forEach((v, k) => {
    h[k] = v
  })
  let parsed: unknown = null
  if (text !== '') {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = text
    }
  }
  return { status: res.status, body: parsed, headers: h }
}

function nodeConfig(dir: string, id: string, apiPort: number, clusterPort: number): string {
  return [
    'disable_mlock = true',
    'ui = false',
    'unsafe_allow_api_audit_creation = true',
    `api_addr = "http://127.0.0.1:${apiPort}"`,
    `cluster_addr = "https://127.0.0.1:${clusterPort}"`,
    `storage "raft" {`,
    `  path = ${JSON.stringify(join(dir, id, 'data'))}`,
    `  node_id = "${id}"`,
    `}`,
    `listener "tcp" {`,
    `  address = "127.0.0.1:${apiPort}"`,
    `  cluster_address = "127.0.0.1:${clusterPort}"`,
    `  tls_disable = true`,
    `}`,
    '',
  ].join('\n')
}

/** Polls until `check` holds, at most `attempts` times `everyMs` apart; throws `what` otherwise. */
async function until(what: string, attempts: number, everyMs: number, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check().catch(() => false)) return
    await sleep(everyMs)
  }
  throw new Error(`${what}: not after ${attempts} attempts`)
}

const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL')
})

/**
 * Starts three OpenBao nodes in one Raft cluster, initialised with one unseal key, all unsealed, with
 * jwt auth and the `app` role (fixture.ts allowDefaultApp), KV v2 at `secret/` and a `stdout` audit
 * device. Keep KEEP_TEST_TMP=1 to look at the nodes' logs after a failure.
 */
export async function startOpenBaoCluster(opts: { policy?: string } = {}): Promise<OpenBaoCluster> {
  if (!existsSync(BAO_BIN)) throw new Error(`OpenBao binary not found at ${BAO_BIN}: run scripts/setup.sh first`)
  const dir = await mkdtemp(join(tmpdir(), 'vcp-bao-cluster-'))
  let rootToken = ''
  let unsealKey = ''
  const procs = new Map<string, NodeProcess>()
  const nodes: ClusterNode[] = []

  const launch = (node: ClusterNode): void => {
    const fd = openSync(node.logPath, 'a')
    const child = spawn(BAO_BIN, ['server', `-config=${join(dir, node.id, 'config.hcl')}`], {
      cwd: join(dir, node.id),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: join(dir, node.id) },
      stdio: ['ignore', fd, fd],
    })
    closeSync(fd)
    live.add(child)
    const p: NodeProcess = { child, done: false, exited: Promise.resolve() }
    p.exited = new Promise((r) =>
      child.once('exit', () => {
        p.done = true
        live.delete(child)
        r()
      }),
    )
    procs.set(node.id, p)
  }

  for (let i = 0; i < 3; i++) {
    const id = `node${i}`
    mkdirSync(join(dir, id, 'data'), { recursive: true })
    const apiPort = await freePort()
    let clusterPort = await freePort()
    while (clusterPort === apiPort) clusterPort = await freePort()
    await writeFile(join(dir, id, 'config.hcl'), nodeConfig(dir, id, apiPort, clusterPort))
    const addr = `http://127.0.0.1:${apiPort}`
    const logPath = join(dir, id, 'bao.log')
    const node: ClusterNode = {
      id,
      addr,
      apiPort,
      clusterPort,
      logPath,
      running: () => procs.get(id)?.done === false,
      api: (method, path, body, o) => call(addr, method.toUpperCase(), path, body, rootToken, o),
      auditEntries() {
        if (!existsSync(logPath)) return []
        return readFileSync(logPath, 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('{"'))
          .flatMap((l) => {
            try {
              const entry = JSON.parse(l) as Record<string, any>
              return entry.type === 'request' || entry.type === 'response' ? [entry] : []
            } catch {
              return []
            }
          })
      },
    }
    nodes.push(node)
  }

  const unseal = async (node: ClusterNode): Promise<void> => {
    await until(`unseal ${node.id}`, 100, 200, async () => {
      const res = await node.api('PUT', '/v1/sys/unseal', { key: unsealKey }, { token: '' })
      return res.status === 200 && res.body?.sealed === false
    })
  }

  const activeNode: OpenBaoCluster['activeNode'] = async (o = {}) => {
    let found: ClusterNode | undefined
    await until('an active node', o.attempts ?? 200, 100, async () => {
      for (const n of nodes) {
        if (n === o.except || !n.running()) continue
        const h = await n.api('GET', '/v1/sys/health', undefined, { token: '', timeoutMs: 1000 }).catch(() => undefined)
        if (h?.status === 200) {
          found = n
          return true
        }
      }
      return false
    })
    return found!
  }

  const stop = async (): Promise<void> => {
    for (const p of procs.values()) if (!p.done) p.child.kill('SIGKILL')
    await Promise.all([...procs.values()].map((p) => p.exited))
    if (process.env['KEEP_TEST_TMP'] !== '1') await rm(dir, { recursive: true, force: true })
  }

  try {
    for (const n of nodes) launch(n)
    const first = nodes[0]!
    await until(
      'node0 listening',
      150,
      100,
      async () => (await first.api('GET', '/v1/sys/health', undefined, { token: '' })).status > 0,
    )
    const init = await first.api('PUT', '/v1/sys/init', { secret_shares: 1, secret_threshold: 1 }, { token: '' })
    mustSucceed('sys/init', init)
    rootToken = String(init.body.root_token)
    unsealKey = String(init.body.keys[0])
    // The operator's copy of the key, where the test can find it (never in a log).
    await writeFile(join(dir, 'unseal-key'), unsealKey, { mode: 0o600 })
    await unseal(first)
    await activeNode({ attempts: 300 })
    for (const n of nodes.slice(1)) {
      await until(`${n.id} joins`, 100, 200, async () => {
        const res = await n.api('PUT', '/v1/sys/storage/raft/join', { leader_api_addr: first.addr }, { token: '' })
        return res.status === 200 && res.body?.joined === true
      })
      await unseal(n)
    }
    // Every node a voter and a standby answering 429 (unsealed, not active) before anyone uses it.
    await until('three voters', 150, 200, async () => {
      const cfg = await first.api('GET', '/v1/sys/storage/raft/configuration')
      const servers = (cfg.body?.data?.config?.servers ?? []) as Array<{ voter?: boolean }>
      return servers.length === 3 && servers.every((s) => s.voter === true)
    })
    for (const n of nodes.slice(1)) {
      await until(`${n.id} standby`, 150, 200, async () => {
        const h = await n.api('GET', '/v1/sys/health', undefined, { token: '' })
        return h.status === 429
      })
    }
    const admin = adminOver((m, p, b, o) => first.api(m, p, b, o))
    mustSucceed(
      'enable the stdout audit device',
      await first.api('PUT', '/v1/sys/audit/stdout', { type: 'file', options: { file_path: 'stdout' } }),
    )
    await admin.enableSecrets('kv', 'secret', { version: '2' })
    await allowDefaultApp(admin, opts.policy)
  } catch (err) {
    const tails = nodes.map(
      (n) => `${n.id}: ${existsSync(n.logPath) ? readFileSync(n.logPath, 'utf8').slice(-1500) : ''}`,
    )
    await stop()
    throw new Error(`${(err as Error).message}\n${tails.join('\n')}`, { cause: err })
  }

  return {
    nodes,
    rootToken,
    dir,
    activeNode,
    async admin() {
      const n = await activeNode()
      return adminOver((m, p, b, o) => n.api(m, p, b, o))
    },
    async kill(node) {
      const p = procs.get(node.id)
      if (p && !p.done) p.child.kill('SIGKILL')
      await p?.exited
    },
    async restartSealed(node) {
      if (node.running()) throw new Error(`${node.id} is still running`)
      launch(node)
      await until(`${node.id} up, sealed`, 150, 100, async () => {
        const h = await node.api('GET', '/v1/sys/health', undefined, { token: '', timeoutMs: 1000 })
        return h.status === 503 && h.body?.sealed === true
      })
    },
    unseal,
    auditEntries: () => nodes.flatMap((n) => n.auditEntries()),
    stop,
  }
}
