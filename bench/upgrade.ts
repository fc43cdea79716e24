// The upgrade scenario (issue 40): what replacing the provider costs Vault. 110 pods mount a
// class of one database credential, one PKI certificate and three KV values, and re-mount a few
// rounds; then a new provider process starts in the same socket directory while the old one
// serves, as a DaemonSet rolling update with maxSurge does it (a round of Mounts runs through the
// replacement), the old one is stopped once the new one serves, and the pods re-mount again.
// Everything is counted from OpenBao's audit log; what the upgrade causes is the rounds around
// the replacement minus what the same rounds cost without one (the last round before it).
import { lstat, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { readMountedFiles } from '../test/support/driver-client.js'
import { auditSize, countAuditSince, emptyCounts, type VaultCounts } from './audit.js'
import { PROJECTION } from './economy.js'
import { attributesFor, failures, makePods, mountMany, type ManyCall, type ManyOutput, type SpcObject } from './load.js'
import { productionNodeFlags, startProviderUnderTest, type ProviderUnderTest } from './providers.js'
import { settleAudit, SMALL_KV, startProvider, type Context, type Variant } from './scenarios.js'

/** One database credential (username and password from one lease), one certificate (with its key), three KV values. */
export const UPGRADE_OBJECTS: SpcObject[] = [
  { objectName: 'db-username', secretPath: 'database/creds/app', secretKey: 'username' },
  { objectName: 'db-password', secretPath: 'database/creds/app', secretKey: 'password' },
  {
    objectName: 'tls.crt',
    secretPath: 'pki/issue/app',
    method: 'PUT',
    secretKey: 'certificate',
    secretArgs: { common_name: 'app.bench.test', ttl: '24h' },
  },
  {
    objectName: 'tls.key',
    secretPath: 'pki/issue/app',
    method: 'PUT',
    secretKey: 'private_key',
    secretArgs: { common_name: 'app.bench.test', ttl: '24h' },
  },
  ...SMALL_KV.slice(0, 3),
]

/** Re-mount rounds before the replacement (the last one is the steady round), and after it. */
export const UPGRADE_ROUNDS_BEFORE = 3
export const UPGRADE_ROUNDS_AFTER = 2
/**
 * Mounts at once in every round: few enough that the round through the replacement lasts beyond it,
 * and the same in every round, since in serviceaccount scope how many KV reads coalesce depends on it.
 */
const CONCURRENCY = 8
/** The new process starts this long after that round began. */
const REPLACE_AFTER_MS = 300

/** Ours without the state handover: the provider as it was before issue 40 (it restarts cold). */
export const NO_HANDOVER_ARG = '-state-handover=false'

/** The figures that say what an upgrade costs Vault. */
export interface UpgradeFigures {
  logins: number
  dbCreds: number
  certs: number
  kvReads: number
}

export interface UpgradeResult {
  variant: string
  pods: number
  /** The last round before the replacement: what a round costs anyway. */
  steady: VaultCounts
  /** The round through the replacement and the first one after it. */
  window: VaultCounts
  /** window − 2 × steady: what the upgrade caused. */
  caused: UpgradeFigures
  /** The second round after the replacement: steady again. */
  after: VaultCounts
  /**
   * Leases that served a pod right before the upgrade, are still valid in OpenBao at the end and
   * serve nobody: the pod has another one, and no running process will renew or revoke it (they
   * live until their TTL). Database credentials: the lease behind each pod's username before the
   * upgrade (from the audit log, its username matched through sys/audit-hash), looked up with
   * sys/leases/lookup; left behind if valid and the pod's username changed. Tokens: those that
   * made the pods' requests in the steady round, neither revoked nor used after the replacement.
   */
  leftBehind: { dbCreds: number; tokens: number }
  /** Failed Mounts in the round through the replacement and the rounds after it. */
  failed: number
  sampleError: string | undefined
  /** Pods whose files were byte for byte the same after the upgrade as before. */
  unchangedPods: number
  /** What the new process's log says it took over (ours with the state handover). */
  handover: { identities: number; leases: number } | undefined
  /** From starting the new process until it served the socket. */
  replaceMs: number
}

interface AuditEntry {
  type?: string
  error?: string
  auth?: { accessor?: string; policies?: string[] }
  request?: { path?: string; operation?: string }
  response?: { secret?: { lease_id?: string }; data?: { username?: string } }
}

/** Whole lines of the audit log from byte `offset` on. */
async function auditEntries(file: string, offset: number): Promise<AuditEntry[]> {
  const text = (await readFile(file)).subarray(offset).toString('utf8')
  const out: AuditEntry[] = []
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    try {
      out.push(JSON.parse(line) as AuditEntry)
    } catch {
      /* a partly written last line */
    }
  }
  return out
}

