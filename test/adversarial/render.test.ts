// Issue 43, part 1: rendering is bounded work that yields and stops. A tenant (namespace
// `tenant-a`) stores certificate material in its own KV path and asks for it as `format: pkcs12`
// or `tls`; the victim pod of namespace `default` mounts through the same daemon meanwhile, and
// the operations port's /health/live (what the kubelet's liveness probe asks) is timed too.
// Against the built daemon and a real OpenBao. The material is made in this process
// (test/support/cert-builder.ts): a decoy CA's key needs no private half, so it takes no key
// generation.
import { X509Certificate } from 'node:crypto'
import t from 'tap'
import { exclusiveSuite, newPod, type PodIdentitySpec } from '../support/adversary.js'
import { attackFigures } from '../support/adversary-figures.js'
import { finishSuite, startWorld, type World } from '../support/adversary-world.js'
import { hostileBundle, rsaPublicKey, rsaPublicKeyF4 } from '../support/cert-builder.js'
import { createJwtRole } from '../support/jwt.js'

t.setTimeout(30 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

/** The attacker's namespace; the victim's is `default`. */
const TENANT = 'tenant-a'
const TENANT_ROLE = 'tenant-a'

function tenantPod(name: string): PodIdentitySpec {
  return newPod(name, TENANT, 'app')
}

t.test('certificate material and keystores of one tenant', async (t) => {
  const w: World = await startWorld()
  t.teardown(() => w.stop())
  await createJwtRole(w.bao, 'jwt', TENANT_ROLE, {
    policies: ['app-read'],
    boundAudiences: ['vault'],
    boundSubject: `system:serviceaccount:${TENANT}:app`,
    ttl: '1h',
  })
  const put = async (path: string, data: unknown): Promise<void> => {
    const res = await w.bao.api('POST', `/v1/secret/data/${path}`, { data })
    t.equal(res.status, 200, `kv put ${path}`)
  }
  // A key, its certificate, a chain of 6 CA certificates and 24 decoy CAs before them (32 PEM
  // blocks, the most an object may hold), all named "CN=ca", without key identifiers; each decoy's
  // key is RSA-3072 with a 3070-bit public exponent (OpenSSL checks signatures against such keys,
  // each check taking milliseconds).
  const hostile = hostileBundle({
    chainLength: 6,
    decoys: 24,
    decoyKey: () => rsaPublicKey(3072, 3070),
    chainKeyBits: 3072,
  })
  await put('tenant-a/hostile', { bundle: hostile.pem })
  // An ordinary RSA-2048 key, its certificate and its CA.
  const ordinary = hostileBundle({ chainLength: 1, decoys: 0, decoyKey: () => rsaPublicKey(2048, 17) })
  await put('tenant-a/keystore', { bundle: ordinary.pem })

  const figures = attackFigures(w)
  await figures.start(t)
  const attack = figures.attack

  for (const format of ['pkcs12', 'tls'] as const) {
    await t.test(`a PEM bundle with 24 decoy CAs whose RSA exponents have 3070 bits, format ${format}`, async (t) => {
      const attributes = w.attrs(
        {
          roleName: TENANT_ROLE,
          objects: [{ objectName: 'bundle', secretPath: 'secret/data/tenant-a/hostile', format }],
        },
        tenantPod(`hostile-${format}`),
      )
      const out = await attack(
        t,
        {
          klass: '43.1',
          name: `decoy CAs with 3070-bit RSA exponents, format ${format}`,
          attempt: () => w.mount(attributes, 'null', 60_000),
          expect: { code: 'InvalidArgument', message: [/object "bundle"/, /RSA public exponent of 3070 bits/] },
          // Each attempt is refused at once: a few hundred of them within the rounds.
          minDurationMs: 2000,
        },
        () => w.mount(attributes, 'null', 60_000),
      )
      t.ok(out.answers.length > 1, `${out.answers.length} attempts`)
    })
  }

  // The same attack with keys any CA could have (e = 65537, which the exponent check lets through):
  // what bounds the work is that issuer candidates are matched by name and key identifiers before
  // any signature is checked, and the signature checks per object and per Mount are capped.
  // 14 decoy CAs of the issuer's name without key identifiers, RSA-4096 (each check counts 4), before
  // a 16-link chain of RSA-4096 keys: 32 PEM blocks, the most an object may hold.
  const decoysNoIds = hostileBundle({
    chainLength: 16,
    decoys: 14,
    decoyKey: () => rsaPublicKeyF4(4096),
    chainKeyBits: 4096,
  })
  await put('tenant-a/decoys-no-ids', { bundle: decoysNoIds.pem })
  for (const format of ['pkcs12', 'tls'] as const) {
    await t.test(
      `14 decoy CAs of the issuer's name with e=65537 RSA-4096 keys, no key identifiers, format ${format}`,
      async (t) => {
        const attributes = w.attrs(
          {
            roleName: TENANT_ROLE,
            objects: [{ objectName: 'bundle', secretPath: 'secret/data/tenant-a/decoys-no-ids', format }],
          },
          tenantPod(`decoys-no-ids-${format}`),
        )
        await attack(
          t,
          {
            klass: '43.1',
            name: `14 decoy CAs with e=65537 RSA-4096 keys and no key identifiers, 16-link chain, format ${format}`,
            attempt: () => w.mount(attributes, 'null', 60_000),
            // The object's cap: 14 decoys and a link, then the decoys again at the next link: refused.
            expect: { code: 'InvalidArgument', message: [/object "bundle"/, /more than 64 signature checks/] },
            minDurationMs: 2000,
          },
          () => w.mount(attributes, 'null', 60_000),
        )
      },
    )
  }

  // 14 decoy CAs of the issuer's name with e=65537 keys and key identifiers nothing names, before a
  // 16-link chain (RSA-2048) whose certificates name their issuers' key identifiers: the decoys are
  // never candidates, and the chain takes one signature check per link.
  const decoysWithIds = hostileBundle({
    chainLength: 16,
    decoys: 14,
    decoyKey: () => rsaPublicKeyF4(2048),
    keyIds: true,
  })
  await put('tenant-a/decoys-with-ids', { bundle: decoysWithIds.pem })
  await t.test('14 decoy CAs with other key identifiers and a 16-link chain: the chain, correct', async (t) => {
    const attributes = w.attrs(
      {
        roleName: TENANT_ROLE,
        objects: [{ objectName: 'bundle', secretPath: 'secret/data/tenant-a/decoys-with-ids', format: 'tls' }],
      },
      tenantPod('decoys-with-ids'),
    )
    const out = await attack(
      t,
      {
        klass: '43.1',
        name: '14 decoy CAs with e=65537 keys and other key identifiers, 16-link chain, format tls',
        attempt: () => w.mount(attributes, 'null', 60_000),
        expect: { code: 'OK', message: [] },
      },
      () => w.mount(attributes, 'null', 60_000),
    )
    const crt = out.answer.files.find((f) => f.path === 'bundle/tls.crt')
    const chain =
      (crt?.contents.toString() ?? '').match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []
    t.equal(chain.length, 17, "tls.crt: the key's certificate and its 16 issuers, no decoy")
    const certs = chain.map((p) => new X509Certificate(p))
    t.ok(
      certs.slice(0, -1).every((c, i) => c.verify(certs[i + 1]!.publicKey)),
      'each certificate of tls.crt is signed by the next',
    )
  })

  await t.test("70 objects of that bundle: the Mount's cap on signature checks", async (t) => {
    const attributes = w.attrs(
      {
        roleName: TENANT_ROLE,
        objects: Array.from({ length: 70 }, (_, i) => ({
          objectName: `c${i}`,
          secretPath: 'secret/data/tenant-a/decoys-with-ids',
          format: 'tls',
        })),
      },
      tenantPod('decoys-with-ids-70'),
    )
    await attack(
      t,
      {
        klass: '43.1',
        name: '70 objects of the 16-link chain with 14 decoys (other key identifiers), format tls',
        attempt: () => w.mount(attributes, 'null', 60_000),
        // 16 checks per object: the 65th object crosses the Mount's 1024.
        expect: { code: 'InvalidArgument', message: [/object "c64"/, /more than 1024 signature checks/] },
      },
      () => w.mount(attributes, 'null', 60_000),
    )
  })

  // No signature check at all: a key, its certificate and 30 CA certificates nothing names, as 140
  // objects. What bounds this is what parsing certificates weighs in the Mount's render work budget.
  const unrelated = hostileBundle({ chainLength: 0, decoys: 30, decoyKey: () => rsaPublicKeyF4(2048), keyIds: true })
  await put('tenant-a/unrelated-cas', { bundle: unrelated.pem })
  await t.test('140 objects of a key, its certificate and 30 unrelated CAs: the render work budget', async (t) => {
    const objects = Array.from({ length: 140 }, (_, i) => ({
      objectName: `b${i}`,
      secretPath: 'secret/data/tenant-a/unrelated-cas',
      format: 'tls',
    }))
    // A new pod every attempt: no remembered refusal spares the daemon the work.
    const perPod = Array.from({ length: 400 }, (_, i) =>
      w.attrs({ roleName: TENANT_ROLE, objects }, tenantPod(`unrelated-${i}`)),
    )
    await attack(
      t,
      {
        klass: '43.1',
        name: '140 tls objects of 32 PEM blocks each (no chain to check)',
        attempt: (i) => w.mount(perPod[i % perPod.length]!, 'null', 60_000),
        // 257 units an object: the 128th crosses the Mount's 32,768.
        expect: { code: 'ResourceExhausted', message: [/render work budget/, /object "b127"/] },
      },
      () => w.mount(w.attrs({ roleName: TENANT_ROLE, objects }, tenantPod('unrelated-cpu')), 'null', 60_000),
    )
  })

  const keystores = (n: number, prefix: string): Array<Record<string, string>> =>
    Array.from({ length: n }, (_, i) => ({
      objectName: `${prefix}${i}`,
      secretPath: 'secret/data/tenant-a/keystore',
      format: 'pkcs12',
    }))

  await t.test('999 ordinary pkcs12 objects over one secret, 4 pods of the tenant at once', async (t) => {
    // A new pod every attempt: no remembered refusal spares the daemon the work.
    const objects = keystores(999, 'k')
    const perPod = Array.from({ length: 400 }, (_, i) =>
      w.attrs({ roleName: TENANT_ROLE, objects }, tenantPod(`keystores-${i}`)),
    )
    await attack(
      t,
      {
        klass: '43.1',
        name: '999 pkcs12 objects over one secret, 4 pods at once',
        attempt: (i) => w.mount(perPod[i % perPod.length]!, 'null', 60_000),
        concurrency: 4,
        expect: { code: 'ResourceExhausted', message: [/render work budget/, /object "k\d+"/] },
      },
      () => w.mount(w.attrs({ roleName: TENANT_ROLE, objects }, tenantPod('keystores-cpu')), 'null', 60_000),
    )
  })

  await t.test('100 ordinary pkcs12 objects (within the budget), 4 pods of the tenant at once', async (t) => {
    const objects = keystores(100, 'p')
    const perPod = Array.from({ length: 400 }, (_, i) =>
      w.attrs({ roleName: TENANT_ROLE, objects }, tenantPod(`hundred-${i}`)),
    )
    const out = await attack(
      t,
      {
        klass: '43.1',
        name: '100 pkcs12 objects over one secret, 4 pods at once',
        attempt: (i) => w.mount(perPod[i % perPod.length]!, 'null', 60_000),
        concurrency: 4,
        expect: { code: 'OK', message: [] },
      },
      () => w.mount(w.attrs({ roleName: TENANT_ROLE, objects }, tenantPod('hundred-cpu')), 'null', 60_000),
    )
    t.equal(out.answer.files.length, 100, 'the attacker gets its 100 keystores, slowly')
  })

  t.comment(figures.table())
  await finishSuite(t, w, 'render')
})
