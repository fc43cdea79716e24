// Read consistency (consistency.ts): an address's X-Vault-Index format learned from its own answers, the
// headers built from it, and what a hostile answer can make of it (nothing beyond its own transport).
import t from 'tap'
import {
  IndexRecord,
  MAX_INDEX_CHARS,
  UNREACHED_INDEX_VALUE,
  echoableIndex,
  indexFormat,
  unreachedIndex,
} from '../../../../src/vault/transport/consistency.js'

const CLUSTER = 'fb4a823f-eed0-c44b-2108-b3412795e590'
/** What OpenBao 2.7.2 answers: base64 of {"cluster":"<id>","value":"<raft index>"}. */
const OPENBAO_27 = Buffer.from(`{"cluster":"${CLUSTER}","value":"50"}`).toString('base64')

function recorded(): { record: IndexRecord; warnings: () => number } {
  let warned = 0
  return { record: new IndexRecord(() => warned++), warnings: () => warned }
}

t.test("OpenBao 2.7's format, and the newer `<cluster>:<index>`", async (t) => {
  t.equal(OPENBAO_27, 'eyJjbHVzdGVyIjoiZmI0YTgyM2YtZWVkMC1jNDRiLTIxMDgtYjM0MTI3OTVlNTkwIiwidmFsdWUiOiI1MCJ9')
  t.same(indexFormat(OPENBAO_27), { kind: 'json', cluster: CLUSTER })
  t.same(indexFormat(`${CLUSTER}:50`), { kind: 'colon', cluster: CLUSTER })
  const json = unreachedIndex({ kind: 'json', cluster: CLUSTER })!
  t.same(JSON.parse(Buffer.from(json, 'base64').toString('utf8')), { cluster: CLUSTER, value: UNREACHED_INDEX_VALUE })
  t.equal(UNREACHED_INDEX_VALUE, (2n ** 63n - 1n).toString(), '2^63−1: no Raft index reaches it')
  t.equal(unreachedIndex({ kind: 'colon', cluster: CLUSTER }), `${CLUSTER}:${UNREACHED_INDEX_VALUE}`)
  t.equal(unreachedIndex({ kind: 'unknown' }), undefined)
})

t.test('strong reads: nothing until the address has answered with an index, then an unreached one', async (t) => {
  const { record, warnings } = recorded()
  t.same(record.headers({ mode: 'strong' }), {}, 'no format seen yet: nothing is sent')
  t.equal(record.learn(undefined), undefined, 'an answer without an index teaches nothing')
  t.same(record.headers({ mode: 'strong' }), {})
  t.equal(record.learn(OPENBAO_27), OPENBAO_27, 'the answer index, to send back')
  const strong = record.headers({ mode: 'strong' })
  t.equal(strong['x-vault-inconsistent'], 'forward-active-node', 'never `fail`, whose 429 reads as a rate limit')
  t.same(JSON.parse(Buffer.from(strong['x-vault-index']!, 'base64').toString('utf8')), {
    cluster: CLUSTER,
    value: UNREACHED_INDEX_VALUE,
  })
  record.learn(`${CLUSTER}:51`)
  t.same(record.headers({ mode: 'strong' }), {
    'x-vault-index': `${CLUSTER}:${UNREACHED_INDEX_VALUE}`,
    'x-vault-inconsistent': 'forward-active-node',
  })
  t.same(record.headers(undefined), {}, 'a call stating nothing (a login) sends nothing')
  t.same(record.headers({}), {})
  t.equal(warnings(), 0)
})

t.test('eventual reads: nothing, or the index of the identity’s own login or write', async (t) => {
  const { record } = recorded()
  t.same(record.headers({ mode: 'eventual' }), {})
  t.same(record.headers({ mode: 'eventual', after: OPENBAO_27 }), {
    'x-vault-index': OPENBAO_27,
    'x-vault-inconsistent': 'forward-active-node',
  })
  t.same(record.headers({ mode: 'eventual', after: 'a\r\nx-evil: 1' }), {}, 'never a header it cannot carry')
})

t.test('an unknown format (Vault Enterprise): nothing is sent, one warning per transport', async (t) => {
  const { record, warnings } = recorded()
  const enterprise = Buffer.from('\u0008\u00c8\u0001\u0012 opaque wal state and hmac').toString('base64')
  t.equal(record.learn(enterprise), enterprise, 'echoable all the same (for read-your-writes)')
  t.same(record.headers({ mode: 'strong' }), {})
  t.same(record.headers({ mode: 'strong' }), {})
  t.equal(warnings(), 1, 'logged once')
  t.same(record.headers({ mode: 'eventual', after: enterprise }), {
    'x-vault-index': enterprise,
    'x-vault-inconsistent': 'forward-active-node',
  })
  record.learn(OPENBAO_27)
  t.equal(record.headers({ mode: 'strong' })['x-vault-inconsistent'], 'forward-active-node', 'the latest answer wins')
})

t.test('hostile index values: bounded, printable, never another format than the one written', async (t) => {
  const b64 = (text: string): string => Buffer.from(text).toString('base64')
  const unknown = [
    b64(`{"cluster":"${CLUSTER}","value":"50","extra":1}`),
    b64(`{"cluster":"${CLUSTER}","value":50}`),
    b64(`{"cluster":"${CLUSTER}","value":"-1"}`),
    b64(`{"cluster":"${CLUSTER}","value":"1e9"}`),
    b64(`{"cluster":"${'c'.repeat(129)}","value":"1"}`),
    b64(`{"cluster":"a\\"b","value":"1"}`),
    b64(`{"cluster":"a/b","value":"1"}`),
    b64('["cluster","value"]'),
    b64('null'),
    b64('not json'),
    `${CLUSTER}:`,
    `:50`,
    `${CLUSTER}:5:0`,
    `${CLUSTER}:${'9'.repeat(21)}`,
    `${'c'.repeat(129)}:1`,
    'eyJ',
  ]
  for (const value of unknown) t.same(indexFormat(value), { kind: 'unknown' }, value.slice(0, 60))
  t.equal(echoableIndex('x'.repeat(MAX_INDEX_CHARS)), 'x'.repeat(MAX_INDEX_CHARS))
  for (const bad of [
    'x'.repeat(MAX_INDEX_CHARS + 1),
    `${OPENBAO_27}, ${OPENBAO_27}`,
    `${OPENBAO_27},${OPENBAO_27}`,
    'a b',
    'a\tb',
    'a\u0000b',
    'é',
    '',
  ]) {
    t.equal(echoableIndex(bad), undefined, JSON.stringify(bad.slice(0, 40)))
  }
  t.equal(echoableIndex([OPENBAO_27, OPENBAO_27]), undefined, 'two headers are no one index')
  const { record, warnings } = recorded()
  t.equal(record.learn('x'.repeat(100_000)), undefined, 'not kept, not echoed')
  t.same(record.headers({ mode: 'strong' }), {})
  t.equal(warnings(), 1)
})
