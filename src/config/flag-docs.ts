/**
 * The flag tables of README.md, docs/configuration.md and docs/cli.md, made from FLAGS (flags.ts): `npm run
 * docs:flags` writes them between their markers, test/unit/config/flag-docs.test.ts fails while a
 * doc differs. Laid out as prettier lays out a Markdown table, so `prettier --check` agrees.
 */
import { FLAGS, type FlagSpec } from './flags.js'

export const FLAG_DOC_FILES = ['README.md', 'docs/configuration.md', 'docs/cli.md'] as const
export type FlagDocFile = (typeof FLAG_DOC_FILES)[number]

interface Column {
  header: string
  cell(spec: FlagSpec): string
}

const code = (text: string | undefined): string => (text === undefined ? '' : `\`${text}\``)
const flagColumn: Column = { header: 'flag', cell: (f) => code(`-${f.name}`) }
const defaultColumn: Column = { header: 'default', cell: (f) => f.default ?? '' }
const fullMeaning: Column = {
  header: 'meaning',
  cell: (f) => (f.detail === undefined ? f.meaning : `${f.meaning}. ${f.detail}`),
}

/** Each table: the rows it shows and its columns (a column empty in every row is left out). */
const TABLES: Record<FlagDocFile, Record<string, { rows: readonly FlagSpec[]; columns: Column[] }>> = {
  'README.md': {
    readme: {
      rows: FLAGS,
      columns: [
        flagColumn,
        { header: 'env', cell: (f) => code(f.env) },
        defaultColumn,
        { header: 'meaning', cell: (f) => f.meaning },
      ],
    },
  },
  'docs/configuration.md': {
    vault: {
      rows: FLAGS.filter((f) => f.ours !== true),
      columns: [flagColumn, { header: 'environment', cell: (f) => code(f.env) }, defaultColumn, fullMeaning],
    },
    openbao: {
      rows: FLAGS.filter((f) => f.openbaoName !== undefined),
      columns: [
        { header: 'flag', cell: (f) => code(`-${f.openbaoName}`) },
        { header: 'environment', cell: (f) => code(f.openbaoEnv) },
        { header: 'same setting as', cell: (f) => code(`-${f.name}`) },
      ],
    },
    ours: {
      rows: FLAGS.filter((f) => f.ours === true),
      columns: [flagColumn, { header: 'environment', cell: (f) => code(f.env) }, defaultColumn, fullMeaning],
    },
  },
  'docs/cli.md': {
    'daemon-only': {
      rows: FLAGS.filter((f) => f.daemonOnly !== undefined),
      columns: [flagColumn, { header: 'not taken by the CLI: why', cell: (f) => f.daemonOnly ?? '' }],
    },
  },
}

function markdownTable(rows: readonly FlagSpec[], columns: Column[]): string {
  const shown = columns.filter((c) => rows.some((r) => c.cell(r) !== ''))
  const cells = [shown.map((c) => c.header), ...rows.map((r) => shown.map((c) => c.cell(r).replaceAll('|', '\\|')))]
  const widths = shown.map((_, i) => Math.max(3, ...cells.map((row) => row[i]!.length)))
  const line = (row: string[]): string => `| ${row.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`
  return [line(cells[0]!), line(widths.map((w) => '-'.repeat(w))), ...cells.slice(1).map(line)].join('\n')
}

const begin = (id: string): string => `<!-- BEGIN flags:${id} (made from src/config/flags.ts by npm run docs:flags) -->`
const end = (id: string): string => `<!-- END flags:${id} -->`

/** `doc` (the text of `file`) with each of its flag tables as FLAGS makes it. */
export function withFlagTables(doc: string, file: FlagDocFile): string {
  let out = doc
  for (const [id, { rows, columns }] of Object.entries(TABLES[file])) {
    const from = out.indexOf(begin(id))
    const to = out.indexOf(end(id))
    if (from < 0 || to < from) throw new Error(`${file}: no "${begin(id)}" … "${end(id)}" markers`)
    out = `${out.slice(0, from)}${begin(id)}\n\n${markdownTable(rows, columns)}\n\n${out.slice(to)}`
  }
  return out
}
