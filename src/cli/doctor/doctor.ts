/**
 * `vault-csi-provider doctor`: checks what a Mount depends on, in the order a
 * Mount meets it, and says how to fix each failure.
 *
 *   socket   exists, is a socket, owner-only, answers Version and gRPC Health   socket-checks.ts
 *   proxy    which egress proxy the Vault address goes through, or why none     proxy-checks.ts
 *   vault    reachable, TLS chain, initialized/sealed/standby, version, clock    vault-checks.ts
 *   auth     the auth mount and the role exist; with a pod token, it logs in   auth-checks.ts
 *   hmac     the object-version key (Kubernetes Secret or key file)             hmac-checks.ts
 *   kube     the provider's RBAC: what it needs, nothing more                   rbac-checks.ts
 */
import { loadConfig, ConfigError, type ProviderConfig, type VaultDefaults } from '../../config/config.js'
import { isProviderError } from '../../errors.js'
import { envAsIn } from '../../config/flags.js'
import { DEFAULT_FLAVOUR, FLAVOURS, flavourOfProvider, type ProviderFlavour } from '../../config/flavour.js'
import { parameter, readParameter } from '../../request/parameters.js'
import { parseVaultSettings, type VaultSettings } from '../../request/parse-request.js'
import { printable, printableJson } from '../../util/printable.js'
import { systemTime } from '../../util/time.js'
import { EXIT, UsageError, withProgress, type Style } from '../output.js'
import { readSecretProviderClass, readTokenFile, tokenFromKubectl } from '../spc.js'
import { buildVaultTransports } from '../../app.js'
import { AddressAllowlist } from '../../vault/transport/address-allowlist.js'
import { NO_OBSERVER, NO_PROXY_SETTINGS } from '../../vault/transport/transport.js'
import { chosen, classLogin, confirmMinting, type MintPlan } from '../minting.js'
import { authChecks } from './auth-checks.js'
import type { CheckResult, CheckStatus, DoctorOptions } from './check.js'
import { hmacChecks } from './hmac-checks.js'
import { proxyCheck, readDoctorProxy } from './proxy-checks.js'
import { rbacChecks } from './rbac-checks.js'
import { socketChecks } from './socket-checks.js'
import { FAIL_CLOCK_SKEW_MS, probeVaultOnce, vaultChecks } from './vault-checks.js'

export type { CheckResult, CheckStatus, DoctorOptions } from './check.js'

/** What doctor checks against: the Mount's Vault settings for the SPC's parameters, or why there are none. */
export type DoctorTarget =
  { kind: 'no-address' } | { kind: 'bad'; message: string } | { kind: 'ok'; settings: VaultSettings }

/**
 * The SecretProviderClass read through the Mount's own parser
 * (parseVaultSettings): the same parameters, precedence over the flags, TLS
 * client certificate and vaultSkipTLSVerify spelling as a Mount. --role and
 * --audience, when given, take the place of the SPC's.
 */
export function doctorTarget(
  parameters: Readonly<Record<string, string>>,
  defaults: VaultDefaults,
  opts: Pick<DoctorOptions, 'role' | 'audience'>,
  flavour: ProviderFlavour = DEFAULT_FLAVOUR,
): DoctorTarget {
  const address = readParameter(new Map(Object.entries(parameters)), 'address', flavour)
  if (address === undefined && !defaults.address) return { kind: 'no-address' }
  let settings: VaultSettings
  try {
    settings = parseVaultSettings(parameters, defaults, flavour)
  } catch (err) {
    if (!isProviderError(err)) throw err
    return { kind: 'bad', message: err.message }
  }
  return {
    kind: 'ok',
    settings: {
      ...settings,
      roleName: opts.role ?? settings.roleName,
      audience: opts.audience ?? settings.audience,
    },
  }
}

/** Where an address may come from, named as the class's flavour names them (`baoAddress`, `BAO_ADDR` for OpenBao). */
export function noAddressDetail(flavour: ProviderFlavour): string {
  const param = parameter('address').names[flavour][0]!
  return `no ${FLAVOURS[flavour].product} address: pass --vault-addr, set ${envAsIn('vault-addr', flavour)}, or --spc with ${param}`
}

/** ` (parameter "baoAddress" of the SecretProviderClass)` when the class named the address. */
function addressSource(parameters: Readonly<Record<string, string>>, flavour: ProviderFlavour): string {
  const given = readParameter(new Map(Object.entries(parameters)), 'address', flavour)
  return given === undefined ? '' : ` (parameter ${JSON.stringify(given.name)} of the SecretProviderClass)`
}

