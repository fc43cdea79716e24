// Imports point down only (docs/architecture.md, "The layers"): each file of src/ may import its own
// layer and the layers below it. Imports are read with TypeScript's own pre-processor, not by pattern.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import ts from 'typescript'

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src')

/** Higher may import lower or equal. The Vault client's parts are ordered among themselves too. */
const LAYERS: ReadonlyArray<readonly [rank: number, prefixes: readonly string[]]> = [
  [7, ['cli/']],
  [6, ['main.ts', 'app.ts']],
  [5, ['server/', 'handover/']],
  [4, ['mount/', 'lint/']],
  [3, ['request/', 'render/']],
  [2.4, ['vault/sessions/']],
  [2.3, ['vault/resilience/']],
  [2.2, ['vault/', 'identity/', 'kube/', 'hmac/']],
  [2.1, ['vault/transport/']],
  // The model of a Mount request: the types every layer passes to the one below it.
  [1, ['request/types.ts', 'config/', 'errors.ts', 'util/', 'observability/', 'package-info.ts']],
]

/** The rank of a file under src/: the longest matching prefix decides (vault/transport/ before vault/). */
function rankOf(file: string): number {
  let best: { rank: number; length: number } | undefined
  for (const [rank, prefixes] of LAYERS) {
    for (const p of prefixes) {
      const matches = p.endsWith('/') ? file.startsWith(p) : file === p
      if (matches && (best === undefined || p.length > best.length)) best = { rank, length: p.length }
    }
  }
  if (best === undefined) throw new Error(`src/${file} is in no layer of test/unit/layers.test.ts`)
  return best.rank
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  )
}

/** Root-relative paths of the files `file` imports from under root (a `.js` specifier names its `.ts` source). */
function localImports(root: string, file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
  return info.importedFiles
    .map((i) => i.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => relative(root, resolve(dirname(file), name)).replace(/\.js$/, '.ts'))
}

function upwardImports(root: string): string[] {
  const found: string[] = []
  for (const file of sourceFiles(root)) {
    const from = relative(root, file)
    for (const to of localImports(root, file)) {
      if (rankOf(to) > rankOf(from)) found.push(`src/${from} imports src/${to}`)
    }
  }
  return found
}

t.test('no file of src/ imports a layer above its own', async (t) => {
  t.ok(sourceFiles(SRC).length > 50, 'every source file is read')
  t.same(upwardImports(SRC), [])
})

t.test('the check finds an upward import, and lets the request model through', async (t) => {
  const dir = t.testdir({
    vault: {
      'paths.ts': "import type { Json } from '../request/types.js'\n",
      transport: { 'x.ts': "import { runMount } from '../../mount/mount.js'\nexport const y = 1\n" },
    },
    mount: { 'mount.ts': "import { y } from '../vault/transport/x.js'\n" },
  })
  t.same(upwardImports(dir), ['src/vault/transport/x.ts imports src/mount/mount.ts'])
})
