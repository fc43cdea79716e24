// The node's render turns (src/mount/render-turns.ts): one turn per namespace per check phase, in
// the order the namespace's renders asked, a namespace's share after a busy turn, and a Mount's
// pace stopping at its deadline or its cancellation, naming the object.
import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import { RenderTurns, renderPace } from '../../../src/mount/render-turns.js'
import { renderObjects } from '../../../src/render/render.js'
import { parseObjects } from '../../../src/request/objects.js'
import { Deadline } from '../../../src/util/deadline.js'
import { hostileBundle, rsaPublicKey } from '../../support/cert-builder.js'
import { thrown } from '../../support/thrown.js'

const phase = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

t.test('each namespace gets one turn per check phase; another namespace is not held up', async (t) => {
  const turns = new RenderTurns(() => 0)
  const order: string[] = []
  const ask = (tenant: string, who: string): void => {
    void turns.next(tenant).then(() => order.push(who))
  }
  ask('a', 'a1')
  ask('a', 'a2')
  ask('a', 'a3')
  ask('b', 'b1')
  await phase()
  t.same(order, ['a1', 'b1'], 'the first check phase: one of each namespace')
  await phase()
  t.same(order, ['a1', 'b1', 'a2'])
  await phase()
  t.same(order, ['a1', 'b1', 'a2', 'a3'])
  t.equal(turns.waitingNamespaces, 0, 'nothing kept once nobody waits')
})

t.test("after a busy turn, the namespace's next turn waits for its share", async (t) => {
  let now = 0
  const turns = new RenderTurns(() => now)
  let got = false
  void turns.next('a', 50).then(() => (got = true))
  await phase()
  await phase()
  t.notOk(got, 'not while the namespace rests')
  now = 60
  await new Promise((resolve) => setTimeout(resolve, 60))
  await phase()
  await phase()
  t.ok(got, 'once its rest is over')
})

t.test("the pace stops at the Mount's deadline and at its cancellation, naming the object", async (t) => {
  let clock = 1000
  const expired = renderPace(new Deadline(1500, undefined, { now: () => clock }), 'a', new RenderTurns())
  expired.check('object "x"')
  clock = 2000
  const late = thrown(() => expired.check('object "x"'), ProviderError)
  t.equal(late.code, 'DEADLINE_EXCEEDED')
  t.match(late.message, /ran out of time before object "x" was rendered/)

  const cancel = new AbortController()
  const pace = renderPace(
    new Deadline(Number.MAX_SAFE_INTEGER, cancel.signal, { now: () => clock }),
    'a',
    new RenderTurns(),
  )
  cancel.abort(new Error('gone'))
  const gone = thrown(() => pace.check('object "y"'), ProviderError)
  t.equal(gone.code, 'CANCELLED', 'cancelled, not out of time')
  t.match(gone.message, /the driver cancelled the Mount before object "y" was rendered/)
})

t.test('a render the driver cancels stops before its next keystore: CANCELLED, naming that object', async (t) => {
  const b = hostileBundle({ chainLength: 1, decoys: 0, decoyKey: () => rsaPublicKey(2048, 17) })
  const objs = parseObjects(
    Array.from({ length: 6 }, (_, i) => `- {objectName: k${i}, secretPath: secret/data/b, format: pkcs12}`).join('\n'),
  )
  const labels = objs.map((o) => `object "${o.objectName}"`)
  const cancel = new AbortController()
  const pace = renderPace(
    new Deadline(Number.MAX_SAFE_INTEGER, cancel.signal, { now: () => 0 }),
    'a',
    new RenderTurns(),
  )
  const render = renderObjects(
    objs,
    objs.map(() => ({ data: { data: { bundle: b.pem } } })),
    0o644,
    labels,
    undefined,
    new Set(),
    { pace },
  )
  // The first keystore is rendered at once; the driver leaves while the render waits for its next turn.
  cancel.abort(new Error('gone'))
  const err = await render.then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(err instanceof ProviderError)
  t.match(err, {
    code: 'CANCELLED',
    message: /^the driver cancelled the Mount before object "k1" was rendered; nothing more was rendered$/,
  })
})
