// What a whole cluster costs Vault, projected from the fleet scenario's
// per-node figures (docs/vault-economy.md shows the committed sample's figures
// and how to recompute them). Pure arithmetic, kept here so that results.md
// shows it from the run's own numbers.
import type { FleetResult } from './fleet.js'

/** The assumptions of the projection, written out in results.md and the doc. */
export const PROJECTION = {
  nodes: [100, 1_000, 5_000],
  /**
   * A full-cluster rollout (every pod re-created: a node-pool replacement, a cluster-wide
   * redeploy) spread evenly over this many seconds; a faster rollout raises requests/s in
   * proportion, a slower one lowers it.
   */
  spreadsSec: [300, 1_800],
} as const

export interface ProjectionRow {
  variant: string
  nodes: number
  /** Provider requests of the whole rollout. */
  requests: number
  /** Average requests/s at Vault for each spread of PROJECTION.spreadsSec. */
  requestsPerSec: number[]
  logins: number
  /** Tokens held right after the rollout (until they expire: the auth role's token TTL). */
  tokensHeld: number
  /** Secret leases held right after the rollout (until revoked or expired: the engine's TTL). */
  leasesHeld: number
}

export interface PerNode {
  variant: string
  podsPerNode: number
  requests: number
  logins: number
  tokensHeld: number
  leasesHeld: number
}

/** Per-node figures of a fleet run: totals divided by the number of nodes. */
export function perNode(f: FleetResult): PerNode {
  return {
    variant: f.variant,
    podsPerNode: f.podsPerNode,
    requests: f.requests / f.nodes,
    logins: f.counts.logins / f.nodes,
    tokensHeld: f.tokensHeld / f.nodes,
    leasesHeld: f.leasesHeld / f.nodes,
  }
}

/**
 * Linear in the number of nodes: every node holds the same pods and makes the same requests,
 * independent of the others (nothing is shared between nodes: each provider has its own cache
 * and its own tokens), so a cluster of n nodes costs n times one node.
 */
export function project(p: PerNode, nodes: number): ProjectionRow {
  const requests = p.requests * nodes
  return {
    variant: p.variant,
    nodes,
    requests,
    requestsPerSec: PROJECTION.spreadsSec.map((s) => requests / s),
    logins: p.logins * nodes,
    tokensHeld: p.tokensHeld * nodes,
    leasesHeld: p.leasesHeld * nodes,
  }
}

export function projections(fleet: FleetResult[]): ProjectionRow[] {
  return fleet
    .filter((f) => f.failed === 0 && f.nodes > 0)
    .flatMap((f) => PROJECTION.nodes.map((n) => project(perNode(f), n)))
}
