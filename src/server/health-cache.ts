/**
 * Vault's health for /health/vault, probed at most once per interval whatever the request rate:
 * the port can be reached by more than the kubelet and Prometheus, and every probe is a Vault call.
 * Callers within the interval get the last answer; callers while a probe runs share it.
 */
import type { Time } from '../util/time.js'
import type { VaultHealth } from '../vault/resilience/health-probe.js'

/** How long one answer of /health/vault stands. */
export const VAULT_HEALTH_INTERVAL_MS = 10_000

export class HealthCache {
  private readonly probe: () => Promise<VaultHealth>
  private readonly intervalMs: number
  private readonly time: Pick<Time, 'now'>
  private last: { at: number; health: Promise<VaultHealth> } | undefined

  constructor(probe: () => Promise<VaultHealth>, time: Pick<Time, 'now'>, intervalMs = VAULT_HEALTH_INTERVAL_MS) {
    this.probe = probe
    this.intervalMs = intervalMs
    this.time = time
  }

  get(): Promise<VaultHealth> {
    const now = this.time.now()
    if (this.last === undefined || now - this.last.at >= this.intervalMs) {
      this.last = { at: now, health: this.probe() }
    }
    return this.last.health
  }
}
