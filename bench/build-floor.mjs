// Builds the bench's floor (bench/floor-provider.ts) into one file, dist/bench/floor-provider.bundle.js
// with its source map, with the daemon's esbuild options (scripts/bundle.mjs, bundleOptions) and so the
// same packages left out (its TRIMMED table), so that the floor loads what the daemon loads, from one
// file, and runs with the same Node flags. bench/run.sh runs it after npm run build.
//
//   node bench/build-floor.mjs
import path from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { bundleOptions } from '../scripts/bundle.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const FLOOR_ENTRY = path.join('bench', 'floor-provider.ts')
// Not dist/bench/floor-provider.js: tsc writes its own (unbundled) output of the entry there.
export const FLOOR_BUNDLE = path.join('dist', 'bench', 'floor-provider.bundle.js')

/** Builds the floor into `outfile`; resolves with esbuild's warnings (there should be none) and its metafile. */
export async function buildFloor(outfile = path.join(root, FLOOR_BUNDLE)) {
  const result = await build(bundleOptions(FLOOR_ENTRY, outfile))
  return { warnings: result.warnings, metafile: result.metafile }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { warnings } = await buildFloor()
  for (const w of warnings) process.stderr.write(`build-floor: ${w.text}\n`)
  if (warnings.length > 0) process.exit(1)
}
