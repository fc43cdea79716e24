/**
 * The daemon's flags as options of `mount`, `doctor` and `lint`, made from the daemon's table
 * (config/flags.ts), and given back to the daemon's own parser (config/config.ts) as it reads them.
 * Every flag is taken, under its vault-csi-provider and its openbao-csi-provider name, so that none
 * silently keeps its default in `mount --in-process`; only those that mean nothing in the CLI's own
 * process are left out (the table's `daemonOnly` says why).
 */
import { type Command, Option } from 'commander'
import { FLAGS, flagNames, type FlagSpec } from '../config/flags.js'

export const CLI_PROVIDER_FLAGS = FLAGS.filter((f) => f.daemonOnly === undefined)

const HELP_GROUP = "Provider flags (the daemon's, read by its own parser; see docs/configuration.md):"

/** The table's Markdown as the plain text of --help. */
const plain = (markdown: string): string => markdown.replaceAll('`', '')

function help(spec: FlagSpec): string {
  const notes = [
    // A default the table writes in parentheses is a description: `(any address)`.
    spec.default === undefined ? [] : [`default: ${plain(spec.default).replace(/^\((.*)\)$/, '$1')}`],
    spec.env === undefined ? [] : [`env: ${[spec.env, spec.openbaoEnv].filter((e) => e !== undefined).join(', ')}`],
    spec.openbaoName === undefined ? [] : [`also --${spec.openbaoName}`],
  ].flat()
  return notes.length === 0 ? plain(spec.meaning) : `${plain(spec.meaning)} (${notes.join('; ')})`
}

/** commander's key of an option's value: `--vault-addr` → `vaultAddr`. */
function optionKey(name: string): string {
  return name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase())
}

/**
 * Adds the daemon's flags to a command: `--name=value` or `--name value`; a boolean bare (true) or
 * `--no-name` (false, over an environment variable). OpenBao's names are taken but shown only in
 * the help of the vault-csi-provider name.
 */
export function addProviderFlags(cmd: Command): Command {
  for (const spec of CLI_PROVIDER_FLAGS) {
    for (const name of flagNames(spec)) {
      const openbao = name !== spec.name
      if (spec.kind === 'boolean') {
        cmd.addOption(new Option(`--${name}`, help(spec)).helpGroup(HELP_GROUP).hideHelp(openbao))
        cmd.addOption(new Option(`--no-${name}`, `--${name}=false`).helpGroup(HELP_GROUP).hideHelp())
      } else {
        cmd.addOption(new Option(`--${name} <value>`, help(spec)).helpGroup(HELP_GROUP).hideHelp(openbao))
      }
    }
  }
  return cmd
}

/** The daemon's flags the command line gave, as the daemon's parser reads them (`--name=value`). */
export function providerArgv(opts: Record<string, unknown>): string[] {
  return CLI_PROVIDER_FLAGS.flatMap(flagNames).flatMap((name) => {
    const value = opts[optionKey(name)]
    return typeof value === 'string' || typeof value === 'boolean' ? [`--${name}=${String(value)}`] : []
  })
}