const isProviderResponse = (e: AuditEntry): boolean =>
  e.type === 'response' && e.auth?.policies?.includes('root') !== true

/** The (audit-hashed) accessors of the tokens that made provider requests among `entries`. */
function accessorsOf(entries: AuditEntry[]): Set<string> {
  const out = new Set<string>()
  for (const e of entries) {
    const p = e.request?.path ?? ''
    if (isProviderResponse(e) && !p.startsWith('auth/') && e.auth?.accessor) out.add(e.auth.accessor)
  }
  return out
}

function revokedAccessors(entries: AuditEntry[]): Set<string> {
  const out = new Set<string>()
  for (const e of entries) {
    if (isProviderResponse(e) && e.request?.path === 'auth/token/revoke-self' && !e.error && e.auth?.accessor) {
      out.add(e.auth.accessor)
    }
  }
  return out
}

async function usernames(targets: string[]): Promise<string[]> {
  return Promise.all(targets.map(async (t) => (await readMountedFiles(t)).get('db-username')?.bytes.toString() ?? ''))
}

async function fileSets(targets: string[]): Promise<string[]> {
  return Promise.all(
    targets.map(async (t) =>
      JSON.stringify([...(await readMountedFiles(t))].map(([name, f]) => [name, f.bytes.toString('base64')])),
    ),
  )
}

/**
 * Database leases of `names` (usernames) still valid in OpenBao: each username's lease found in the
 * audit log (the username's audit hash in a database/creds response), looked up with the root token.
 */
async function validLeases(ctx: Context, entries: AuditEntry[], names: string[]): Promise<number> {
  const bao = ctx.world.bao
  const devices = (await bao.api('GET', '/v1/sys/audit')).body as {
    data?: Record<string, { options?: { file_path?: string } }>
  }
  const device = Object.entries(devices.data ?? {}).find(([, d]) => d.options?.file_path === ctx.world.auditFile)?.[0]
  if (device === undefined) throw new Error('the audit device of the benchmark is not listed in sys/audit')
  const leaseByHash = new Map<string, string>()
  for (const e of entries) {
    const lease = e.response?.secret?.lease_id
    const user = e.response?.data?.username
    if (isProviderResponse(e) && e.request?.path === 'database/creds/app' && lease && user) leaseByHash.set(user, lease)
  }
  let valid = 0
  for (const name of names) {
    const hashed = (await bao.api('POST', `/v1/sys/audit-hash/${device.replace(/\/$/, '')}`, { input: name })).body as {
      hash?: string
    }
    const lease = hashed.hash === undefined ? undefined : leaseByHash.get(hashed.hash)
    if (lease === undefined) continue
    const found = await bao.api('PUT', '/v1/sys/leases/lookup', { lease_id: lease })
    if (found.status === 200) valid += 1
  }
  return valid
}

async function socketInode(path: string): Promise<number | undefined> {
  return (await lstat(path).catch(() => undefined))?.ino
}

async function waitFor(what: string, cond: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`upgrade: timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Parsed JSON log lines of one of our processes with this message. */
async function logLines(p: ProviderUnderTest, msg: string): Promise<Array<Record<string, any>>> {
  const text = await readFile(p.logPath, 'utf8').catch(() => '')
  return text
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}"`))
    .map((l) => JSON.parse(l) as Record<string, any>)
}

