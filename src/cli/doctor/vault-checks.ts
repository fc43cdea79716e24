/** Vault checks: reachable, TLS chain trusted, initialized and unsealed, active node, version, clock skew. */
import { DEFAULT_FLAVOUR, type ProviderFlavour } from '../../config/flavour.js'
import { parameter } from '../../request/parameters.js'
import type { VaultConnection } from '../../request/types.js'
import type { Time } from '../../util/time.js'
import { probeVaultHealth as probe, type VaultHealth } from '../../vault/resilience/health-probe.js'
import { PROVIDER_TENANT, type TransportSource } from '../../vault/transport/registry.js'
import type { VaultCaller } from '../../vault/transport/transport.js'
import { isTlsErrorCode, tlsFix } from '../../vault/transport/tls-failures.js'
import { ms } from '../output.js'
import type { CheckResult, CheckStatus } from './check.js'

export const WARN_CLOCK_SKEW_MS = 5_000
export const FAIL_CLOCK_SKEW_MS = 60_000

export function vaultChecks(
  conn: VaultConnection,
  h: VaultHealth,
  maxSkewMs: number,
  flavour: ProviderFlavour = DEFAULT_FLAVOUR,
): CheckResult[] {
  const out: CheckResult[] = []
  // The address as the class's flavour names it: -vault-addr / baoAddress for a provider: openbao class.
  const addressNames = `-vault-addr / ${parameter('address').names[flavour][0]!}`
  const isHttps = conn.address.startsWith('https://')
  // A TLS failure with the proxy is the proxy's, not Vault's certificate.
  const tlsFailed = h.proxy === undefined && isTlsErrorCode(h.errorCode)
  if (!h.reachable && !tlsFailed) {
    out.push({
      id: 'vault.reachable',
      title: 'Vault is reachable',
      status: 'fail',
      detail: `${conn.address}: ${h.detail}`,
      fix:
        h.proxy !== undefined
          ? 'the egress proxy failed (see vault.proxy for which one and why it is used): check the proxy, its credentials and that it allows CONNECT to the Vault port, or reach Vault directly (NO_PROXY)'
          : h.errorCode === 'ENOTFOUND' || h.errorCode === 'EAI_AGAIN'
            ? `the host name does not resolve from this node: check ${addressNames} and the node's DNS`
            : `check ${addressNames} (scheme, host, port), that Vault listens there, and network policies between this node and Vault`,
    })
  } else {
    out.push({
      id: 'vault.reachable',
      title: 'Vault is reachable',
      status: 'pass',
      detail: tlsFailed
        ? `${conn.address}: connected (TLS failed, see vault.tls)`
        : `${conn.address} answered in ${ms(h.durationMs)}`,
    })
  }
  if (!isHttps) {
    out.push({
      id: 'vault.tls',
      title: 'TLS chain is trusted',
      status: conn.address.startsWith('unix://') ? 'skip' : 'warn',
      detail: conn.address.startsWith('unix://')
        ? 'unix socket (Vault Agent)'
        : 'plain HTTP: pod tokens and secrets cross the network unencrypted',
      ...(conn.address.startsWith('unix://') ? {} : { fix: 'use https:// with a trusted CA outside test clusters' }),
    })
  } else if (tlsFailed) {
    out.push({
      id: 'vault.tls',
      title: 'TLS chain is trusted',
      status: 'fail',
      detail: h.detail,
      fix: tlsFix(h.errorCode),
    })
  } else if (!h.reachable) {
    out.push({ id: 'vault.tls', title: 'TLS chain is trusted', status: 'skip', detail: 'Vault not reachable' })
  } else {
    out.push({
      id: 'vault.tls',
      title: 'TLS chain is trusted',
      status: conn.tls.skipVerify ? 'warn' : 'pass',
      detail: conn.tls.skipVerify ? 'verification is skipped (-vault-tls-skip-verify)' : 'certificate verified',
      ...(conn.tls.skipVerify ? { fix: 'set a CA (-vault-tls-ca-cert) instead of skipping verification' } : {}),
    })
  }
  if (!h.reachable) {
    for (const [id, title] of [
      ['vault.sealed', 'Vault is initialized and unsealed'],
      ['vault.standby', 'Vault node is active'],
      ['vault.version', 'Vault version'],
      ['vault.clock', 'clock agrees with Vault'],
    ] as const) {
      out.push({ id, title, status: 'skip', detail: 'Vault not reachable' })
    }
    return out
  }
  if (h.initialized === false || h.status === 501) {
    out.push({
      id: 'vault.sealed',
      title: 'Vault is initialized and unsealed',
      status: 'fail',
      detail: 'not initialized',
      fix: 'initialize Vault (vault operator init / bao operator init)',
    })
  } else if (h.sealed === true || h.status === 503) {
    out.push({
      id: 'vault.sealed',
      title: 'Vault is initialized and unsealed',
      status: 'fail',
      detail: `sealed (sys/health answered ${h.status})`,
      fix: 'unseal Vault (vault operator unseal / bao operator unseal, or check its auto-unseal); Mounts fail with VAULT_UNAVAILABLE until then',
    })
  } else {
    out.push({ id: 'vault.sealed', title: 'Vault is initialized and unsealed', status: 'pass', detail: 'unsealed' })
  }
  if (h.standby === true && h.sealed !== true) {
    out.push({
      id: 'vault.standby',
      title: 'Vault node is active',
      status: 'warn',
      detail: `${h.performanceStandby ? 'performance ' : ''}standby (sys/health answered ${h.status})`,
      fix: "a standby forwards logins and strong reads to the active node (one hop) and serves eventual ones itself; point -vault-addr at the cluster's Service, or its <release>-active Service",
    })
  } else if (h.sealed === true) {
    out.push({ id: 'vault.standby', title: 'Vault node is active', status: 'skip', detail: 'sealed' })
  } else {
    out.push({ id: 'vault.standby', title: 'Vault node is active', status: 'pass', detail: 'active' })
  }
  out.push({
    id: 'vault.version',
    title: 'Vault version',
    status: h.version ? 'pass' : 'warn',
    detail: h.version ?? 'not reported',
  })
  if (h.clockSkewMs === undefined) {
    out.push({ id: 'vault.clock', title: 'clock agrees with Vault', status: 'skip', detail: 'Vault reported no time' })
  } else {
    const skew = Math.abs(h.clockSkewMs)
    // sys/health reports whole seconds: up to 1 s of difference is rounding.
    const status: CheckStatus = skew >= maxSkewMs ? 'fail' : skew >= WARN_CLOCK_SKEW_MS ? 'warn' : 'pass'
    out.push({
      id: 'vault.clock',
      title: 'clock agrees with Vault',
      status,
      detail: `${h.clockSkewMs >= 0 ? 'Vault is ahead by' : 'Vault is behind by'} ${(skew / 1000).toFixed(1)} s`,
      ...(status === 'pass'
        ? {}
        : {
            fix: 'synchronise the clocks (NTP/chrony) of this node and the Vault servers: token and JWT validity depend on them',
          }),
    })
  }
  return out
}

/**
 * GET /v1/sys/health without a token through the daemon's Vault transport (TLS, CA,
 * SNI, unix socket, egress proxy), with the one probe the breaker and `doctor` use
 * (vault/health-probe.ts, where what counts as healthy is explained).
 * Never throws.
 */
export async function probeVaultOnce(
  conn: VaultConnection,
  timeoutMs: number,
  transports: TransportSource,
  time: Pick<Time, 'now'>,
): Promise<VaultHealth> {
  const started = time.now()
  let transport: VaultCaller
  try {
    transport = await transports.get(conn, PROVIDER_TENANT)
  } catch (err) {
    return {
      reachable: false,
      healthy: false,
      detail: err instanceof Error ? err.message : String(err),
      durationMs: time.now() - started,
    }
  }
  return probe(transport, timeoutMs, time)
}
