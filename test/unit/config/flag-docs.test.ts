// The flag tables of README.md, docs/configuration.md and docs/cli.md are the ones FLAGS makes (`npm run docs:flags`
// writes them): a flag added, renamed or re-described in src/config/flags.ts fails here until the docs say so.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { FLAG_DOC_FILES, withFlagTables } from '../../../src/config/flag-docs.js'
import { FLAGS } from '../../../src/config/flags.js'
import { PACKAGE_ROOT } from '../../../src/package-info.js'
import { thrown } from '../../support/thrown.js'

t.test('the docs hold exactly the flag tables FLAGS makes', async (t) => {
  for (const file of FLAG_DOC_FILES) {
    const doc = await readFile(join(PACKAGE_ROOT, file), 'utf8')
    t.equal(doc, withFlagTables(doc, file), `${file} (npm run docs:flags rewrites it)`)
  }
})

t.test('a table is a row a flag, in the table’s order, laid out as prettier lays it out', async (t) => {
  const doc = withFlagTables(
    '<!-- BEGIN flags:readme (made from src/config/flags.ts by npm run docs:flags) -->\n<!-- END flags:readme -->\n',
    'README.md',
  )
  const rows = doc.split('\n').filter((l) => l.startsWith('| `-'))
  t.same(
    rows.map((r) => r.split(' ')[1]),
    FLAGS.map((f) => `\`-${f.name}\``),
  )
  const widths = new Set(
    doc
      .split('\n')
      .filter((l) => l.startsWith('|'))
      .map((l) => l.length),
  )
  t.equal(widths.size, 1, 'every line as wide as the header')
  t.match(doc, /^\| flag +\| env +\| default +\| meaning +\|\n\| -+ \| -+ \| -+ \| -+ \|\n/m)
})

t.test('a doc without the markers of one of its tables is an error, not a silent skip', async (t) => {
  t.match(
    thrown(() => withFlagTables('# no tables here\n', 'docs/configuration.md'), Error).message,
    /no "<!-- BEGIN flags:vault/,
  )
})
