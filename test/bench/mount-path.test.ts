// bench/mount-path.ts: the Mount path's own CPU with a fake Vault. Checks that the Mounts really run
// the whole path (one fake Vault read per object, no failure), in a process with the image's heap
// flags, and that the line reports what it measured; never how fast, nor how much engine work.
import t from 'tap'
import { measureHere, measureMountPath, mountPathLine } from '../../bench/mount-path.js'

t.test('every timed Mount reads its 5 objects from the fake Vault, once each', async (t) => {
  // measureHere throws if a Mount fails (a refused token, a bad answer shape): the fake's answers
  // must be what the provider accepts, or the figure would be that of an error path.
  const f = await measureHere(40, 16)
  t.equal(f.mounts, 40)
  t.equal(f.vaultCallsPerMount, 5, 'one read per object: no cache or coalescing hides the reads')
  t.ok(f.cpuUsPerMount > 0 && Number.isFinite(f.cpuUsPerMount), 'CPU per Mount measured')
  t.ok(f.abortControllersPerMount >= 0, 'AbortControllers per Mount counted')
  t.ok(f.youngGcsPer1000 >= 0 && f.fullGcsPer1000 >= 0, 'collections counted')
})

t.test('measured in a process of its own, with the image’s heap flags', async (t) => {
  const f = await measureMountPath(40)
  t.equal(f.node, process.versions.node)
  t.ok(f.flags.includes('--max-semi-space-size=2'), `the image's flags: ${f.flags.join(' ')}`)
  t.equal(f.vaultCallsPerMount, 5)
  t.match(
    mountPathLine(f),
    /^Node \d+\.\d+\.\d+ \([^)]*--max-semi-space-size=2[^)]*\): \d+ µs of CPU per Mount of 5 KV objects over 40 Mounts, 5\.00 fake Vault calls per Mount; per Mount [\d.]+ AbortControllers made; per 1,000 Mounts [\d.]+ young and [\d.]+ full collections$/,
  )
})
