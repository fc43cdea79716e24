/**
 * `vault-csi-provider lint FILE|DIR…`: SecretProviderClasses checked offline, as a Mount would
 * parse them (src/lint/spc-lint.ts). One line per problem, `file:line: message`, or one JSON
 * document with --json; exit code 1 when any problem is an error.
 */
import { readdir, readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { ConfigError, loadConfig } from '../config/config.js'
import { lintMarkdown, lintYaml, type LintOptions, type LintProblem, type LintResult } from '../lint/spc-lint.js'
import { SecretSyncCollector } from '../lint/secretsync-lint.js'
import { AddressAllowlist } from '../vault/transport/address-allowlist.js'
import { EXIT, UsageError, type Style } from './output.js'
import { printable, printableJson } from '../util/printable.js'
import type { CommandResult } from './mount-command.js'

export interface LintCommandOptions {
  json?: boolean
  /** spec.provider of the classes to check; undefined: both of ours (vault, openbao). */
  provider?: string
  /** Daemon flags (-vault-addr, -vault-mount, TLS, -vault-addr-allowlist), read by the daemon's own parser. */
  providerFlags: string[]
  /**
   * The Sync Controller's --token-request-audience (comma-separated), for SecretSyncs; undefined: that of
   * daemonset/sync-controller/values.yaml, `vault`.
   */
  tokenRequestAudience?: string
}

/** The audience daemonset/sync-controller/values.yaml has the controller request. */
export const SHIPPED_CONTROLLER_AUDIENCES = ['vault']

const YAML_FILE = /\.ya?ml$/i
const MARKDOWN_FILE = /\.(md|markdown)$/i
/** Directories never searched: VCS data, dependencies, build output. */
const SKIP_DIRS = new Set(['node_modules', 'dist', 'vendor'])
/** Bounds a walk over a directory given by mistake (e.g. /). */
export const MAX_FILES = 10_000
export const MAX_FILE_BYTES = 8 * 1024 * 1024

interface Target {
  file: string
  /** Named on the command line (a YAML error is always reported) or found in a directory. */
  explicit: boolean
}

async function collect(paths: string[]): Promise<Target[]> {
  const out: Target[] = []
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true })
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (out.length >= MAX_FILES) throw new UsageError(`more than ${MAX_FILES} files to lint; name fewer directories`)
      const full = path.join(dir, e.name)
      if (e.isDirectory()) {
        if (!e.name.startsWith('.') && !SKIP_DIRS.has(e.name)) await walk(full)
      } else if (e.isFile() && (YAML_FILE.test(e.name) || MARKDOWN_FILE.test(e.name))) {
        out.push({ file: full, explicit: false })
      }
    }
  }
  for (const p of paths) {
    let st
    try {
      st = await stat(p)
    } catch (err) {
      throw new UsageError(`cannot read ${p}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`)
    }
    if (st.isDirectory()) await walk(p)
    else out.push({ file: p, explicit: true })
  }
  return out
}

function lintOptions(opts: LintCommandOptions): LintOptions {
  let config
  try {
    config = loadConfig(opts.providerFlags, {})
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message)
    throw err
  }
  let allowlist: AddressAllowlist | undefined
  if (config.vaultAddrAllowlist.length > 0) {
    try {
      allowlist = new AddressAllowlist(config.vaultAddrAllowlist)
    } catch (err) {
      throw new UsageError((err as Error).message)
    }
  }
  return { vaultDefaults: config.vault, allowlist, provider: opts.provider }
}

/** ` (2 for provider vault, 1 for provider openbao)`, when any class was not for `vault`. */
function byProvider(result: LintResult): string {
  const counts = Object.entries(result.providers ?? {})
  if (counts.every(([provider]) => provider === 'vault')) return ''
  return ` (${counts.map(([provider, n]) => `${n} for provider ${provider}`).join(', ')})`
}

export async function runLintCommand(
  paths: string[],
  opts: LintCommandOptions,
  style: Style,
): Promise<CommandResult & { stderr: string }> {
  const secretSyncs = new SecretSyncCollector({
    provider: opts.provider,
    audiences:
      opts.tokenRequestAudience === undefined
        ? SHIPPED_CONTROLLER_AUDIENCES
        : opts.tokenRequestAudience.split(',').map((a) => a.trim()),
  })
  const options = { ...lintOptions(opts), secretSyncs }
  const targets = await collect(paths)
  const result: LintResult = { problems: [], checked: 0, skipped: 0 }
  for (const { file, explicit } of targets) {
    const size = (await stat(file)).size
    if (size > MAX_FILE_BYTES) {
      result.problems.push({
        file,
        line: 1,
        severity: 'error',
        code: 'YAML',
        message: `larger than ${MAX_FILE_BYTES} bytes; not read`,
      })
      continue
    }
    const text = await readFile(file, 'utf8')
    if (MARKDOWN_FILE.test(file)) lintMarkdown(text, file, options, result)
    else lintYaml(text, file, { ...options, strictYaml: explicit }, result)
  }
  const syncResult = secretSyncs.lint()
  result.problems.push(...syncResult.problems)
  result.skipped += syncResult.skipped
  const problems = [...result.problems].sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1))
  const errors = problems.filter((p) => p.severity === 'error').length
  const warnings = problems.length - errors
  const exitCode = errors > 0 ? EXIT.FAILED : EXIT.OK
  const syncs = syncResult.checked > 0 ? `, ${syncResult.checked} SecretSync${syncResult.checked === 1 ? '' : 's'}` : ''
  const summary = `${result.checked} SecretProviderClass${result.checked === 1 ? '' : 'es'}${byProvider(result)}${syncs} in ${targets.length} file${targets.length === 1 ? '' : 's'}: ${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}${result.skipped > 0 ? ` (${result.skipped} other document${result.skipped === 1 ? '' : 's'} skipped)` : ''}\n`
  if (opts.json) {
    const doc = {
      ok: errors === 0,
      files: targets.length,
      checked: result.checked,
      skipped: result.skipped,
      providers: result.providers ?? {},
      secretSyncs: syncResult.checked,
      errors,
      warnings,
      problems,
    }
    return { exitCode, stdout: printableJson(JSON.stringify(doc, null, 2)) + '\n', stderr: '' }
  }
  const line = (p: LintProblem): string => {
    const label = p.severity === 'error' ? style.red('error') : style.yellow('warning')
    // File names and messages quote the files: printable() before any styling.
    return `${style.bold(printable(`${p.file}:${p.line}:`))} ${p.severity === 'warning' ? `${label}: ` : ''}${printable(p.message)}\n`
  }
  return { exitCode, stdout: problems.map(line).join(''), stderr: summary }
}
