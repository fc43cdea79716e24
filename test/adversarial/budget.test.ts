// Issue 9, class 3 and variations: one Mount has one budget for everything it fetches and
// renders (-max-mount-bytes), the node one for all Mounts in flight (-max-node-mount-bytes),
// templates are bounded in output and in steps, and Vault bodies in size. Against the real
// daemon and a real OpenBao holding the large secrets, while a victim pod mounts.
import t, { type Test } from 'tap'
import { exclusiveSuite } from '../support/adversary.js'
import { expectAttack, finishSuite, startWorld } from '../support/adversary-world.js'
import { allowDefaultApp } from '../support/fixture.js'
import { startOpenBao } from '../support/openbao.js'

t.setTimeout(20 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

function objectsText(n: number, line: (i: number) => string): string {
  return Array.from({ length: n }, (_, i) => line(i)).join('\n')
}

t.test('Mount budgets', async (t) => {
  // The attacker's big secret lives in an OpenBao of its own: encoding a 6 MiB answer costs
  // OpenBao CPU, and the victim's reads must measure the provider, not a Vault both share.
  const bigVault = await startOpenBao()
  t.teardown(() => bigVault.stop())
  await allowDefaultApp(bigVault)
  const big = await bigVault.api('POST', '/v1/secret/data/three-megs', {
    data: { a: 'a'.repeat(3 * 1024 * 1024), b: 'b'.repeat(3 * 1024 * 1024) },
  })
  t.equal(big.status, 200, 'kv put three-megs')
  const w = await startWorld({ allow: [bigVault.addr] })
  t.teardown(() => w.stop())
  const put = async (path: string, data: unknown): Promise<void> => {
    const res = await w.bao.api('POST', `/v1/secret/data/${path}`, { data })
    t.equal(res.status, 200, `kv put ${path}`)
  }
  await put('t34k', { p: 'p'.repeat(34_000) })
  await put('twenty', { p: 'e'.repeat(20 * 1024) })
  await put('list', { l: Array.from({ length: 50 }, (_, i) => i) })

  // 999 templates, each 30 x 34 KB = 1.02 MB: under the per-template limit, 1 GB together.
  const templates = objectsText(
    999,
    (i) => `- objectName: t${i}\n  secretPath: secret/data/t34k\n  template: "${'{{p}}'.repeat(30)}"`,
  )
  const budget = [/-max-mount-bytes/, /object "t\d+"|"t\d+"/]
  const cases: Array<{
    klass: string
    name: string
    objects: string
    code: string
    message: RegExp[]
    concurrency?: number
    vaultAddress?: string
  }> = [
    {
      klass: '3',
      name: '999 templates of 1 MB each',
      objects: templates,
      code: 'ResourceExhausted',
      message: budget,
    },
    {
      klass: 'own',
      name: '6 pods at once, each with 999 templates of 1 MB',
      objects: templates,
      code: 'ResourceExhausted',
      message: [/-max-mount-bytes|-max-node-mount-bytes/],
      concurrency: 6,
    },
    {
      klass: 'own',
      name: '990 objects of 20 KiB each (19.3 MiB of files)',
      objects: objectsText(990, (i) => `- {objectName: o${i}, secretPath: secret/data/twenty, secretKey: p}`),
      code: 'ResourceExhausted',
      message: [/-max-mount-bytes/, /"o\d+"/],
    },
    {
      klass: 'own',
      name: 'a template of 5 nested sections over a 50-item list (312 million steps, no output)',
      objects: `- objectName: cpu\n  secretPath: secret/data/list\n  template: "${'{{#l}}'.repeat(5)}${'{{/l}}'.repeat(5)}"`,
      code: 'InvalidArgument',
      message: [/"cpu"/, /template/],
    },
    {
      klass: 'own',
      name: 'a real OpenBao answer of 6 MiB (over -max-vault-response-size)',
      objects: '- objectName: big\n  secretPath: secret/data/three-megs\n  secretKey: a',
      code: 'ResourceExhausted',
      message: [/-max-vault-response-size/, /"big"/],
      vaultAddress: bigVault.addr,
    },
  ]
  for (const c of cases) {
    await t.test(c.name, async (t: Test) => {
      const attributes = w.attrs({ objects: c.objects, ...(c.vaultAddress ? { vaultAddress: c.vaultAddress } : {}) })
      await expectAttack(t, w, {
        klass: c.klass,
        name: c.name,
        attempt: () => w.mount(attributes, 'null', 30_000),
        expect: { code: c.code, message: c.message },
        concurrency: c.concurrency ?? 1,
      })
    })
  }
  await t.test('999 templates of 1 MB, a new pod every attempt (no refusal to remember)', async (t: Test) => {
    // Pods are cheap for whoever may create them: each attempt comes from another pod, so no
    // per-pod memory of an earlier refusal applies and every attempt does the full work.
    const perPod = Array.from({ length: 200 }, () => w.attrs({ objects: templates }))
    await expectAttack(t, w, {
      klass: 'own',
      name: '999 templates of 1 MB, a new pod every attempt',
      attempt: (i) => w.mount(perPod[i % perPod.length]!, 'null', 30_000),
      expect: { code: 'ResourceExhausted', message: budget },
    })
  })
  await finishSuite(t, w, 'budget')
})
