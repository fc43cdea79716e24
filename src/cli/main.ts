#!/usr/bin/env node
/**
 * `vault-csi-provider <command>`: the troubleshooting CLI (docs/cli.md).
 *
 *   mount    one Mount of a SecretProviderClass for a pod identity
 *   doctor   what a Mount depends on, pass/fail with fixes
 *   lint     SecretProviderClass (and SecretSync) manifests checked offline, as a Mount would parse them
 *   version  this build
 *   serve    the daemon itself (same as `node dist/src/main.js`)
 *
 * Leading flags mean `serve`: `vault-csi-provider -endpoint=… -vault-addr=…` is how the reference
 * provider's binary is started in hand-written manifests, and it starts the daemon here too.
 */
import { Command, CommanderError, Option } from 'commander'
import { DEFAULT_ENDPOINT } from '../config/config.js'
import { PACKAGE_VERSION, RUNTIME_NAME } from '../package-info.js'
import { API_VERSION } from '../server/grpc-server.js'
import { runDoctorCommand } from './doctor/doctor.js'
import { runLintCommand } from './lint-command.js'
import { runMountCommand } from './mount-command.js'
import { addProviderFlags, providerArgv } from './provider-flags.js'
import { EXIT, styleFor, UsageError } from './output.js'

function collect(value: string, previous: string[]): string[] {
  return [...previous, value]
}

interface Io {
  stdout: NodeJS.WriteStream
  stderr: NodeJS.WriteStream
  env: NodeJS.ProcessEnv
}

/** Help flags stay the CLI's; any other leading flag is the daemon's. */
const CLI_HELP_FLAGS = new Set(['-h', '--help', '-help'])

/** `vault-csi-provider -endpoint=… …` (the reference binary's invocation) is `serve -endpoint=… …`. */
function withImplicitServe(argv: readonly string[]): string[] {
  const first = argv[0]
  if (first !== undefined && first.startsWith('-') && first !== '-' && !CLI_HELP_FLAGS.has(first)) {
    return ['serve', ...argv]
  }
  return [...argv]
}

