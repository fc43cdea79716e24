// Tenant slots (tenant-slots.ts) over a real pool: one namespace's calls in flight are bounded,
// another's go beside them, its waiting calls go earliest due first, and a waiting call that ends
// early leaves the queue unsent.
import http from 'node:http'
import t from 'tap'
import { callDeadline } from '../../../../src/vault/transport/call-deadline.js'
import { tenantSlots } from '../../../../src/vault/transport/tenant-slots.js'
import { composed, failed, outcome, serve } from '../../../support/dispatch.js'

const until = async (done: () => boolean): Promise<void> => {
  while (!done()) await new Promise((r) => setTimeout(r, 5))
}

t.test("a namespace's calls past its slots wait for its own; another's go out beside them", async (t) => {
  const held: http.ServerResponse[] = []
  const vault = await serve(t, (req, res) => (req.url?.includes('slow') ? void held.push(res) : void res.end('{}')))
  const d = composed(t, vault.url, [tenantSlots(2)], { connections: 8 })
  const slow = [1, 2, 3].map((i) => outcome(d, { path: `/v1/slow${i}`, tenant: 'a' } as object))
  await until(() => held.length === 2)
  t.match(await outcome(d, { path: '/v1/victim', tenant: 'b' } as object), { status: 200 }, "b's call is answered")
  t.equal(held.length, 2, "a's third call waits")
  held.shift()!.end('{}')
  await until(() => held.length === 2)
  t.same(vault.seen.filter((p) => p.includes('slow')).sort(), ['/v1/slow1', '/v1/slow2', '/v1/slow3'], 'then it goes')
  while (held.length > 0) held.shift()!.end('{}')
  t.equal((await Promise.all(slow)).filter((o) => 'status' in o).length, 3)
})

t.test('a call that times out waiting says why, and is never sent', async (t) => {
  const held: http.ServerResponse[] = []
  const vault = await serve(t, (_req, res) => void held.push(res))
  const d = composed(t, vault.url, [tenantSlots(1), callDeadline], { connections: 8 })
  const first = outcome(d, { path: '/v1/first', tenant: 'a', timeoutMs: 60_000 } as object)
  await until(() => held.length === 1)
  const err = failed(await outcome(d, { path: '/v1/second', tenant: 'a', timeoutMs: 30 } as object))
  t.equal(err.kind, 'timeout')
  t.equal(err.message, "no answer within 30 ms (this namespace's calls to the address were all in flight)")
  held[0]!.end('{}')
  t.match(await first, { status: 200 })
  // The slot went back: the next call of the namespace goes out.
  const third = outcome(d, { path: '/v1/third', tenant: 'a', timeoutMs: 60_000 } as object)
  await until(() => held.length === 2)
  held[1]!.end('{}')
  t.match(await third, { status: 200 })
  t.same(vault.seen, ['/v1/first', '/v1/third'], 'the timed-out call was never sent')
})

t.test('a call in flight that times out or whose caller leaves gives its slot back at once', async (t) => {
  const held: http.ServerResponse[] = []
  const vault = await serve(t, (req, res) => (req.url?.includes('hang') ? void held.push(res) : void res.end('{}')))
  const d = composed(t, vault.url, [tenantSlots(1), callDeadline], { connections: 8 })
  const timedOut = failed(await outcome(d, { path: '/v1/hang1', tenant: 'a', timeoutMs: 30 } as object))
  t.equal(timedOut.kind, 'timeout')
  const caller = new AbortController()
  const left = outcome(d, { path: '/v1/hang2', tenant: 'a', timeoutMs: 60_000, callerSignal: caller.signal } as object)
  await until(() => held.length === 2)
  caller.abort()
  t.ok(failed(await left) instanceof Error, 'the caller left')
  // The one slot is free again though the server never answered either call.
  t.match(await outcome(d, { path: '/v1/next', tenant: 'a', timeoutMs: 2_000 } as object), { status: 200 })
  while (held.length > 0) held.shift()!.destroy()
})

t.test("a namespace's waiting calls go earliest due first, in arrival order among calls due together", async (t) => {
  const held: http.ServerResponse[] = []
  const vault = await serve(t, (_req, res) => void held.push(res))
  const d = composed(t, vault.url, [tenantSlots(1), callDeadline], { connections: 8 })
  const call = (path: string, due: object): Promise<unknown> =>
    outcome(d, { path: `/v1/${path}`, tenant: 'a', timeoutMs: 60_000, ...due } as object)
  const now = Date.now()
  const calls = [
    call('first', { dueAt: now + 1_000 }),
    // Each Mount's calls are due at its deadline: the later Mount's read waits behind the earlier one's.
    call('later-mount', { dueAt: now + 90_000 }),
    call('earlier-mount-1', { dueAt: now + 30_000 }),
    call('earlier-mount-2', { dueAt: now + 30_000 }),
    // A call of no Mount is due at the end of its own time limit.
    call('no-mount', { timeoutMs: 60_000 }),
  ]
  for (let answered = 0; answered < calls.length; answered++) {
    await until(() => held.length > answered)
    held[answered]!.end('{}')
  }
  await Promise.all(calls)
  t.same(vault.seen, ['/v1/first', '/v1/earlier-mount-1', '/v1/earlier-mount-2', '/v1/no-mount', '/v1/later-mount'])
})