export async function runDoctor(opts: DoctorOptions): Promise<CheckResult[]> {
  let config: ProviderConfig
  try {
    config = loadConfig(opts.providerFlags, process.env)
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message)
    throw err
  }
  // The SecretProviderClass is read through the Mount's own parser (parseVaultSettings): the same
  // parameters, precedence over the flags, TLS client certificate and vaultSkipTLSVerify spelling.
  const spc = opts.spc ? await readSecretProviderClass(opts.spc) : undefined
  const parameters = spc?.parameters ?? {}

  const results: CheckResult[] = []
  results.push(...(await socketChecks(opts.socket)))

  // A provider: openbao class is read with OpenBao's parameter names, as its Mounts are.
  const flavour = flavourOfProvider(spc?.provider) ?? DEFAULT_FLAVOUR
  const target = doctorTarget(parameters, config.vault, opts, flavour)
  // The daemon's -vault-addr-allowlist, given to the CLI: nothing is sent anywhere else.
  const allowlist = new AddressAllowlist(config.vaultAddrAllowlist)
  // The egress proxy variables, read as the daemon reads them (src/vault/transport/proxy.ts).
  const proxy = readDoctorProxy(process.env)
  if ('failed' in proxy && target.kind === 'ok') results.push(proxy.failed)
  if (target.kind === 'no-address') {
    results.push({
      id: 'vault.reachable',
      title: 'Vault is reachable',
      status: 'skip',
      detail: noAddressDetail(flavour),
    })
  } else if (target.kind === 'bad') {
    results.push({
      id: 'vault.reachable',
      title: 'Vault is reachable',
      status: 'fail',
      detail: target.message,
      fix: /address/i.test(target.message)
        ? 'use an address such as https://vault.example:8200'
        : 'fix the SecretProviderClass parameter (or provider flag) the message names',
    })
  } else if (!allowlist.allowsAny && !allowlist.allows(target.settings.vault.address)) {
    results.push({
      id: 'vault.reachable',
      title: 'Vault is reachable',
      status: 'fail',
      detail: `${target.settings.vault.address}${addressSource(parameters, flavour)} is not in --vault-addr-allowlist; nothing was sent there`,
      fix: 'check the address the SecretProviderClass names; only addresses in the allow-list are contacted',
    })
  } else {
    const settings = target.settings
    const conn = settings.vault
    const authMount = settings.authMount
    const role = settings.roleName
    if ('settings' in proxy) results.push(proxyCheck(conn.address, proxy.settings))
    // The daemon's transports, built as it builds them (src/app.ts), with the proxy it would use.
    const proxySettings = 'settings' in proxy ? proxy.settings : NO_PROXY_SETTINGS
    const transports = buildVaultTransports(config, { proxy: proxySettings, allowlist, observer: NO_OBSERVER })
    try {
      const health = await probeVaultOnce(conn, 5_000, transports, systemTime())
      results.push(...vaultChecks(conn, health, opts.maxClockSkewMs ?? FAIL_CLOCK_SKEW_MS, flavour))
      if (health.reachable) {
        let jwt: string | undefined
        if (opts.tokenFile) jwt = await readTokenFile(opts.tokenFile)
        else if (opts.tokenFromKubectl) {
          if (!opts.serviceAccount) throw new UsageError('--token-from-kubectl needs --service-account')
          // The Mount's parser says where each value comes from (and which parameter named it).
          const login = classLogin(
            parameters,
            opts.audience === undefined ? {} : { audience: opts.audience },
            flavour,
            config.vault,
          )
          const plan: MintPlan = {
            namespace: chosen(opts.namespace, spc?.namespace, 'default'),
            serviceAccount: opts.serviceAccount,
            audience: login.audience,
            destination: login.address ?? { value: conn.address, from: 'default' },
            vaultAddress: conn.address,
            product: login.product,
            role: opts.role === undefined ? login.role : { value: opts.role, from: 'command line' },
            vaultNamespace: login.vaultNamespace,
            addressOption: '--vault-addr with an --spc naming no address',
          }
          await confirmMinting(plan, {
            yes: opts.yes === true,
            allowlist,
            input: process.stdin,
            output: process.stderr,
          })
          jwt = await tokenFromKubectl(plan.namespace.value, opts.serviceAccount, plan.audience.value)
        }
        results.push(...(await authChecks(conn, authMount, role, jwt, transports)))
      } else {
        results.push({
          id: 'auth.mount',
          title: `auth mount "${authMount}" exists`,
          status: 'skip',
          detail: 'Vault not reachable',
        })
        results.push({ id: 'auth.role', title: 'role exists', status: 'skip', detail: 'Vault not reachable' })
      }
    } finally {
      transports.close()
    }
  }
  results.push(...(await hmacChecks(config, undefined)))
  results.push(...(await rbacChecks(config)))
  return results
}

export function doctorExitCode(results: CheckResult[]): number {
  return results.some((r) => r.status === 'fail') ? EXIT.FAILED : EXIT.OK
}

export function renderDoctor(results: CheckResult[], s: Style): string {
  const mark: Record<CheckStatus, string> = {
    pass: s.green('✓ pass'),
    fail: s.red('✗ FAIL'),
    warn: s.yellow('! warn'),
    skip: s.dim('- skip'),
  }
  const lines: string[] = []
  // Details quote what Vault, files and servers said: printable() before any styling of ours.
  for (const r of results) {
    lines.push(`${mark[r.status]}  ${s.bold(printable(r.title))}  ${s.dim(`[${r.id}]`)}`)
    lines.push(`        ${printable(r.detail)}`)
    if (r.fix && (r.status === 'fail' || r.status === 'warn')) {
      lines.push(`        ${s.yellow('fix:')} ${printable(r.fix)}`)
    }
  }
  const count = (st: CheckStatus): number => results.filter((r) => r.status === st).length
  lines.push('')
  lines.push(`checks: ${count('pass')} pass, ${count('fail')} fail, ${count('warn')} warn, ${count('skip')} skip`)
  return lines.join('\n') + '\n'
}

export async function runDoctorCommand(
  opts: DoctorOptions,
  style: Style,
): Promise<{ exitCode: number; stdout: string }> {
  const results = await withProgress('checking', runDoctor(opts))
  const exitCode = doctorExitCode(results)
  if (opts.json) {
    return {
      exitCode,
      stdout: printableJson(JSON.stringify({ ok: exitCode === EXIT.OK, checks: results }, null, 2)) + '\n',
    }
  }
  return { exitCode, stdout: renderDoctor(results, style) }
}