export async function runCli(rawArgv: string[], io: Io): Promise<number> {
  const argv = withImplicitServe(rawArgv)
  const style = styleFor(io.stdout, io.env)
  let exitCode: number = EXIT.OK
  const program = new Command()
  program
    .name('vault-csi-provider')
    .description('Troubleshooting CLI of the Vault / OpenBao provider for the Secrets Store CSI driver')
    .enablePositionalOptions()
    .exitOverride()
    .showHelpAfterError()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    })

  program
    .command('version')
    .description('print the provider version and the driver API it speaks')
    .option('--json', 'machine-readable output')
    .action((opts: { json?: boolean }) => {
      io.stdout.write(
        opts.json
          ? JSON.stringify({ name: RUNTIME_NAME, version: PACKAGE_VERSION, api: API_VERSION, node: process.version }) +
              '\n'
          : `${RUNTIME_NAME} ${PACKAGE_VERSION} (driver API ${API_VERSION}, Node.js ${process.version})\n`,
      )
    })

  const mount = program
    .command('mount')
    .description('run one Mount of a SecretProviderClass for a pod identity and print the files')
    .argument('<spc-file>', 'SecretProviderClass YAML file')
    .option(
      '--socket <path>',
      'provider socket to mount through (default: vault.sock, openbao.sock for provider: openbao)',
    )
    .option('--in-process', 'run the Mount in this process (same code as the daemon) instead of through the socket')
    .option('-n, --namespace <ns>', "pod's namespace (default: the SecretProviderClass's, else default)")
    .option('--pod-name <name>', "pod's name", 'vault-csi-provider-cli')
    .option('--pod-uid <uid>', "pod's UID (default: a random one)")
    .option('--service-account <name>', "pod's service account", 'default')
    .option('--token-file <file>', "the pod's service-account token (a JWT) from a file")
    .option('--token-from-kubectl', "get the pod's service-account token with kubectl create token")
    .option('--audience <aud>', 'token audience (default: the audience parameter, else vault)')
    .option('--name <spc>', 'which SecretProviderClass of the file (default: the first)')
    .option('--param <key=value>', 'override a parameter, as a pod volumeAttribute would (repeatable)', collect, [])
    .option('--permission <mode>', 'default file mode', '0644')
    .option('--show-values', 'print the file contents (secrets!)')
    .option('--json', 'machine-readable output')
    .option(
      '--timeout <duration>',
      "the caller's deadline, as the driver's (in-process: or --mount-timeout, if shorter)",
      '60s',
    )
    .option(
      '--yes',
      'accept what the file decides about a --token-from-kubectl token (namespace, audience, Vault address)',
    )
    .addOption(new Option('--log-level <level>', "the provider's JSON log on stderr (--in-process)").default('off'))
  addProviderFlags(mount).action(async (spcFile: string, opts: Record<string, unknown>) => {
    const result = await runMountCommand(
      spcFile,
      {
        socket: opts.socket as string,
        inProcess: opts.inProcess === true,
        namespace: opts.namespace as string | undefined,
        podName: opts.podName as string,
        podUid: opts.podUid as string | undefined,
        serviceAccount: opts.serviceAccount as string,
        tokenFile: opts.tokenFile as string | undefined,
        tokenFromKubectl: opts.tokenFromKubectl === true,
        audience: opts.audience as string | undefined,
        name: opts.name as string | undefined,
        param: opts.param as string[],
        permission: opts.permission as string,
        showValues: opts.showValues === true,
        json: opts.json === true,
        timeout: opts.timeout as string,
        yes: opts.yes === true,
        logLevel: opts.logLevel as string,
        providerFlags: providerArgv(opts),
      },
      style,
    )
    io.stdout.write(result.stdout)
    exitCode = result.exitCode
  })

  const doctor = program
    .command('doctor')
    .description('check the socket, Vault, the auth mount and role, and the HMAC key; print fixes')
    .option('--socket <path>', 'provider socket', DEFAULT_ENDPOINT)
    .option('--spc <file>', 'take the Vault address, TLS, auth mount and role from a SecretProviderClass')
    .option('--role <name>', 'Vault role to check')
    .option('--token-file <file>', 'also log in with this pod token (the test token is revoked)')
    .option('--token-from-kubectl', 'also log in with a token from kubectl create token')
    .option('-n, --namespace <ns>', 'namespace of --service-account')
    .option('--service-account <name>', 'service account for --token-from-kubectl')
    .option('--audience <aud>', 'token audience (default vault)')
    .option(
      '--yes',
      'accept what --spc decides about a --token-from-kubectl token (namespace, audience, Vault address)',
    )
    .option('--json', 'machine-readable output')
  addProviderFlags(doctor).action(async (opts: Record<string, unknown>) => {
    const result = await runDoctorCommand(
      {
        socket: opts.socket as string,
        spc: opts.spc as string | undefined,
        role: opts.role as string | undefined,
        tokenFile: opts.tokenFile as string | undefined,
        tokenFromKubectl: opts.tokenFromKubectl === true,
        namespace: opts.namespace as string | undefined,
        serviceAccount: opts.serviceAccount as string | undefined,
        audience: opts.audience as string | undefined,
        json: opts.json === true,
        yes: opts.yes === true,
        providerFlags: providerArgv(opts),
      },
      style,
    )
    io.stdout.write(result.stdout)
    exitCode = result.exitCode
  })

  const lint = program
    .command('lint')
    .description('check SecretProviderClass manifests offline, the way a Mount parses them')
    .argument('<paths...>', 'YAML or Markdown files, or directories to search for them')
    .option('--json', 'machine-readable output')
    .option(
      '--provider <name>',
      'spec.provider of the SecretProviderClasses to check (default: vault and openbao, each with its own parameter names)',
    )
    .option(
      '--token-request-audience <list>',
      "for SecretSyncs: the Sync Controller's --token-request-audience (default: vault, as daemonset/sync-controller/values.yaml)",
    )
  addProviderFlags(lint).action(async (paths: string[], opts: Record<string, unknown>) => {
    const flags = providerArgv(opts)
    const result = await runLintCommand(
      paths,
      {
        json: opts.json === true,
        provider: typeof opts.provider === 'string' ? opts.provider : undefined,
        tokenRequestAudience: typeof opts.tokenRequestAudience === 'string' ? opts.tokenRequestAudience : undefined,
        providerFlags: flags,
      },
      style,
    )
    io.stdout.write(result.stdout)
    io.stderr.write(result.stderr)
    exitCode = result.exitCode
  })

  program
    .command('serve')
    .description('run the daemon (the same as node dist/src/main.js; takes the daemon flags)')
    .allowUnknownOption()
    .passThroughOptions()
    .helpOption(false)
    .argument('[flags...]', 'daemon flags, e.g. -endpoint=/provider/vault.sock')
    .action(async (flags: string[]) => {
      const { runDaemon } = await import('../main.js')
      try {
        await runDaemon(flags)
      } catch (err) {
        // Not a bug of the CLI: the daemon could not start (socket, key, Kubernetes API).
        io.stderr.write(`vault-csi-provider: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
        exitCode = EXIT.FAILED
        return
      }
      exitCode = -1
    })

  try {
    await program.parseAsync(argv, { from: 'user' })
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; every parse error is a usage error.
      return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE
    }
    if (err instanceof UsageError) {
      io.stderr.write(`vault-csi-provider: ${err.message}\n`)
      return EXIT.USAGE
    }
    io.stderr.write(
      `vault-csi-provider: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    )
    return EXIT.INTERNAL
  }
  return exitCode
}

runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env }).then(
  (code) => {
    // serve: the daemon owns the process from here on. Otherwise exit now, without waiting
    // for idle keep-alive sockets (stdout and stderr are synchronous for files and pipes on Linux).
    if (code >= 0) process.exit(code)
  },
  (err: unknown) => {
    process.stderr.write(`vault-csi-provider: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exitCode = EXIT.INTERNAL
  },
)
