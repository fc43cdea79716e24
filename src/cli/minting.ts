/**
 * A token the CLI mints with the operator's kubectl (`--token-from-kubectl`) is the operator's
 * credential for that namespace: it goes only where the operator points it. A SecretProviderClass
 * file is often a tenant's, so whatever it decides about the token — the namespace it is minted
 * for, its audience, the Vault address it is sent to — is shown and must be confirmed (a prompt on
 * a terminal, `--yes` in a script), and an address outside `--vault-addr-allowlist` is refused.
 */
import { createInterface } from 'node:readline/promises'
import type { VaultDefaults } from '../config/config.js'
import { FLAVOURS, type ProviderFlavour } from '../config/flavour.js'
import { isProviderError } from '../errors.js'
import { readParameter, type ParameterKey } from '../request/parameters.js'
import { parseVaultSettings } from '../request/parse-request.js'
import { printable } from '../util/printable.js'
import type { AddressAllowlist } from '../vault/transport/address-allowlist.js'
import { UsageError } from './output.js'

/** A value, and whether the operator's command line gave it or the file did. */
export interface Chosen {
  value: string
  from: 'command line' | 'file' | 'default'
  /** The class's parameter it was read from (`baoAddress`), when one was. */
  parameter?: string
}

export interface MintPlan {
  namespace: Chosen
  serviceAccount: string
  audience: Chosen
  /** Where the token is sent: a Vault address, or the provider's socket (which applies its own allow-list). */
  destination: Chosen
  /** The Vault address the token goes to, when the CLI sends it itself (doctor, mount --in-process). */
  vaultAddress?: string
  /** The server's name in messages (OpenBao for provider: openbao); default Vault. */
  product?: string
  /** The role and the Vault namespace the Mount logs in with, shown in the summary. */
  role?: Chosen
  vaultNamespace?: Chosen
  /** How this command takes the address on its command line; default --vault-addr. */
  addressOption?: string
}

/** What a Mount of the class logs in with, read by the Mount's own parser (parseVaultSettings). */
export interface ClassLogin {
  /** undefined: the class names none, and neither do the defaults (the daemon's -vault-addr applies). */
  address?: Chosen
  audience: Chosen
  role?: Chosen
  vaultNamespace?: Chosen
  product: string
}

/**
 * The address, audience, role and Vault namespace a Mount of `parameters` with `overrides` over them
 * (--param, as a pod's volumeAttributes) uses, each with where it came from: the parameter the Mount
 * reads (the flavour's first non-empty name over both, so `baoAddress` in the file beats
 * `--param vaultAddress`), from the command line only when that name was given there.
 * `defaults` are what the Mount falls back on; a bad parameter is refused before any token exists.
 */
export function classLogin(
  parameters: Readonly<Record<string, string>>,
  overrides: Readonly<Record<string, string>>,
  flavour: ProviderFlavour,
  defaults: VaultDefaults,
): ClassLogin {
  const merged: Record<string, string> = { ...parameters, ...overrides }
  const attrs = new Map(Object.entries(merged))
  const product = FLAVOURS[flavour].product
  const addressGiven = readParameter(attrs, 'address', flavour) !== undefined || defaults.address !== undefined
  let settings
  try {
    // Without any address the Mount goes to the daemon's own: parse the rest with a stand-in.
    settings = parseVaultSettings(
      merged,
      addressGiven ? defaults : { ...defaults, address: 'http://127.0.0.1' },
      flavour,
    )
  } catch (err) {
    if (!isProviderError(err)) throw err
    throw new UsageError(printable(`the SecretProviderClass: ${err.message}; no token is minted`))
  }
  const origin = (key: ParameterKey, value: string | undefined): Chosen | undefined => {
    const given = readParameter(attrs, key, flavour)
    if (given !== undefined) {
      const from = Object.hasOwn(overrides, given.name) ? 'command line' : 'file'
      return { value: value ?? given.value, from, parameter: given.name }
    }
    return value === undefined ? undefined : { value, from: 'default' }
  }
  return {
    address: addressGiven ? origin('address', settings.vault.address) : undefined,
    audience: origin('audience', settings.audience)!,
    role: origin('roleName', settings.roleName),
    vaultNamespace: origin('namespace', settings.vault.namespace),
    product,
  }
}

