// The problems one parse keeps: in the order found, a ProviderError kept and anything else (a bug)
// thrown on, and at most MAX_ISSUES of them, then one saying how many more there were.
import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import { Issues, MAX_ISSUES } from '../../../src/request/issues.js'
import { thrown } from '../../support/thrown.js'

t.test('attempt keeps what a check refuses and returns what it gives', async (t) => {
  const issues = new Issues()
  t.equal(
    issues.attempt(() => 'value'),
    'value',
  )
  t.ok(issues.none)
  t.doesNotThrow(() => issues.throwFirst(), 'nothing to throw')
  const refusal = new ProviderError('BAD_PARAMETER', 'first', { parameter: 'a' })
  t.equal(
    issues.attempt(() => {
      throw refusal
    }),
    undefined,
  )
  issues.add(new ProviderError('BAD_OBJECT', 'second'))
  t.notOk(issues.none)
  t.same(
    issues.list().map((i) => i.message),
    ['first', 'second'],
  )
  t.equal(
    thrown(() => issues.throwFirst(), ProviderError),
    refusal,
    'the first is the one thrown',
  )
  t.throws(
    () =>
      issues.attempt(() => {
        throw new TypeError('a bug')
      }),
    TypeError,
    'a bug is not a problem of the input',
  )
})

t.test('at most MAX_ISSUES are kept, then how many more there were', async (t) => {
  const issues = new Issues()
  for (let i = 0; i < MAX_ISSUES + 7; i++) {
    issues.add(new ProviderError(i < MAX_ISSUES ? 'BAD_OBJECT' : 'BAD_PARAMETER', `problem ${i}`, { parameter: 'p' }))
  }
  const list = issues.list()
  t.equal(list.length, MAX_ISSUES + 1)
  t.equal(list[MAX_ISSUES - 1]!.message, `problem ${MAX_ISSUES - 1}`)
  t.same(
    [list[MAX_ISSUES]!.code, list[MAX_ISSUES]!.message, list[MAX_ISSUES]!.fields],
    ['BAD_PARAMETER', '…and 7 more problems', { parameter: 'p' }],
    'with the code and parameter of the first one left out',
  )
})
