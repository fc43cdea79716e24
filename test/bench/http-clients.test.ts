// bench/http-clients.ts: the HTTP clients' memory and CPU, each in a process of its own against a
// local server. Checks that both clients are measured and the figures are plausible, never how large.
import t from 'tap'
import { CLIENT_KINDS, clientsTable, measureClients } from '../../bench/http-clients.js'

t.test('both clients are measured in their own processes, with the image’s Node flags', async (t) => {
  const figures = await measureClients(200)
  t.same(
    figures.map((f) => f.kind),
    [...CLIENT_KINDS],
    'undici and node:http, in that order',
  )
  for (const f of figures) {
    t.equal(f.node, process.versions.node, `${f.kind}: ran on the Node it was given`)
    t.ok(f.cpuUsPerRequest > 0 && Number.isFinite(f.cpuUsPerRequest), `${f.kind}: CPU per request measured`)
    t.ok(f.rssMiB > 10, `${f.kind}: an RSS a Node process can have (${f.rssMiB.toFixed(1)} MiB)`)
    t.ok(f.hwmMiB >= f.rssMiB, `${f.kind}: the high-water mark is at least the RSS`)
  }
  const table = clientsTable(figures)
  t.match(
    table,
    /^Node \d+\.\d+\.\d+, Node flags [^;]*--max-semi-space-size=2/,
    'the table names the Node and the flags it ran with',
  )
  t.match(table, /\| undici \| [\d.]+ \| [\d.]+ \| [\d.]+ \|/)
  t.match(table, /\| node:http \| [\d.]+ \| [\d.]+ \| [\d.]+ \|/)
})
