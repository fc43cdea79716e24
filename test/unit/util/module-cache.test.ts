import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { enterStandIn } from '../../../src/util/module-cache.js'

const require = createRequire(import.meta.url)

t.test('a stand-in is what require() gets for its file; a module already loaded is left as it is', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'module-cache-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'package.cjs')
  writeFileSync(file, 'module.exports = { real: true }\n')
  const standIn = { standIn: true }

  t.equal(enterStandIn(file, standIn), true, 'entered')
  t.equal(require(file), standIn, "require() gets the stand-in, not the file's own exports")
  t.equal(require.cache[file]?.loaded, true, 'marked loaded, as a required module is')
  t.equal(enterStandIn(file, { other: true }), false, 'a second stand-in does not replace the first')
  t.equal(require(file), standIn)

  const loaded = path.join(dir, 'loaded.cjs')
  writeFileSync(loaded, 'module.exports = { real: true }\n')
  const real: unknown = require(loaded)
  t.equal(enterStandIn(loaded, standIn), false, 'not entered over a loaded module')
  t.equal(require(loaded), real)
})
