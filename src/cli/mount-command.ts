/**
 * `vault-csi-provider mount`: one Mount of a SecretProviderClass for a pod
 * identity, through the node's socket (exactly what the driver does) or
 * in-process (the same MountService the daemon builds, with each Vault call
 * timed). Prints the volume as a tree; values are masked unless asked for.
 */
import { dirname, join } from 'node:path'
import * as grpc from '@grpc/grpc-js'
import { pino } from 'pino'
import { buildMountService } from '../app.js'
import { DEFAULT_FLAVOUR, FLAVOURS, flavourOfProvider, type ProviderFlavour } from '../config/flavour.js'
import {
  ConfigError,
  DEFAULT_ENDPOINT,
  loadConfig,
  LOG_LEVELS,
  parseDurationMs,
  type LogLevel,
  type ProviderConfig,
} from '../config/config.js'
import { isProviderError } from '../errors.js'
import { createLogger } from '../observability/logger.js'
import type { VaultCallEvent, VaultObserver } from '../observability/vault-observer.js'
import { grpcStatusName, mountStatusName } from '../server/grpc-status.js'
import { loadProviderClient } from '../server/proto.js'
import { Deadline } from '../util/deadline.js'
import { printable, printableJson } from '../util/printable.js'
import { AddressAllowlist } from '../vault/transport/address-allowlist.js'
import { chosen, classLogin, confirmMinting, type Chosen } from './minting.js'
import { EXIT, humanBytes, ms, octal, UsageError, withProgress, type Style } from './output.js'
import { buildAttributes, readSecretProviderClass, readTokenFile, tokenFromKubectl } from './spc.js'

export interface MountCommandOptions {
  socket?: string
  inProcess?: boolean
  namespace?: string
  podName: string
  podUid?: string
  serviceAccount: string
  tokenFile?: string
  tokenFromKubectl?: boolean
  audience?: string
  name?: string
  param: string[]
  permission: string
  showValues?: boolean
  json?: boolean
  timeout: string
  logLevel: string
  /** Accept what the file decides about a minted token without a prompt (it is still shown). */
  yes?: boolean
  /** The daemon's flags (provider-flags.ts), for the daemon's own parser: --in-process runs with them. */
  providerFlags: string[]
}

export interface MountedFileView {
  path: string
  mode: number
  contents: Buffer
}

interface MountView {
  ok: boolean
  files: MountedFileView[]
  objects: Array<{ id: string; version: string }>
  error?: { code?: string; grpcCode: string; message: string }
  durationMs: number
  vaultCalls?: VaultCallEvent[]
}

export interface CommandResult {
  exitCode: number
  stdout: string
}

function parseMode(text: string): string {
  // Accept the driver's decimal ("420") or an octal literal ("0644").
  const t = text.trim()
  if (/^0[0-7]{3}$/.test(t)) return String(Number.parseInt(t, 8))
  if (/^\d+$/.test(t)) return t
  throw new UsageError(
    `--permission must be an octal mode such as 0644 or the driver's decimal 420, got ${JSON.stringify(text)}`,
  )
}

export function parseParams(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const p of pairs) {
    const i = p.indexOf('=')
    if (i <= 0) throw new UsageError(`--param must be key=value, got ${JSON.stringify(p)}`)
    out[p.slice(0, i)] = p.slice(i + 1)
  }
  return out
}

function mountClient(socketPath: string): grpc.Client & {
  Mount(req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: any) => void): void
} {
  const CSIDriverProvider = loadProviderClient()
  return new CSIDriverProvider(`unix:${socketPath}`, grpc.credentials.createInsecure(), {
    'grpc.default_authority': 'localhost',
    'grpc.max_receive_message_length': 4 * 1024 * 1024,
  }) as never
}

/** Thrown when the socket cannot be reached at all (exit code UNREACHABLE). */
class UnreachableError extends Error {}