export async function runUpgrade(ctx: Context, v: Variant, pods: number): Promise<UpgradeResult> {
  const { world } = ctx
  const old = await startProvider(ctx, v, 'upgrade (old)')
  let next: ProviderUnderTest | undefined
  try {
    const podList = await makePods(ctx.dir, `upgrade-${v.kind}-${Date.now()}`, pods, world.podJwt)
    const calls: ManyCall[] = podList.map((pod) => ({
      target: pod.target,
      attributes: attributesFor(pod, UPGRADE_OBJECTS),
    }))
    const targets = podList.map((p) => p.target)
    const round = async (label: string): Promise<{ out: ManyOutput; counts: VaultCounts }> => {
      const from = await auditSize(world.auditFile)
      const out = await mountMany(old.socketDir, calls, CONCURRENCY, ctx.dir)
      await settleAudit()
      const { counts } = await countAuditSince(world.auditFile, from)
      const f = failures(out)
      ctx.log(
        `upgrade: ${v.label}: ${label}: logins ${counts.logins}, db creds ${counts.dbCreds}, certs ${counts.certs}, ` +
          `kv reads ${counts.kvReads}${f.count > 0 ? `, ${f.count} failed (${f.sample ?? ''})` : ''}`,
      )
      return { out, counts }
    }
    const runStart = await auditSize(world.auditFile)
    let steady = emptyCounts()
    let steadyFrom = runStart
    for (let r = 1; r <= UPGRADE_ROUNDS_BEFORE; r++) {
      steadyFrom = await auditSize(world.auditFile)
      const { out, counts } = await round(`round ${r} before`)
      if (failures(out).count > 0) throw new Error(`round ${r} before the upgrade: ${failures(out).sample ?? ''}`)
      steady = counts
    }
    // The tokens that served the pods in the steady round, the pods' credentials and files before the upgrade.
    const heldBefore = accessorsOf(await auditEntries(world.auditFile, steadyFrom))
    const namesBefore = await usernames(targets)
    const filesBefore = await fileSets(targets)

    // The round through the replacement: the new process starts while the old one serves it.
    const windowFrom = await auditSize(world.auditFile)
    const socketPath = join(old.socketDir, 'vault.sock')
    const oldInode = await socketInode(socketPath)
    const through = mountMany(old.socketDir, calls, CONCURRENCY, ctx.dir)
    await new Promise((r) => setTimeout(r, REPLACE_AFTER_MS))
    const replaceStart = Date.now()
    ctx.log(`upgrade: ${v.label}: starting the new process beside the old one`)
    next = await startProviderUnderTest({
      label: `${v.label} upgrade (new)`,
      kind: v.kind,
      dir: ctx.dir,
      vaultAddr: world.bao.addr,
      kubeHost: '127.0.0.1',
      kubePort: world.kubeTls.port,
      saDir: world.saDir,
      args: v.args,
      main: v.main,
      nodeBin: v.nodeBin,
      nodeArgs: v.kind === 'ours' ? productionNodeFlags() : [],
      socketDir: old.socketDir,
    })
    const successor = next
    await waitFor('the new process to serve the socket', async () => {
      const ino = await socketInode(socketPath)
      return ino !== undefined && ino !== oldInode
    })
    const replaceMs = Date.now() - replaceStart
    if (v.kind === 'ours') {
      // The old one finishes its calls and stands by (then its pod is deleted); with the state handover on, the
      // new one has the state by then.
      await waitFor('the old process to stand by', async () => (await logLines(old, 'handover complete')).length > 0)
      if (!v.args.includes(NO_HANDOVER_ARG)) {
        await waitFor(
          'the state taken over',
          async () =>
            (await logLines(successor, 'took over the state of the provider this one replaces')).length > 0 ||
            (await logLines(successor, 'state handover refused; starting cold')).length > 0 ||
            (await logLines(successor, 'starting cold')).length > 0,
        )
      }
    }
    const throughOut = await through
    // The DaemonSet deletes the old pod once the new one is ready. Ours has handed the socket over and stands
    // by: SIGTERM. The reference is killed (SIGKILL): on SIGTERM it closes its listener, and Go's close
    // unlinks the socket path, which by now is the new process's socket, leaving the new one unreachable.
    if (v.kind === 'reference') old.child.kill('SIGKILL')
    await old.stop()
    await settleAudit()
    // From here on only the new process serves: what it uses is what it holds.
    const afterFrom = await auditSize(world.auditFile)
    const afterOne = await round('round 1 after (new process)')
    const window = (await countAuditSince(world.auditFile, windowFrom)).counts
    const afterTwo = await round('round 2 after')
    const allAfter = await auditEntries(world.auditFile, afterFrom)

    const namesAfter = await usernames(targets)
    const filesAfter = await fileSets(targets)
    const changed = namesBefore.filter((n, i) => n !== namesAfter[i])
    const heldAfter = accessorsOf(allAfter)
    const revoked = revokedAccessors(await auditEntries(world.auditFile, windowFrom))
    const allEntries = await auditEntries(world.auditFile, runStart)
    const leftDb = await validLeases(ctx, allEntries, changed)
    const leftTokens = [...heldBefore].filter((a) => !heldAfter.has(a) && !revoked.has(a)).length

    const failedOuts = [throughOut, afterOne.out, afterTwo.out].map(failures)
    const took =
      v.kind === 'ours'
        ? (await logLines(successor, 'took over the state of the provider this one replaces'))[0]
        : undefined
    const caused = (k: keyof UpgradeFigures): number => window[k] - 2 * steady[k]
    return {
      variant: v.label,
      pods,
      steady,
      window,
      caused: {
        logins: caused('logins'),
        dbCreds: caused('dbCreds'),
        certs: caused('certs'),
        kvReads: caused('kvReads'),
      },
      after: afterTwo.counts,
      leftBehind: { dbCreds: leftDb, tokens: leftTokens },
      failed: failedOuts.reduce((n, f) => n + f.count, 0),
      sampleError: failedOuts.find((f) => f.sample !== undefined)?.sample,
      unchangedPods: filesBefore.filter((f, i) => f === filesAfter[i]).length,
      handover:
        took === undefined
          ? undefined
          : { identities: Number(took.identities?.taken_over ?? 0), leases: Number(took.leases?.taken_over ?? 0) },
      replaceMs,
    }
  } finally {
    await old.stop()
    await next?.stop()
  }
}

