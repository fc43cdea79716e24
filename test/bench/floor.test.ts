// The bench's floor (bench/floor-provider.ts, built by bench/build-floor.mjs) holds what the daemon's
// bundle holds: the same packages, less the same TRIMMED ones, so that ours minus the floor is the
// provider's own work. Builds both into a temp dir; never runs them.
import { join } from 'node:path'
import type { Metafile } from 'esbuild'
import t from 'tap'
import { FLOOR_BUNDLE, FLOOR_ENTRY, buildFloor } from '../../bench/build-floor.mjs'
import { FLOOR_MAIN } from '../../bench/scenarios.js'
import { TRIMMED, bundle } from '../../scripts/bundle.mjs'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { tempDirFor } from '../support/tmp.js'

/** The packages whose files a build took in: `@scope/name` or `name`. */
function packages(metafile: Metafile): Set<string> {
  const names = Object.keys(metafile.inputs)
    .filter((f) => f.startsWith('node_modules/'))
    .map((f) => f.slice('node_modules/'.length).split('/'))
    .map((p) => (p[0]!.startsWith('@') ? `${p[0]}/${p[1]}` : p[0]!))
  return new Set(names)
}

t.test('the floor is built from the packages the daemon is built from', async (t) => {
  const dir = await tempDirFor(t, 'vcp-floor-')
  const floor = await buildFloor(join(dir, 'floor-provider.bundle.js'))
  const daemon = await bundle(join(dir, 'daemon.js'))
  t.same(floor.warnings, [], 'esbuild warns about nothing')
  t.ok(Object.keys(floor.metafile.inputs).includes(FLOOR_ENTRY), `${FLOOR_ENTRY} is the entry`)
  t.same([...packages(floor.metafile)].sort(), [...packages(daemon.metafile)].sort(), 'the same packages inside')
  for (const p of TRIMMED) t.notOk(packages(floor.metafile).has(p.name), `${p.name} is left out, as from the daemon`)
})

t.test('the bench runs the bundle bench/build-floor.mjs writes', async (t) => {
  t.equal(FLOOR_MAIN, join(PACKAGE_ROOT, FLOOR_BUNDLE))
})
