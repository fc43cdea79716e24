// Vault namespaces against a real OpenBao (namespaces since 2.3, in dev mode too): the login in one
// namespace (vaultAuthNamespace), the reads in another (vaultNamespace), an object's own namespace, and
// a refusal that names the namespace. Through the driver's own client.
import t from 'tap'
import { allowDefaultApp, Fixture } from '../support/fixture.js'
import { inNamespace, mustSucceed, startOpenBao } from '../support/openbao.js'
import { startProvider } from '../support/provider.js'

t.test('namespaces: login in team-a, reads in its children, never in a sibling', async (t) => {
  const bao = await startOpenBao()
  const provider = await startProvider({ args: [`-vault-addr=${bao.addr}`] })
  const fx = Fixture.attach(bao, provider)
  t.teardown(() => fx.stop())

  mustSucceed('create team-a', await bao.api('POST', '/v1/sys/namespaces/team-a', {}))
  mustSucceed('create team-b', await bao.api('POST', '/v1/sys/namespaces/team-b', {}))
  mustSucceed('create team-a/apps', await bao.api('POST', '/v1/sys/namespaces/apps', {}, { namespace: 'team-a' }))
  // The role lives in team-a; its policy there reaches its own KV and its child's.
  await allowDefaultApp(
    inNamespace(bao, 'team-a'),
    'path "secret/data/*" { capabilities = ["read"] }\npath "apps/secret/data/*" { capabilities = ["read"] }',
  )
  for (const [ns, value] of [
    ['team-a', 'value-in-team-a'],
    ['team-a/apps', 'value-in-apps'],
    ['team-b', 'value-in-team-b'],
  ] as const) {
    await inNamespace(bao, ns).enableSecrets('kv', 'secret', { version: '2' })
    mustSucceed(`put in ${ns}`, await bao.api('POST', '/v1/secret/data/app', { data: { v: value } }, { namespace: ns }))
  }

  const params = { vaultAuthNamespace: 'team-a', vaultNamespace: 'team-a/apps' }
  const both = await fx.mount({
    params: {
      ...params,
      objects: [
        { objectName: 'apps', secretPath: 'secret/data/app', secretKey: 'v' },
        { objectName: 'own', secretPath: 'secret/data/app', secretKey: 'v', namespace: 'team-a' },
      ],
    },
  })
  t.ok(both.result.ok, both.result.message)
  t.equal(both.files.get('apps')?.bytes.toString(), 'value-in-apps', 'vaultNamespace: read in team-a/apps')
  t.equal(
    both.files.get('own')?.bytes.toString(),
    'value-in-team-a',
    "the object's namespace: the same path, its own value",
  )

  const withoutAuthNs = await fx.mount({
    params: { vaultNamespace: 'team-a/apps', objects: [{ objectName: 'x', secretPath: 'secret/data/app' }] },
  })
  t.notOk(withoutAuthNs.result.ok, 'without vaultAuthNamespace the login is in team-a/apps, where no jwt auth is')
  t.match(withoutAuthNs.result.message, /login to Vault at .* in namespace "team-a\/apps"/)

  const sibling = await fx.mount({
    params: {
      ...params,
      objects: [{ objectName: 'b', secretPath: 'secret/data/app', secretKey: 'v', namespace: 'team-b' }],
    },
  })
  t.notOk(sibling.result.ok, "team-a's token does not read in team-b")
  t.match(
    sibling.result.message,
    /GET secret\/data\/app in namespace "team-b" .*403/,
    'the refusal names the namespace',
  )
  t.notMatch(sibling.result.message, /value-in/)
})