/** Ours in both scopes with and without the state handover ("before" = the provider as it was), and the reference. */
export function upgradeVariants(ours: Variant[], reference: Variant[]): Variant[] {
  const withoutHandover = ours.map((v) => ({
    ...v,
    label: `${v.label.replace(/\)$/, '')}, no state handover)`,
    args: [...v.args, NO_HANDOVER_ARG],
  }))
  return [...ours, ...withoutHandover, ...reference]
}

/**
 * What one upgrade of a cluster of `nodes` nodes like the measured one costs Vault: n × one node,
 * the fleet projection's arithmetic (bench/economy.ts: every node holds the same pods and its own
 * tokens and leases, independent of the others).
 */
export function projectUpgrade(
  r: UpgradeResult,
  nodes: number,
): UpgradeFigures & { leftBehindDbCreds: number; leftBehindTokens: number } {
  return {
    logins: Math.max(0, r.caused.logins) * nodes,
    dbCreds: Math.max(0, r.caused.dbCreds) * nodes,
    certs: Math.max(0, r.caused.certs) * nodes,
    kvReads: Math.max(0, r.caused.kvReads) * nodes,
    leftBehindDbCreds: r.leftBehind.dbCreds * nodes,
    leftBehindTokens: r.leftBehind.tokens * nodes,
  }
}

/** The cluster sizes of the fleet projection. */
export const UPGRADE_PROJECTION_NODES: readonly number[] = PROJECTION.nodes

function cell(v: number | undefined): string {
  return v === undefined || !Number.isFinite(v) ? 'n/a' : Math.round(v).toLocaleString('en-US')
}

function mdTable(head: string[], rows: string[][]): string[] {
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ]
}

const REFERENCE = 'reference'
const isBefore = (variant: string): boolean => variant.includes('no state handover')

