// `npm run docs:flags`: writes the flag tables of README.md, docs/configuration.md and docs/cli.md
// from src/config/flags.ts (through tsc's output of src/config/flag-docs.ts).
import { readFile, writeFile } from 'node:fs/promises'
import { URL } from 'node:url'
import { FLAG_DOC_FILES, withFlagTables } from '../dist/src/config/flag-docs.js'

for (const file of FLAG_DOC_FILES) {
  const path = new URL(`../${file}`, import.meta.url)
  await writeFile(path, withFlagTables(await readFile(path, 'utf8'), file))
}
