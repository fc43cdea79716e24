// Remembered refusals: what a refusal answers (the same pod, Vault, login and objects; nothing else),
// for how long (injected time), how they are shared between namespaces (one namespace's many never
// push out another's), and that a namespace with nothing remembered costs no digest.
import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import { BUDGET_REFUSAL_MEMORY_MS, MAX_REMEMBERED_REFUSALS, RememberedRefusals } from '../../../src/mount/refusals.js'
import { parseObjects } from '../../../src/request/objects.js'
import type { MountSpec } from '../../../src/request/types.js'

const TEXT = '- objectName: a\n  secretPath: secret/data/big\n'

/** A Mount of `text` by one pod; the objects are parsed anew each time (no cache shares them). */
function spec(o: { uid?: string; namespace?: string; text?: string; role?: string } = {}): MountSpec {
  return {
    pod: { name: 'web-0', namespace: o.namespace ?? 'shop', uid: o.uid ?? 'uid-1', serviceAccount: 'web' },
    secretProviderClass: 'web-secrets',
    roleName: o.role ?? 'web',
    authMount: 'kubernetes',
    audience: 'vault',
    vault: { address: 'https://vault.test:8200', tls: { skipVerify: false } },
    readConsistency: 'strong',
    objects: parseObjects(o.text ?? TEXT),
    defaultMode: 0o644,
  }
}

const refusal = (what = 'a'): ProviderError =>
  new ProviderError('MOUNT_BUDGET_EXCEEDED', `object "${what}" takes the Mount past its budget`)

t.test('a refusal answers the same pod asking the same way for the same objects, and nothing else', async (t) => {
  const refusals = new RememberedRefusals({ now: () => 0 })
  const err = refusal()
  refusals.remember(spec(), err)
  t.equal(refusals.recall(spec()), err, 'the same pod and text, parsed again')
  t.equal(
    refusals.recall(spec({ text: `# the same objects\n${TEXT}` })),
    err,
    'a text that parses to the same objects is the same request',
  )
  t.equal(refusals.recall(spec({ uid: 'uid-2' })), undefined, 'another pod')
  t.equal(refusals.recall(spec({ namespace: 'bank' })), undefined, 'another namespace')
  t.equal(refusals.recall(spec({ role: 'admin' })), undefined, 'another role')
  t.equal(refusals.recall(spec({ text: `${TEXT}  secretKey: small\n` })), undefined, 'other objects (another text)')
})

t.test(`a refusal is forgotten ${BUDGET_REFUSAL_MEMORY_MS} ms after it was made`, async (t) => {
  let now = 1_000_000
  const refusals = new RememberedRefusals({ now: () => now })
  const err = refusal()
  refusals.remember(spec(), err)
  now += BUDGET_REFUSAL_MEMORY_MS - 1
  t.equal(refusals.recall(spec()), err)
  now += 1
  t.equal(refusals.recall(spec()), undefined, 'forgotten after the memory time')
  // Remembered again, it lasts its own full time.
  refusals.remember(spec(), err)
  now += BUDGET_REFUSAL_MEMORY_MS - 1
  t.equal(refusals.recall(spec()), err)
})

t.test("one namespace's many refusals never push out another's", async (t) => {
  const refusals = new RememberedRefusals({ now: () => 0 })
  const quiet = [refusal('q0'), refusal('q1')]
  quiet.forEach((err, i) => refusals.remember(spec({ namespace: 'quiet', uid: `q${i}` }), err))
  const noisy = MAX_REMEMBERED_REFUSALS + 100
  for (let i = 0; i < noisy; i++) refusals.remember(spec({ namespace: 'noisy', uid: `n${i}` }), refusal(`n${i}`))
  t.ok(refusals.size <= MAX_REMEMBERED_REFUSALS, `bounded: ${refusals.size} held`)
  t.same(
    quiet.map((_err, i) => refusals.recall(spec({ namespace: 'quiet', uid: `q${i}` }))),
    quiet,
    "the quiet namespace's refusals are all kept",
  )
  t.equal(refusals.recall(spec({ namespace: 'noisy', uid: 'n0' })), undefined, "the noisy one's oldest went")
  t.equal(
    refusals.recall(spec({ namespace: 'noisy', uid: `n${noisy - 1}` }))?.message,
    refusal(`n${noisy - 1}`).message,
  )
})

t.test('a namespace with no refusal in memory costs no digest of its objects', async (t) => {
  let now = 0
  const refusals = new RememberedRefusals({ now: () => now })
  let objectsRead = 0
  const watched = (namespace: string): MountSpec => {
    const s = spec({ namespace })
    const objects = s.objects
    Object.defineProperty(s, 'objects', {
      get: () => {
        objectsRead += 1
        return objects
      },
    })
    return s
  }
  t.equal(refusals.recall(watched('shop')), undefined)
  const err = refusal()
  refusals.remember(spec({ namespace: 'bank' }), err)
  t.equal(refusals.recall(watched('shop')), undefined, "another namespace's refusal")
  t.equal(objectsRead, 0, 'nothing remembered for the namespace: its objects were not read')
  t.equal(refusals.recall(watched('bank')), err)
  t.ok(objectsRead > 0, 'with a refusal in the namespace, the Mount is looked up')
  objectsRead = 0
  now += BUDGET_REFUSAL_MEMORY_MS
  t.equal(refusals.recall(watched('bank')), undefined)
  t.equal(refusals.recall(watched('bank')), undefined)
  t.equal(objectsRead, 0, 'once every refusal of the namespace has expired, its Mounts are back on the cheap path')
})
