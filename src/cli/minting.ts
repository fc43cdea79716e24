/**
 * A token the CLI mints with the operator's kubectl (`--token-from-kubectl`) is the operator's
 * credential for that namespace: it goes only where the operator points it. A SecretProviderClass
 * file is often a tenant's, so whatever it decides about the token — the namespace it is minted
 * for, its audience, the Vault address it is sent to — is shown and must be confirmed (a prompt on
 * a terminal, `--yes` in a script), and an address outside `--vault-addr-allowlist` is refused.
 */
import { createInterface } from 'node:readline/promises'
import { printable } from '../util/printable.js'
import type { AddressAllowlist } from '../vault/transport/address-allowlist.js'
import { UsageError } from './output.js'

/** A value, and whether the operator's command line gave it or the file did. */
export interface Chosen {
  value: string
  from: 'command line' | 'file' | 'default'
}

export interface MintPlan {
  namespace: Chosen
  serviceAccount: string
  audience: Chosen
  /** Where the token is sent: a Vault address, or the provider's socket (which applies its own allow-list). */
  destination: Chosen
  /** The Vault address the token goes to, when the CLI sends it itself (doctor, mount --in-process). */
  vaultAddress?: string
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
  if (plan.vaultAddress !== undefined && !opts.allowlist.allowsAny && !opts.allowlist.allows(plan.vaultAddress)) {
    throw new UsageError(
      printable(
        `the Vault address ${plan.vaultAddress} is not in --vault-addr-allowlist: no token is minted or sent there`,
      ),
    )
  }
  const fromFile = (
    [
      ['namespace', plan.namespace],
      ['audience', plan.audience],
      ['Vault address', plan.destination],
    ] as const
  ).filter(([, c]) => c.from === 'file')
  if (fromFile.length === 0) return
  const summary = printable(
    `kubectl will mint a token for service account ${plan.namespace.value}/${plan.serviceAccount} ` +
      `(audience ${plan.audience.value}) and send it to ${plan.destination.value}; ` +
      `the SecretProviderClass file chose the ${fromFile.map(([name]) => name).join(', ')}`,
  )
  if (opts.yes) {
    opts.output.write(`${summary} (--yes)\n`)
    return
  }
  const hint = 'give them on the command line (--namespace, --audience, --vault-addr) or confirm with --yes'
  if (opts.input.isTTY !== true) throw new UsageError(`${summary}: not confirmed; ${hint}`)
  const rl = createInterface({ input: opts.input, output: opts.output })
  try {
    const answer = await rl.question(`${summary}.\nContinue? [y/N] `)
    if (!/^y(es)?$/i.test(answer.trim())) throw new UsageError(`not confirmed; ${hint}`)
  } finally {
    rl.close()
  }
}
