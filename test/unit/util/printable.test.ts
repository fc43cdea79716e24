// What reaches a person is free of terminal controls and bidirectional formatting.
import t from 'tap'
import { printable, printableJson, unprintableKind } from '../../../src/util/printable.js'

t.test('every C0, DEL, C1 and bidirectional character becomes a visible JSON-style escape', async (t) => {
  t.equal(printable('a\u001b[31mred\u0007'), 'a\\u001b[31mred\\u0007')
  t.equal(printable('line\nnext\r\ttab'), 'line\\nnext\\r\\ttab')
  t.equal(printable('del\u007f c1\u0085\u009b'), 'del\\u007f c1\\u0085\\u009b')
  t.equal(printable('gpj.\u202eexe'), 'gpj.\\u202eexe')
  t.equal(
    printable('\u2066iso\u2069 \u200e\u200f\u061c \u2028\u2029'),
    '\\u2066iso\\u2069 \\u200e\\u200f\\u061c \\u2028\\u2029',
  )
  t.equal(printable('é ✓ 😀 plain'), 'é ✓ 😀 plain', 'other text unchanged')
  t.equal(printable(printable('\u001b')), '\\u001b', 'idempotent')
  for (let c = 0; c <= 0x9f; c++) {
    const out = printable(String.fromCharCode(c))
    t.equal(unprintableKind(out), undefined, `U+${c.toString(16)} leaves no control character`)
  }
})

t.test('unprintableKind tells a control from a bidirectional character', async (t) => {
  t.equal(unprintableKind('plain/name.txt'), undefined)
  t.equal(unprintableKind('a\u0000b'), 'control')
  t.equal(unprintableKind('a\u0090b'), 'control')
  t.equal(unprintableKind('a\u202eb'), 'bidirectional')
})

t.test('printableJson escapes what JSON leaves raw and keeps the JSON the same', async (t) => {
  const value = { name: 'a\u0085b\u202ec\u007f', nested: ['x\u2028'] }
  const text = printableJson(JSON.stringify(value, null, 2))
  t.same(JSON.parse(text), value, 'the same value')
  t.equal(unprintableKind(text.replace(/\n/g, '')), undefined, 'nothing raw left but the layout')
})
