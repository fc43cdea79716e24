// How a Vault request becomes the text after /v1/ and how it is named in errors.
import t from 'tap'
import { apiPath, describeRequest, encodePath } from '../../../src/vault/paths.js'

t.test('encodePath: each segment as encodeURIComponent has it; the separators stay', async (t) => {
  t.equal(encodePath('secret/data/app'), 'secret/data/app')
  t.equal(encodePath('secret/data/a b?c#d'), 'secret/data/a%20b%3Fc%23d')
  t.equal(encodePath('kv/é/€'), 'kv/%C3%A9/%E2%82%AC')
  t.equal(encodePath('a/../b'), 'a/../b', 'dots are path text, not encoded')
  t.equal(encodePath('a%2Fb'), 'a%252Fb', 'a percent sign is data')
  t.throws(() => encodePath('\ud800'), URIError, 'a lone surrogate cannot be sent')
})

t.test('apiPath: the encoded path and the query', async (t) => {
  t.equal(apiPath({ path: 'secret/data/app', query: [] }), 'secret/data/app')
  t.equal(
    apiPath({
      path: 'secret/data/a b',
      query: [
        ['version', '3'],
        ['x', 'a&b'],
      ],
    }),
    'secret/data/a%20b?version=3&x=a%26b',
  )
})

t.test('describeRequest names method, path and query, never a body', async (t) => {
  t.equal(
    describeRequest({ method: 'GET', path: 'secret/data/app', query: [['version', '2']] }),
    'GET secret/data/app?version=2',
  )
  t.equal(describeRequest({ method: 'POST', path: 'pki/issue/web', query: [] }), 'POST pki/issue/web')
})
