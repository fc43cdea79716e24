/** The egress proxy check: which proxy (or none, and why) the Vault address is reached through. */
import {
  ProxyConfigError,
  describeDecision,
  proxyFor,
  readProxySettings,
  type ProxySettings,
} from '../../vault/transport/proxy.js'
import type { CheckResult } from './check.js'

/** The proxy variables as the daemon reads them, or the check that says why they cannot be used. */
export function readDoctorProxy(env: NodeJS.ProcessEnv): { settings: ProxySettings } | { failed: CheckResult } {
  try {
    return { settings: readProxySettings(env) }
  } catch (err) {
    if (!(err instanceof ProxyConfigError)) throw err
    return {
      failed: {
        id: 'vault.proxy',
        title: 'egress proxy',
        status: 'fail',
        detail: err.message,
        fix: 'fix or unset the variable; the daemon does not start with it',
      },
    }
  }
}

export function proxyCheck(address: string, settings: ProxySettings): CheckResult {
  const decision = proxyFor(address, settings)
  if (decision.kind === 'refused') {
    return {
      id: 'vault.proxy',
      title: 'egress proxy',
      status: 'fail',
      detail: describeDecision(address, decision),
      fix: "unset REQUEST_METHOD in the provider's environment",
    }
  }
  return { id: 'vault.proxy', title: 'egress proxy', status: 'pass', detail: describeDecision(address, decision) }
}
