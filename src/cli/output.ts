/**
 * Terminal output of the CLI: colours only on a TTY (and never with NO_COLOR),
 * a progress indicator on stderr for anything slower than a second (TTY only),
 * and the exit codes scripts rely on.
 */

/** Documented in docs/cli.md; scripts may rely on them. */
export const EXIT = {
  /** The Mount succeeded / every doctor check passed (warnings allowed). */
  OK: 0,
  /** The Mount failed / at least one doctor check failed. */
  FAILED: 1,
  /** Bad usage: unknown option, missing argument, unreadable or invalid input file. */
  USAGE: 2,
  /** The provider socket could not be reached (mount through the socket). */
  UNREACHABLE: 3,
  /** A bug in the CLI itself. */
  INTERNAL: 4,
} as const

export class UsageError extends Error {
  override name = 'UsageError'
}

export interface Style {
  bold(s: string): string
  dim(s: string): string
  red(s: string): string
  green(s: string): string
  yellow(s: string): string
}

const plain: Style = { bold: (s) => s, dim: (s) => s, red: (s) => s, green: (s) => s, yellow: (s) => s }

function sgr(code: string): (s: string) => string {
  return (s) => `\u001b[${code}m${s}\u001b[0m`
}

export function styleFor(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): Style {
  const enabled = stream.isTTY === true && env.NO_COLOR === undefined && env.TERM !== 'dumb'
  if (!enabled) return plain
  return { bold: sgr('1'), dim: sgr('2'), red: sgr('31'), green: sgr('32'), yellow: sgr('33') }
}

/**
 * Shows `label` with a spinner on stderr if `work` takes longer than a second
 * and stderr is a terminal; otherwise prints nothing.
 */
export async function withProgress<T>(
  label: string,
  work: Promise<T>,
  stream: NodeJS.WriteStream = process.stderr,
): Promise<T> {
  if (stream.isTTY !== true) return work
  const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']
  let frame = 0
  let shown = false
  let ticker: NodeJS.Timeout | undefined
  const starter = setTimeout(() => {
    shown = true
    ticker = setInterval(() => {
      stream.write(`\r${frames[frame++ % frames.length]} ${label}…`)
    }, 100)
  }, 1000)
  try {
    return await work
  } finally {
    clearTimeout(starter)
    if (ticker) clearInterval(ticker)
    if (shown) stream.write('\r\u001b[2K')
  }
}

/** `0644`-style octal of a mode. */
export function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`
}

export function humanBytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
}

export function ms(n: number): string {
  return n < 10 ? `${n.toFixed(1)} ms` : `${Math.round(n)} ms`
}
