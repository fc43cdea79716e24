// The call's one time limit and the caller's signal (call-deadline.ts) over a real pool to a
// server that never answers: the call ends, typed, and a call whose caller left is never sent.
import t from 'tap'
import type { Dispatcher } from 'undici'
import { callDeadline } from '../../../../src/vault/transport/call-deadline.js'
import { VaultCallAborted, VaultConnectionError } from '../../../../src/vault/transport/call-errors.js'
import { composed, failed, outcome, serve } from '../../../support/dispatch.js'

t.test('no answer within the limit: a typed timeout, and the layers below are told', async (t) => {
  const vault = await serve(t, () => undefined)
  let below: AbortSignal | undefined
  const spy: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
    below = (opts as { callEnded?: { signal: AbortSignal } }).callEnded?.signal
    return dispatch(opts, handler)
  }
  const err = failed(await outcome(composed(t, vault.url, [spy, callDeadline]), { timeoutMs: 50 } as object))
  t.ok(err instanceof VaultConnectionError)
  t.equal(err.kind, 'timeout')
  t.equal(err.message, 'no answer within 50 ms')
  t.equal(below?.aborted, true, 'the signal passed down is aborted with it')
  t.equal(below?.reason, err)
})

t.test("the caller's signal ends the call at once; one already given up is not sent", async (t) => {
  const vault = await serve(t, () => undefined)
  const d = composed(t, vault.url, [callDeadline])
  const caller = new AbortController()
  const pending = outcome(d, { timeoutMs: 60_000, callerSignal: caller.signal } as object)
  while (vault.seen.length === 0) await new Promise((r) => setTimeout(r, 5))
  caller.abort()
  t.ok(failed(await pending) instanceof VaultCallAborted)
  const gone = new AbortController()
  gone.abort()
  t.ok(
    failed(await outcome(d, { path: '/v1/never', timeoutMs: 60_000, callerSignal: gone.signal } as object)) instanceof
      VaultCallAborted,
  )
  t.same(vault.seen, ['/v1/x'], 'the second call was never sent')
})

t.test('an answer in time passes unchanged', async (t) => {
  const vault = await serve(t, (_req, res) => res.end('{"ok":true}'))
  t.match(await outcome(composed(t, vault.url, [callDeadline]), { timeoutMs: 60_000 } as object), {
    status: 200,
    body: '{"ok":true}',
  })
})