/** ` (parameter "baoAddress" of the file)`: where a value came from, for a message. */
function sourceOf(c: Chosen, option: string): string {
  if (c.parameter === undefined) return ''
  return c.from === 'file'
    ? ` (parameter ${JSON.stringify(c.parameter)} of the SecretProviderClass file)`
    : ` (${option === '--param' ? `--param ${c.parameter}` : `parameter ${JSON.stringify(c.parameter)}`})`
}

export interface ConfirmOptions {
  /** --yes: what the file decides is accepted without a prompt (it is still printed). */
  yes: boolean
  allowlist: AddressAllowlist
  input: NodeJS.ReadStream
  output: NodeJS.WriteStream
}

/** The value of a command-line option, else the file's, else the default. */
export function chosen(option: string | undefined, fromFile: string | undefined, fallback: string): Chosen {
  if (option !== undefined) return { value: option, from: 'command line' }
  if (fromFile !== undefined && fromFile !== '') return { value: fromFile, from: 'file' }
  return { value: fallback, from: 'default' }
}

/** Refuses, or asks, before a token is minted for `plan`; resolves when it may be. */
export async function confirmMinting(plan: MintPlan, opts: ConfirmOptions): Promise<void> {
  const product = plan.product ?? 'Vault'
  const addressOption = plan.addressOption ?? '--vault-addr'
  const dest = plan.destination
  if (plan.vaultAddress !== undefined && !opts.allowlist.allowsAny && !opts.allowlist.allows(plan.vaultAddress)) {
    throw new UsageError(
      printable(
        `the ${product} address ${plan.vaultAddress}${sourceOf(dest, addressOption)} is not in ` +
          '--vault-addr-allowlist: no token is minted or sent there',
      ),
    )
  }
  const addressName = dest.parameter === undefined ? `${product} address` : `${product} address (${dest.parameter})`
  const fromFile = (
    [
      ['namespace', plan.namespace],
      ['audience', plan.audience],
      [addressName, dest],
    ] as const
  ).filter(([, c]) => c.from === 'file')
  if (fromFile.length === 0) return
  const login = [
    plan.role === undefined ? '' : ` as role ${plan.role.value}`,
    plan.vaultNamespace === undefined ? '' : ` in ${product} namespace ${plan.vaultNamespace.value}`,
  ].join('')
  const summary = printable(
    `kubectl will mint a token for service account ${plan.namespace.value}/${plan.serviceAccount} ` +
      `(audience ${plan.audience.value}) and send it to ${dest.value}${sourceOf(dest, addressOption)}` +
      `${login === '' ? '' : ` to log in${login}`}; ` +
      `the SecretProviderClass file chose the ${fromFile.map(([name]) => name).join(', ')}`,
  )
  if (opts.yes) {
    opts.output.write(`${summary} (--yes)\n`)
    return
  }
  const addressHint =
    addressOption === '--param' ? `--param ${dest.parameter ?? 'vaultAddress'}=<address>` : addressOption
  const hint = printable(
    `give them on the command line (--namespace, --audience, ${addressHint}) or confirm with --yes`,
  )
  if (opts.input.isTTY !== true) throw new UsageError(`${summary}: not confirmed; ${hint}`)
  const rl = createInterface({ input: opts.input, output: opts.output })
  try {
    const answer = await rl.question(`${summary}.\nContinue? [y/N] `)
    if (!/^y(es)?$/i.test(answer.trim())) throw new UsageError(`not confirmed; ${hint}`)
  } finally {
    rl.close()
  }
}
