import t from 'tap'
import { Writable } from 'node:stream'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { encode } from '@jridgewell/sourcemap-codec'
import { MAX_SOURCE_MAP_BYTES, stackMapper } from '../../../src/observability/stack-map.js'
import { createLogger } from '../../../src/observability/logger.js'
import { tempDirFor } from '../../support/tmp.js'

/**
 * A bundle at <dir>/dist/app.js (not written: only its map is read) whose map leads line 1, columns 0–19,
 * to src/a.ts line 10 column 3, columns 20–39 to src/b.ts line 4 column 1 and columns 40 on to a package;
 * line 2 is the bundler's own code (no position).
 */
async function bundleDir(t: Parameters<typeof tempDirFor>[0]): Promise<{ dir: string; script: string }> {
  const dir = await tempDirFor(t, 'vcp-stackmap-')
  await mkdir(join(dir, 'dist'))
  return { dir, script: pathToFileURL(join(dir, 'dist', 'app.js')).href }
}

const MAP = {
  version: 3,
  sources: ['../src/a.ts', '../src/b.ts', '../node_modules/pkg/index.js'],
  names: [],
  mappings: encode([
    [
      [0, 0, 9, 2],
      [20, 1, 3, 0],
      [40, 2, 0, 0],
    ],
    [],
  ]),
}

t.test('frames in the bundle are led to the source file, line and column', async (t) => {
  const { dir, script } = await bundleDir(t)
  await writeFile(join(dir, 'dist', 'app.js.map'), JSON.stringify(MAP))
  const map = stackMapper(script)
  const stack = [
    'Error: boom',
    `    at first (${script}:1:5)`,
    `    at ${script}:1:25`,
    `    at inPackage (${script}:1:45)`,
    `    at generated (${script}:2:7)`,
    '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
  ].join('\n')
  t.equal(
    map(stack),
    [
      'Error: boom',
      `    at first (${join(dir, 'src', 'a.ts')}:10:3)`,
      `    at ${join(dir, 'src', 'b.ts')}:4:1`,
      `    at inPackage (${script}:1:45)`,
      `    at generated (${script}:2:7)`,
      '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
    ].join('\n'),
    "own frames name src/ files; a package's frame, an unmapped one and Node's stay as they were",
  )
  const byPath = `Error: x\n    at f (${join(dir, 'dist', 'app.js')}:1:1)`
  t.equal(map(byPath), `Error: x\n    at f (${join(dir, 'src', 'a.ts')}:10:3)`, 'a frame named by path, not URL')
})

t.test('the map is read when the first stack is mapped, not when the mapper is made', async (t) => {
  const { dir, script } = await bundleDir(t)
  const map = stackMapper(script)
  await writeFile(join(dir, 'dist', 'app.js.map'), JSON.stringify(MAP))
  t.equal(map(`E\n    at f (${script}:1:1)`), `E\n    at f (${join(dir, 'src', 'a.ts')}:10:3)`)
})

t.test('without a usable map the stack is left as it is', async (t) => {
  const { script } = await bundleDir(t)
  const stack = `Error: boom\n    at f (${script}:1:5)`
  t.equal(stackMapper(script)(stack), stack, 'no map file')

  const broken = await bundleDir(t)
  await writeFile(join(broken.dir, 'dist', 'app.js.map'), '{"version":3,')
  const brokenStack = `Error: boom\n    at f (${broken.script}:1:5)`
  t.equal(stackMapper(broken.script)(brokenStack), brokenStack, 'a map that is not JSON')

  const big = await bundleDir(t)
  const padded = { ...MAP, padding: 'x'.repeat(MAX_SOURCE_MAP_BYTES) }
  await writeFile(join(big.dir, 'dist', 'app.js.map'), JSON.stringify(padded))
  const bigStack = `Error: boom\n    at f (${big.script}:1:5)`
  t.equal(stackMapper(big.script)(bigStack), bigStack, 'a map over MAX_SOURCE_MAP_BYTES is not read')
  const garbled = `Error: boom\n    at f (${script}:x:5)`
  t.equal(stackMapper(script)(garbled), garbled, 'a frame without a line number')
})

t.test('the logger maps the stack of a logged error', async (t) => {
  const { dir, script } = await bundleDir(t)
  await writeFile(join(dir, 'dist', 'app.js.map'), JSON.stringify(MAP))
  const lines: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString())
      done()
    },
  })
  const logger = createLogger('info', sink, stackMapper(script))
  const err = new Error('boom')
  err.stack = `Error: boom\n    at f (${script}:1:5)`
  logger.error({ err }, 'failed')
  const logged = JSON.parse(lines[0]!) as { err: { stack: string } }
  t.equal(logged.err.stack, `Error: boom\n    at f (${join(dir, 'src', 'a.ts')}:10:3)`)
})
