// node-vault with the transport as its request function: what each call states in node-vault's own
// per-call options reaches the transport, and nothing of the provider's environment does.
import t from 'tap'
import { PROVIDER_TENANT } from '../../../src/vault/transport/registry.js'
import { MAX_ERROR_BODY_BYTES, MAX_TOKEN_ANSWER_BYTES } from '../../../src/vault/transport/transport.js'
import { callOptions, createVaultClient, revokeSelf, sendRequest } from '../../../src/vault/vault-client.js'
import { FakeVault, loginAnswer } from '../../support/fake-vault.js'

t.test(
  "a call's timeout, cancellation, namespace and due time reach the transport; the tenant is the client's",
  async (t) => {
    const vault = new FakeVault().on(/./, () => ({ status: 200, body: { data: {} } }))
    const client = createVaultClient(vault, 'shop')
    const gone = new AbortController().signal
    await client.read('secret/data/app?version=2', callOptions(1_234, gone, 'team-a', undefined, { dueAt: 5_678 }))
    await sendRequest(client, 'PUT', 'pki/issue/web', { common_name: 'x' }, callOptions(99, gone, ''))
    const [read, put] = vault.calls
    t.match(read, { method: 'GET', path: 'secret/data/app?version=2', namespace: 'team-a', timeoutMs: 1_234 })
    t.equal(read!.dueAt, 5_678, "the Mount's deadline, which orders its namespace's waiting calls")
    t.equal(put!.dueAt, undefined, 'a call of no Mount states none')
    t.equal(read!.signal, gone)
    t.equal(read!.tenant, 'shop')
    t.equal(read!.maxResponseBytes, undefined, "a secret's answer is held to -max-vault-response-size")
    t.match(put, { method: 'PUT', path: 'pki/issue/web', body: { common_name: 'x' }, namespace: undefined })
  },
)

t.test("a call states its cap; only a health probe's client takes any status as an answer", async (t) => {
  // The route added last answers first.
  const vault = new FakeVault().on(/./, () => ({ status: 204, body: '' })).on(/login$/, () => loginAnswer('hvs.t'))
  const client = createVaultClient(vault, PROVIDER_TENANT)
  // Nobody can call these off (a signal of none: the CLI's, a probe's).
  const capped = callOptions(5, undefined, '', MAX_TOKEN_ANSWER_BYTES)
  await client.kubernetesLogin({ role: 'web', jwt: 'j', mount_point: 'k8s', requestOptions: capped })
  await revokeSelf(client, callOptions(5, undefined, 'admin', MAX_TOKEN_ANSWER_BYTES))
  // A Mount may name sys/health as its secret: its answer is held to Vault's statuses like any read.
  await client.read('sys/health?activecode=503', callOptions(5, undefined, ''))
  const probe = createVaultClient(vault, PROVIDER_TENANT, true)
  await probe.health({ standbyok: true, requestOptions: callOptions(5, undefined, '', MAX_ERROR_BODY_BYTES) })
  t.same(
    vault.calls.map((c) => [c.path, c.maxResponseBytes, c.anyStatus]),
    [
      ['auth/k8s/login', MAX_TOKEN_ANSWER_BYTES, false],
      ['auth/token/revoke-self', MAX_TOKEN_ANSWER_BYTES, false],
      ['sys/health?activecode=503', undefined, false],
      ['sys/health?standbyok=true', MAX_ERROR_BODY_BYTES, true],
    ],
  )
  t.same(vault.calls[0]!.body, { role: 'web', jwt: 'j' }, 'no option travels in the body')
  t.equal(vault.calls[1]!.token, 'hvs.t', "revoke-self with the token node-vault's login set")
  t.equal(vault.calls[1]!.namespace, 'admin')
})

t.test("the provider's own VAULT_TOKEN and VAULT_NAMESPACE never reach a call", async (t) => {
  const saved = { token: process.env.VAULT_TOKEN, namespace: process.env.VAULT_NAMESPACE }
  process.env.VAULT_TOKEN = 'hvs.the-providers-own-token'
  process.env.VAULT_NAMESPACE = 'providers-own'
  t.teardown(() => {
    for (const [name, value] of [
      ['VAULT_TOKEN', saved.token],
      ['VAULT_NAMESPACE', saved.namespace],
    ] as const) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  })
  const vault = new FakeVault().on(/./, () => ({ status: 200, body: {} }))
  const client = createVaultClient(vault, 'shop')
  await client.read('secret/data/app', callOptions(5, undefined, ''))
  await client.read('secret/data/app', callOptions(5, undefined, 'team-a'))
  t.same(
    vault.calls.map((c) => [c.token, c.namespace]),
    [
      [undefined, undefined],
      [undefined, 'team-a'],
    ],
  )
})
