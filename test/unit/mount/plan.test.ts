import t from 'tap'
import { planRequests, requestKey } from '../../../src/mount/plan.js'
import { parseObjects } from '../../../src/request/objects.js'

function plan(yaml: string) {
  const objects = parseObjects(yaml)
  return { objects, planned: planRequests(objects) }
}

t.test('objects naming the same request share it', async (t) => {
  const { objects, planned } = plan(
    [
      '- {objectName: db-user, secretPath: database/creds/app, secretKey: username}',
      '- {objectName: db-pass, secretPath: /v1/database/creds/app, secretKey: password}',
      '- {objectName: kv, secretPath: secret/data/app, secretKey: k}',
      '- {objectName: db-all, secretPath: database/creds/app}',
    ].join('\n'),
  )
  t.equal(planned.length, 2)
  t.strictSame(planned[0]!.objectIndexes, [0, 1, 3])
  t.strictSame(planned[0]!.request, {
    method: 'GET',
    path: 'database/creds/app',
    query: [],
    body: undefined,
    consistency: 'strong',
  })
  t.strictSame(planned[1]!.objectIndexes, [2])
  t.strictSame(planned[1]!.request, {
    method: 'GET',
    path: 'secret/data/app',
    query: [],
    body: undefined,
    consistency: 'strong',
  })
  t.equal(requestKey(objects[0]!), requestKey(objects[1]!))
})

t.test('PKI objects with the same secretArgs share one certificate', async (t) => {
  const { planned } = plan(
    [
      '- {objectName: tls.crt, secretPath: pki/issue/web, method: PUT, secretKey: certificate, secretArgs: {common_name: a.example.com, ttl: 1h}}',
      '- {objectName: tls.key, secretPath: pki/issue/web, method: put, secretKey: private_key, secretArgs: {ttl: 1h, common_name: a.example.com}}',
      '- {objectName: ca.crt, secretPath: pki/issue/web, method: PUT, secretKey: issuing_ca, secretArgs: {common_name: a.example.com, ttl: 1h}}',
    ].join('\n'),
  )
  t.equal(planned.length, 1)
  t.strictSame(planned[0]!.objectIndexes, [0, 1, 2])
  t.strictSame(planned[0]!.request, {
    method: 'PUT',
    path: 'pki/issue/web',
    query: [],
    body: { common_name: 'a.example.com', ttl: '1h' },
    consistency: 'strong',
  })
})

t.test('different secretArgs, method, path or query are different requests', async (t) => {
  const { planned } = plan(
    [
      '- {objectName: a, secretPath: pki/issue/web, method: PUT, secretArgs: {common_name: a.example.com}}',
      '- {objectName: b, secretPath: pki/issue/web, method: PUT, secretArgs: {common_name: b.example.com}}',
      '- {objectName: c, secretPath: pki/issue/web, method: POST, secretArgs: {common_name: a.example.com}}',
      '- {objectName: d, secretPath: pki/issue/web, method: PUT}',
      '- {objectName: e, secretPath: pki/issue/web, method: PUT, secretArgs: {}}',
      '- {objectName: f, secretPath: pki/issue/api, method: PUT, secretArgs: {common_name: a.example.com}}',
      '- {objectName: g, secretPath: "secret/data/app?version=1"}',
      '- {objectName: h, secretPath: "secret/data/app?version=2"}',
      '- {objectName: i, secretPath: secret/data/app}',
      '- {objectName: j, secretPath: pki/issue/web, method: PUT, secretArgs: {common_name: a.example.com, alt_names: [x]}}',
      '- {objectName: k, secretPath: pki/issue/web, method: PUT, secretArgs: {common_name: a.example.com, ttl: 60}}',
      '- {objectName: l, secretPath: pki/issue/web, method: PUT, secretArgs: {common_name: a.example.com, ttl: "60"}}',
    ].join('\n'),
  )
  t.equal(planned.length, 12)
  t.strictSame(
    planned.map((p) => p.objectIndexes),
    Array.from({ length: 12 }, (_, i) => [i]),
  )
  t.strictSame(planned[6]!.request.query, [['version', '1']])
  t.strictSame(planned[7]!.request.query, [['version', '2']])
  t.strictSame(planned[4]!.request.body, {})
  t.equal(planned[3]!.request.body, undefined)
})

t.test('query order is significant, as written', async (t) => {
  const { planned } = plan(
    '- {objectName: a, secretPath: "x?a=1&b=2"}\n- {objectName: b, secretPath: "x?b=2&a=1"}\n- {objectName: c, secretPath: "/v1/x?a=1&b=2"}',
  )
  t.strictSame(
    planned.map((p) => p.objectIndexes),
    [[0, 2], [1]],
  )
})

t.test('encoding, key, mode and name do not split a request', async (t) => {
  const { planned } = plan(
    [
      '- {objectName: a, secretPath: secret/data/tls, secretKey: crt, encoding: base64, filePermission: 0400}',
      '- {objectName: b/c, secretPath: secret/data/tls, secretKey: key, encoding: hex}',
      '- {objectName: d, secretPath: secret/data/tls}',
    ].join('\n'),
  )
  t.equal(planned.length, 1)
  t.strictSame(planned[0]!.objectIndexes, [0, 1, 2])
})

t.test("the read consistency is the Mount's, and part of the key only when eventual", async (t) => {
  const objects = parseObjects('- {objectName: a, secretPath: secret/data/app}')
  const strong = planRequests(objects, undefined, 'strong')[0]!
  const eventual = planRequests(objects, undefined, 'eventual')[0]!
  t.equal(strong.request.consistency, 'strong')
  t.equal(eventual.request.consistency, 'eventual')
  t.not(strong.key, eventual.key, 'a strong read never shares an eventual one, nor its kept answer')
  t.equal(strong.key, requestKey(objects[0]!), 'strong: the key it always had (a handed-over entry is found again)')
  t.equal(planRequests(objects)[0]!.key, strong.key, 'strong unless the Mount says otherwise')
})

t.test('no objects, no requests', async (t) => {
  t.strictSame(planRequests([]), [])
})