async function mountViaSocket(
  socketPath: string,
  req: { attributes: string; secrets: string; permission: string },
  timeoutMs: number,
): Promise<MountView> {
  const client = mountClient(socketPath)
  const started = Date.now()
  try {
    const res = await new Promise<any>((resolve, reject) => {
      client.Mount(
        { ...req, target_path: '/cli-mount', current_object_version: [] },
        { deadline: Date.now() + timeoutMs },
        (err, r) => (err ? reject(err) : resolve(r)),
      )
    })
    const durationMs = Date.now() - started
    if (res?.error?.code) {
      return {
        ok: false,
        files: [],
        objects: [],
        error: { code: res.error.code, grpcCode: 'OK', message: `provider error code ${res.error.code}` },
        durationMs,
      }
    }
    return {
      ok: true,
      files: (res.files ?? []).map((f: any) => ({
        path: f.path,
        mode: f.mode,
        contents: Buffer.from(f.contents ?? []),
      })),
      objects: (res.object_version ?? []).map((o: any) => ({ id: o.id, version: o.version })),
      durationMs,
    }
  } catch (err) {
    const e = err as grpc.ServiceError
    // UNAVAILABLE with a connection failure: nobody is serving the socket.
    if (e.code === grpc.status.UNAVAILABLE && /connect|No connection|ENOENT|ECONNREFUSED/i.test(e.details ?? '')) {
      throw new UnreachableError(`cannot reach the provider at ${socketPath}: ${e.details}`)
    }
    return {
      ok: false,
      files: [],
      objects: [],
      error: { grpcCode: grpcStatusName(e.code), message: e.details ?? String(err) },
      durationMs: Date.now() - started,
    }
  } finally {
    client.close()
  }
}

/** The daemon's flags as the CLI was given them, through the daemon's own parser. */
function loadCliConfig(flags: string[]): ProviderConfig {
  try {
    return loadConfig(flags, process.env)
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message)
    throw err
  }
}

