// bench/idle-connections.ts: connections and CPU per Mount after a pause, over TLS to a real
// OpenBao. Only pauses of 0 s here (the tool's point is real pauses, which a test must not wait
// for; transport-idle.test.ts covers the timeout itself with mocked time): checks that connections
// are counted and figures are produced for each timeout, never how large the CPU figures are. The
// timeouts are long, so that two Mounts in a row share connections however slow the machine is.
import t from 'tap'
import { idleConnectionsTable, measureIdleConnections } from '../../bench/idle-connections.js'

t.test('each timeout gets its provider, and back-to-back Mounts reuse the first one’s connections', async (t) => {
  const figures = await measureIdleConnections({ gapsSec: [0], mountsPerGap: 2, timeouts: ['1m', '5m'] })
  t.same(
    figures.map((f) => f.timeout),
    ['1m', '5m'],
  )
  for (const f of figures) {
    t.ok(f.firstMountConnections >= 1, `${f.timeout}: the first Mount opened connections (${f.firstMountConnections})`)
    t.equal(f.gaps.length, 1)
    t.equal(f.gaps[0]!.mounts, 2)
    t.equal(f.gaps[0]!.newConnectionsPerMount, 0, `${f.timeout}: no pause, no new connection`)
    t.ok(Number.isFinite(f.gaps[0]!.providerCpuMsPerMount) && f.gaps[0]!.providerCpuMsPerMount >= 0)
    t.ok(Number.isFinite(f.gaps[0]!.openbaoCpuMsPerMount) && f.gaps[0]!.openbaoCpuMsPerMount >= 0)
  }
  const table = idleConnectionsTable(figures)
  t.match(table, /^Mounts of 5 KV objects for a new pod each, one at a time, over TLS to OpenBao/)
  t.match(table, /\| 1m \| 0 s \| 2 \| 0\.0 \| [\d.]+ \| [\d.]+ \|/)
  t.match(table, /\| 5m \| 0 s \| 2 \| 0\.0 \| [\d.]+ \| [\d.]+ \|/)
})