/** results.md's section: per variant what the upgrade caused, the projection, and issue 40's goal. */
export function renderUpgrade(results: UpgradeResult[]): string[] {
  if (results.length === 0) return []
  const r0 = results[0]!
  const out: string[] = ['## 6. Upgrade', '']
  out.push(
    `${r0.pods} pods mount a class of one database credential (username and password from one lease), one PKI certificate (certificate and key) and three KV values, ${UPGRADE_ROUNDS_BEFORE} rounds of ${CONCURRENCY} Mounts at a time over one gRPC connection (as the driver keeps one); then a new provider process starts in the same socket directory while a round runs, the old process is stopped once the new one serves and that round is done (ours: SIGTERM, after it has handed the socket over and stands by; the reference: SIGKILL, since on SIGTERM it unlinks the socket path, by then the new process's socket), and the pods re-mount ${UPGRADE_ROUNDS_AFTER} rounds. "Caused by the upgrade" = the round through the replacement and the first round after it, minus twice the steady round (the last one before). Leases left behind: what served a pod right before the upgrade, is still valid in OpenBao at the end and serves nobody (database credentials: looked up with sys/leases/lookup; tokens: not revoked, not used since). "no state handover" is ours with ${NO_HANDOVER_ARG}: the provider as it was before issue 40.`,
  )
  out.push('')
  out.push(
    ...mdTable(
      [
        'variant',
        'steady round: logins / DB creds / certs / KV reads',
        'caused by the upgrade: logins',
        'DB credentials',
        'certificates',
        'KV reads',
        'left behind: DB credentials',
        'tokens',
        'failed Mounts',
        'pods with unchanged files',
        'taken over: identities / leases',
        'round 2 after: logins / DB creds / certs',
      ],
      results.map((r) => [
        r.variant,
        `${cell(r.steady.logins)} / ${cell(r.steady.dbCreds)} / ${cell(r.steady.certs)} / ${cell(r.steady.kvReads)}`,
        cell(r.caused.logins),
        cell(r.caused.dbCreds),
        cell(r.caused.certs),
        cell(r.caused.kvReads),
        cell(r.leftBehind.dbCreds),
        cell(r.leftBehind.tokens),
        cell(r.failed),
        `${cell(r.unchangedPods)} of ${cell(r.pods)}`,
        r.handover === undefined ? '' : `${cell(r.handover.identities)} / ${cell(r.handover.leases)}`,
        `${cell(r.after.logins)} / ${cell(r.after.dbCreds)} / ${cell(r.after.certs)}`,
      ]),
    ),
  )
  for (const r of results.filter((x) => x.sampleError))
    out.push('', `${r.variant}: first failure: \`${r.sampleError}\``)
  out.push('')
  out.push('### What one upgrade of a cluster costs Vault (projection from the node above)')
  out.push('')
  out.push(
    `The fleet projection's arithmetic (bench/economy.ts): every node like the measured one (${r0.pods} pods, this class), each provider with its own tokens and leases, so a cluster of n nodes costs n × one node. Leases left behind stay in Vault until their TTL (1 h here). The reference issues a new login, credential and certificate on every Mount anyway: the upgrade adds nothing to what each of its rounds costs (its steady round, above).`,
  )
  out.push('')
  const rows: string[][] = []
  for (const r of results.filter((x) => x.failed === 0)) {
    for (const nodes of UPGRADE_PROJECTION_NODES) {
      const p = projectUpgrade(r, nodes)
      rows.push([
        r.variant,
        cell(nodes),
        cell(p.logins),
        cell(p.dbCreds),
        cell(p.certs),
        cell(p.kvReads),
        cell(p.leftBehindDbCreds),
        cell(p.leftBehindTokens),
      ])
    }
  }
  out.push(
    ...mdTable(
      [
        'variant',
        'nodes',
        'logins',
        'DB credentials',
        'certificates',
        'KV reads',
        'DB credentials left behind',
        'tokens left behind',
      ],
      rows,
    ),
  )
  out.push('')
  out.push('### Goal of issue 40')
  out.push('')
  const goal = (r: UpgradeResult): boolean =>
    r.caused.logins <= 0 &&
    r.caused.dbCreds <= 0 &&
    r.caused.certs <= 0 &&
    r.leftBehind.dbCreds === 0 &&
    r.leftBehind.tokens === 0 &&
    r.failed === 0
  out.push(
    ...mdTable(
      ['variant', '0 logins, credentials, certificates, leases left behind and failed Mounts caused by the upgrade'],
      results
        .filter((r) => r.variant !== REFERENCE && !isBefore(r.variant))
        .map((r) => [r.variant, goal(r) ? '**met**' : '**missed**']),
    ),
  )
  out.push('')
  return out
}