async function mountInProcess(
  opts: MountCommandOptions,
  config: ProviderConfig,
  req: { attributes: string; secrets: string; permission: string },
  timeoutMs: number,
  flavour: ProviderFlavour,
): Promise<MountView> {
  if (!(LOG_LEVELS as readonly string[]).includes(opts.logLevel)) {
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`)
  }
  // The provider's own JSON log goes to stderr, off unless asked for.
  const logger = createLogger(opts.logLevel as LogLevel, pino.destination(2))
  const calls: VaultCallEvent[] = []
  const recorder: VaultObserver = { vaultCall: (e) => calls.push(e) }
  // What the daemon builds behind its gRPC adapter, without the adapters.
  const service = await buildMountService(config, logger, process.env, { vaultObserver: recorder, metrics: false })
  const started = Date.now()
  try {
    // --timeout is the caller's deadline, as the driver's is the daemon's: the shorter of it and -mount-timeout bounds the Mount.
    const result = await service.mountService.mount(
      req,
      Deadline.in(Math.min(timeoutMs, config.mountTimeoutMs), undefined, service.time),
      flavour,
    )
    return {
      ok: true,
      files: result.objects.flatMap((o) =>
        o.files.map((f) => ({ path: f.path, mode: f.mode, contents: Buffer.from(f.contents) })),
      ),
      objects: result.objects.map((o) => ({ id: o.id, version: o.version })),
      durationMs: Date.now() - started,
      vaultCalls: calls,
    }
  } catch (err) {
    if (!isProviderError(err)) throw err
    return {
      ok: false,
      files: [],
      objects: [],
      error: { code: err.code, grpcCode: mountStatusName(err.code), message: err.message },
      durationMs: Date.now() - started,
      vaultCalls: calls,
    }
  } finally {
    service.close()
  }
}

/** A value for display: text as it is when printable, else base64. */
function showValue(contents: Buffer): string {
  const text = contents.toString('utf8')
  // eslint-disable-next-line no-control-regex
  const printable = Buffer.from(text, 'utf8').equals(contents) && !/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text)
  return printable ? text : `base64:${contents.toString('base64')}`
}

interface TreeNode {
  children: Map<string, TreeNode>
  file?: MountedFileView
}

function renderTree(files: MountedFileView[], versions: Map<string, string>, showValues: boolean, s: Style): string[] {
  const root: TreeNode = { children: new Map() }
  for (const f of files) {
    let node = root
    for (const part of f.path.split('/')) {
      let next = node.children.get(part)
      if (!next) {
        next = { children: new Map() }
        node.children.set(part, next)
      }
      node = next
    }
    node.file = f
  }
  const lines: string[] = ['.']
  const walk = (node: TreeNode, prefix: string): void => {
    const entries = [...node.children.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    entries.forEach(([name, child], i) => {
      const last = i === entries.length - 1
      const branch = last ? '└── ' : '├── '
      const f = child.file
      if (f) {
        const version = versions.get(f.path)
        const meta = [humanBytes(f.contents.length), octal(f.mode), version ? `version ${version.slice(0, 12)}…` : '']
          .filter((m) => m !== '')
          .join('  ')
        const value = showValues
          ? `  = ${JSON.stringify(showValue(f.contents))}`
          : `  ${s.dim('(value hidden; --show-values)')}`
        lines.push(`${prefix}${branch}${s.bold(printable(name))}  ${s.dim(meta)}${value}`)
      } else {
        lines.push(`${prefix}${branch}${printable(name)}/`)
      }
      if (child.children.size > 0) walk(child, prefix + (last ? '    ' : '│   '))
    })
  }
  walk(root, '')
  return lines
}

export async function runMountCommand(
  spcFile: string,
  opts: MountCommandOptions,
  style: Style,
): Promise<CommandResult> {
  const spc = await readSecretProviderClass(spcFile, opts.name)
  const flavour = spc.provider === '' ? DEFAULT_FLAVOUR : flavourOfProvider(spc.provider)
  if (flavour === undefined) {
    throw new UsageError(
      `SecretProviderClass ${JSON.stringify(spc.name)} is for provider ${JSON.stringify(spc.provider)}, not "vault" or "openbao"`,
    )
  }
  const overrides = parseParams(opts.param)
  // --audience is the audience parameter given on the command line: the one the Mount will use.
  if (opts.audience !== undefined) overrides.audience = opts.audience
  const namespace = chosen(opts.namespace, spc.namespace, 'default')
  if (opts.tokenFile && opts.tokenFromKubectl) throw new UsageError('use either --token-file or --token-from-kubectl')
  const config = loadCliConfig(opts.providerFlags)
  // Read by the Mount's parser: in-process with this command's flags as defaults, through the
  // socket with the daemon's (its -vault-addr and -vault-namespace are not known here).
  const defaults = opts.inProcess ? config.vault : { ...config.vault, address: undefined, namespace: undefined }
  let login: ReturnType<typeof classLogin> | undefined
  try {
    login = classLogin(spc.parameters, overrides, flavour, defaults)
  } catch (err) {
    // Without a token to mint, a bad parameter is the Mount's to report (BAD_PARAMETER).
    if (opts.tokenFromKubectl === true || !(err instanceof UsageError)) throw err
  }
  const audience =
    login?.audience ?? chosen(overrides.audience, spc.parameters.audience, FLAVOURS[flavour].defaultAudience)
  let jwt: string | undefined
  if (opts.tokenFile) jwt = await readTokenFile(opts.tokenFile)
  else if (opts.tokenFromKubectl && login !== undefined) {
    const destination: Chosen = login.address ?? {
      value: `the provider's default ${login.product} (-vault-addr)`,
      from: 'default',
    }
    await confirmMinting(
      {
        namespace,
        serviceAccount: opts.serviceAccount,
        audience,
        destination,
        vaultAddress: login.address?.value,
        product: login.product,
        role: login.role,
        vaultNamespace: login.vaultNamespace,
        addressOption: '--param',
      },
      {
        yes: opts.yes === true,
        allowlist: new AddressAllowlist(config.vaultAddrAllowlist),
        input: process.stdin,
        output: process.stderr,
      },
    )
    jwt = await withProgress(
      'kubectl create token',
      tokenFromKubectl(namespace.value, opts.serviceAccount, audience.value),
    )
  }
  const attributes = buildAttributes(
    spc,
    { namespace: namespace.value, name: opts.podName, uid: opts.podUid, serviceAccount: opts.serviceAccount },
    jwt === undefined ? undefined : { audience: audience.value, jwt },
    overrides,
  )
  const req = { attributes: JSON.stringify(attributes), secrets: 'null', permission: parseMode(opts.permission) }
  let timeoutMs: number
  try {
    timeoutMs = parseDurationMs(opts.timeout, '--timeout')
  } catch (err) {
    throw new UsageError((err as Error).message)
  }

  // The socket the driver would call for this class's provider, unless --socket names one.
  const socket = opts.socket ?? join(dirname(DEFAULT_ENDPOINT), FLAVOURS[flavour].socketName)
  const via = opts.inProcess ? 'in-process' : `socket ${socket}`
  let view: MountView
  try {
    view = await withProgress(
      printable(`mounting ${spc.name} (${via})`),
      opts.inProcess ? mountInProcess(opts, config, req, timeoutMs, flavour) : mountViaSocket(socket, req, timeoutMs),
    )
  } catch (err) {
    if (err instanceof UnreachableError) {
      const message = `${err.message}\nIs the provider running on this node? Check with: vault-csi-provider doctor --socket ${socket}`
      return opts.json
        ? {
            exitCode: EXIT.UNREACHABLE,
            stdout:
              printableJson(
                JSON.stringify(
                  { ok: false, via: 'socket', error: { grpcCode: 'UNAVAILABLE', message: err.message } },
                  null,
                  2,
                ),
              ) + '\n',
          }
        : { exitCode: EXIT.UNREACHABLE, stdout: `${style.red('✗')} ${message.split('\n').map(printable).join('\n')}\n` }
    }
    throw err
  }

  const versions = new Map(view.objects.map((o) => [o.id, o.version]))
  const files = [...view.files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  if (opts.json) {
    const out = {
      ok: view.ok,
      via: opts.inProcess ? 'in-process' : 'socket',
      secretProviderClass: spc.name,
      pod: { namespace: namespace.value, name: opts.podName, serviceAccount: opts.serviceAccount },
      durationMs: view.durationMs,
      files: files.map((f) => ({
        path: f.path,
        mode: octal(f.mode),
        size: f.contents.length,
        ...(versions.has(f.path) ? { version: versions.get(f.path) } : {}),
        ...(opts.showValues ? { value: showValue(f.contents) } : {}),
      })),
      objects: view.objects,
      ...(view.vaultCalls
        ? {
            vaultCalls: view.vaultCalls.map((c) => ({
              operation: c.operation,
              request: c.description,
              status: c.ok ? '2xx' : (c.status ?? 'none'),
              durationMs: Math.round(c.durationMs * 10) / 10,
            })),
          }
        : {}),
      ...(view.error ? { error: view.error } : {}),
    }
    return { exitCode: view.ok ? EXIT.OK : EXIT.FAILED, stdout: printableJson(JSON.stringify(out, null, 2)) + '\n' }
  }

  const lines: string[] = []
  // What the class, the pod and the provider's answer name is shown through printable(), before any styling.
  const who = printable(`pod ${namespace.value}/${opts.podName} (service account ${opts.serviceAccount})`)
  const spcName = printable(spc.name)
  if (view.ok) {
    lines.push(
      `${style.green('✓')} SecretProviderClass ${style.bold(spcName)} for ${who} via ${via}: ${files.length} file(s) in ${ms(view.durationMs)}`,
    )
    lines.push(...renderTree(files, versions, opts.showValues === true, style))
    const orphanVersions = view.objects.filter((o) => !files.some((f) => f.path === o.id))
    if (orphanVersions.length > 0) {
      lines.push('object versions:')
      for (const o of orphanVersions) lines.push(printable(`  ${o.id}  ${o.version}`))
    }
  } else {
    lines.push(
      `${style.red('✗')} SecretProviderClass ${style.bold(spcName)} for ${who} via ${via} failed after ${ms(view.durationMs)}`,
    )
    const e = view.error!
    lines.push(printable(`  ${e.grpcCode}${e.code ? ` (${e.code})` : ''}: ${e.message}`))
  }
  if (view.vaultCalls) {
    lines.push(view.vaultCalls.length === 0 ? 'Vault calls: none (cached token and answers)' : 'Vault calls:')
    for (const c of view.vaultCalls) {
      const status = c.ok ? style.green('2xx') : style.red(c.status === undefined ? 'no answer' : String(c.status))
      lines.push(
        `  ${c.operation.padEnd(6)} ${printable(c.description).padEnd(40)} ${status.padEnd(3)}  ${ms(c.durationMs)}`,
      )
    }
  } else {
    lines.push(style.dim('(per-call Vault timings are shown with --in-process)'))
  }
  return { exitCode: view.ok ? EXIT.OK : EXIT.FAILED, stdout: lines.join('\n') + '\n' }
}
