// The observer (call-observer.ts) over a real pool: every call reported once, whatever its outcome.
import t from 'tap'
import type { VaultCallEvent } from '../../../../src/observability/vault-observer.js'
import { observeCalls } from '../../../../src/vault/transport/call-observer.js'
import { composed, outcome, serve } from '../../../support/dispatch.js'

const observed = (operation: VaultCallEvent['operation'], description: string) => ({
  observed: { operation, description },
})

t.test('answers and failures are reported with their operation and status', async (t) => {
  const vault = await serve(t, (req, res) => res.writeHead(req.url === '/v1/ok' ? 200 : 403).end('{}'))
  const events: VaultCallEvent[] = []
  const observer = { vaultCall: (e: VaultCallEvent) => void events.push(e) }
  const d = composed(t, vault.url, [observeCalls(observer)])
  await outcome(d, { path: '/v1/ok', ...observed('login', 'POST auth/jwt/login') })
  await outcome(d, { path: '/v1/no', ...observed('read', 'GET secret/x') })
  await outcome(composed(t, 'http://127.0.0.1:1', [observeCalls(observer)]), observed('health', 'GET sys/health'))
  t.same(
    events.map((e) => [e.operation, e.ok, e.status, e.description]),
    [
      ['login', true, undefined, 'POST auth/jwt/login'],
      ['read', false, 403, 'GET secret/x'],
      ['health', false, undefined, 'GET sys/health'],
    ],
  )
})

t.test('a failing observer never fails a call', async (t) => {
  const vault = await serve(t, (_req, res) => res.end('{}'))
  const broken = {
    vaultCall: () => {
      throw new Error('broken metrics')
    },
  }
  t.match(await outcome(composed(t, vault.url, [observeCalls(broken)]), observed('read', 'GET x')), { status: 200 })
})
