// The fleet scenario (issue 12): N provider processes stand for N nodes, each
// with its own socket, its own read of the HMAC key Secret and its own pods; a
// rollout of N × pods-per-node pods mounts at once against ONE OpenBao. What
// OpenBao saw comes from its audit log: every request, the busiest second (from
// the entries' own timestamps), logins, tokens and leases left held.
import { auditSize, countAuditSince, peakPerSecond, totalRequests, type VaultCounts } from './audit.js'
import { attributesFor, failures, makePods, mountMany, type ManyOutput, type SpcObject } from './load.js'
import type { ProviderUnderTest } from './providers.js'
import { nowMs } from './proxy.js'
import { median } from './stats.js'
import { settleAudit, SMALL_KV, startProvider, type Context, type Variant } from './scenarios.js'

/**
 * What each pod mounts: the 5 KV values of the storm plus one database credential (username and
 * password from one lease), so that leases show up as they would for a typical application.
 */
export const FLEET_OBJECTS: SpcObject[] = [
  ...SMALL_KV,
  { objectName: 'db-username', secretPath: 'database/creds/app', secretKey: 'username' },
  { objectName: 'db-password', secretPath: 'database/creds/app', secretKey: 'password' },
]

export interface FleetResult {
  variant: string
  nodes: number
  podsPerNode: number
  /** Node i's pods started i × spreadSec / nodes after the first node's. */
  spreadSec: number
  objectsPerPod: number
  ok: number
  failed: number
  sampleError: string | undefined
  /** From the rollout's start until the last pod's files were written (driver client's MountContent). */
  allDoneMs: number
  /** Per node, until its last pod was done: median and max. */
  nodeDoneP50Ms: number
  nodeDoneMaxMs: number
  counts: VaultCounts
  /** Every provider request OpenBao answered during the rollout. */
  requests: number
  /** The most provider requests OpenBao finished within one second (audit timestamps). */
  peakPerSec: number
  /** Seconds in which OpenBao answered at least one provider request. */
  activeSeconds: number
  /** Tokens created by logins and not revoked by the end of the rollout. */
  tokensHeld: number
  /** Secret leases (e.g. database credentials) created and not revoked by the end of the rollout. */
  leasesHeld: number
  /** HMAC key Secret GETs at the Kubernetes API during the rollout, all nodes. */
  hmacGets: number
}

export async function runFleet(
  ctx: Context,
  v: Variant,
  nodes: number,
  podsPerNode: number,
  spreadSec: number,
): Promise<FleetResult> {
  // Twenty CPU profiles per variant would only slow the fleet down; profiles come from the other scenarios.
  const quiet: Context = { ...ctx, profileDir: undefined }
  const providers: ProviderUnderTest[] = []
  try {
    ctx.log(`fleet: ${v.label}: starting ${nodes} provider processes (one per node)`)
    for (let i = 0; i < nodes; i++) providers.push(await startProvider(quiet, v, `fleet node ${i + 1}`))
    const perNode = await Promise.all(
      providers.map(async (_, i) => {
        const pods = await makePods(ctx.dir, `fleet-${v.kind}-${i + 1}-${Date.now()}`, podsPerNode, ctx.world.podJwt)
        return pods.map((pod) => ({ target: pod.target, attributes: attributesFor(pod, FLEET_OBJECTS) }))
      }),
    )
    const hmacBefore = ctx.world.kubeTls.calls.length
    const before = await auditSize(ctx.world.auditFile)
    ctx.log(
      `fleet: ${v.label}: ${nodes} nodes × ${podsPerNode} pods mount ${FLEET_OBJECTS.length} objects, ` +
        `node by node over ${spreadSec} s, all pods of a node at once`,
    )
    const start = nowMs()
    // Node i's pods all start at i × spread / nodes: a rollout that reaches the nodes one after
    // another, each node's pods at once (as in the storm).
    const outs: ManyOutput[] = await Promise.all(
      providers.map(async (p, i) => {
        await new Promise((r) => setTimeout(r, (i * spreadSec * 1000) / nodes))
        return mountMany(p.socketDir, perNode[i]!, podsPerNode, ctx.dir)
      }),
    )
    const nodeDone = outs.map((o) => o.startUnixMs + o.wallMs - start)
    await settleAudit()
    const { counts, perSecond } = await countAuditSince(ctx.world.auditFile, before)
    const hmacGets = ctx.world.kubeTls.calls
      .slice(hmacBefore)
      .filter((c) => c.method === 'GET' && c.path.includes('/secrets/')).length
    const all: ManyOutput = { ok: true, startUnixMs: start, wallMs: 0, results: outs.flatMap((o) => o.results) }
    const f = failures(all)
    return {
      variant: v.label,
      nodes,
      podsPerNode,
      spreadSec,
      objectsPerPod: FLEET_OBJECTS.length,
      ok: all.results.length - f.count,
      failed: f.count,
      sampleError: f.sample,
      allDoneMs: Math.max(...nodeDone),
      nodeDoneP50Ms: median(nodeDone),
      nodeDoneMaxMs: Math.max(...nodeDone),
      counts,
      requests: totalRequests(counts),
      peakPerSec: peakPerSecond(perSecond),
      activeSeconds: Object.keys(perSecond).length,
      tokensHeld: counts.logins - counts.tokenRevocations,
      leasesHeld: counts.leasesCreated - counts.leaseRevocations,
      hmacGets,
    }
  } finally {
    await Promise.all(providers.map((p) => p.stop()))
  }
}
