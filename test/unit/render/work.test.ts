// The chain walk's bounds (certificates.ts) and a Mount's render work (work.ts, render.ts): RSA
// keys outside what CAs use refused, issuer candidates chosen by name and key identifiers before
// any signature check, signature checks capped per object and per Mount, the work budget, and the
// render stopping at its pace's word.
import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import { certificateMaterial, MAX_PEM_BLOCKS } from '../../../src/render/certificates.js'
import { renderObjects } from '../../../src/render/render.js'
import {
  MAX_RENDER_WORK,
  MAX_SIGNATURE_CHECKS_PER_OBJECT,
  RENDER_WORK,
  RENDER_WORK_PER_TURN,
  RenderWork,
  signatureCost,
} from '../../../src/render/work.js'
import type { SecretObject } from '../../../src/request/types.js'
import { parseObjects } from '../../../src/request/objects.js'
import { hostileBundle, rsaPublicKey } from '../../support/cert-builder.js'
import { thrown } from '../../support/thrown.js'

const WHAT = 'object "bundle" (GET secret/data/bundle)'
const normalKey = (): ReturnType<typeof rsaPublicKey> => rsaPublicKey(2048, 17)

t.test(
  'an RSA public exponent above 2^31-1 is refused, naming the object and the certificate (the key certificate is the first)',
  async (t) => {
    const b = hostileBundle({ chainLength: 1, decoys: 1, decoyKey: () => rsaPublicKey(3072, 40) })
    const err = thrown(() => certificateMaterial([b.pem], WHAT, 'pkcs12'), ProviderError)
    t.equal(err.code, 'OUTPUT_FAILED')
    t.match(
      err.message,
      /^object "bundle" \(GET secret\/data\/bundle\): format "pkcs12": certificate 2 has an RSA public exponent of 40 bits/,
    )
  },
)

t.test('an RSA modulus above 8192 bits is refused', async (t) => {
  const b = hostileBundle({ chainLength: 1, decoys: 1, decoyKey: () => rsaPublicKey(8200, 17) })
  const err = thrown(() => certificateMaterial([b.pem], WHAT, 'tls'), ProviderError)
  t.match(err.message, /certificate 2 has an RSA key of 8200 bits \(at most 8192\)/)
})

t.test('exponents 1 and 31 bits pass the key check; 65537 is what real chains use', async (t) => {
  const ok = hostileBundle({ chainLength: 2, decoys: 1, decoyKey: () => rsaPublicKey(2048, 31) })
  const m = certificateMaterial([ok.pem], WHAT, 'tls')
  t.equal(m.served.length, 3, 'the key certificate and its two issuers')
})

t.test('candidates are chosen by key identifiers before any signature check', async (t) => {
  // 24 decoys of the issuer's name: with key identifiers none of them is a candidate; without,
  // each is checked at every step and the object's cap stops the walk.
  const withIds = hostileBundle({ chainLength: 4, decoys: 24, decoyKey: normalKey, keyIds: true })
  const work = new RenderWork()
  const m = certificateMaterial([withIds.pem], WHAT, 'tls', work)
  t.equal(m.served.length, 5, 'the chain is found')
  // The key, its certificate, the chain and the decoys are parsed; what is left is signature checks.
  const checks = work.used - (2 + withIds.chainLength + withIds.decoys) * RENDER_WORK.certificate
  t.ok(checks <= withIds.chainLength + 1, `${checks} signature checks: one per link, no decoy checked`)

  const withoutIds = hostileBundle({ chainLength: 4, decoys: 24, decoyKey: normalKey })
  const err = thrown(() => certificateMaterial([withoutIds.pem], WHAT, 'tls'), ProviderError)
  t.equal(err.code, 'OUTPUT_FAILED')
  t.match(
    err.message,
    new RegExp(
      `^${WHAT.replace(/[()]/g, '\\$&')}: format "tls": checking the chain takes more than ${MAX_SIGNATURE_CHECKS_PER_OBJECT} signature checks`,
    ),
  )
})

t.test("the Mount's cap on signature checks spans its objects", async (t) => {
  const b = hostileBundle({ chainLength: 8, decoys: 0, decoyKey: normalKey })
  const work = new RenderWork(MAX_RENDER_WORK, 20)
  certificateMaterial([b.pem], WHAT, 'tls', work)
  const err = thrown(() => certificateMaterial([b.pem], 'object "second"', 'tls', work), ProviderError)
  t.equal(err.code, 'OUTPUT_FAILED')
  t.match(
    err.message,
    /^object "second": format "tls": the Mount's certificate chains take more than 20 signature checks/,
  )
})

t.test('a larger RSA key counts as several checks', async (t) => {
  t.equal(signatureCost(rsaPublicKey(2048, 17)), 1)
  t.equal(signatureCost(rsaPublicKey(4096, 17)), 4)
  t.equal(signatureCost(rsaPublicKey(8192, 17)), 16)
})

function objects(text: string): SecretObject[] {
  return parseObjects(text)
}

t.test('the work budget refuses the keystore that crosses it, naming it', async (t) => {
  const b = hostileBundle({ chainLength: 1, decoys: 0, decoyKey: normalKey })
  const n = Math.floor(MAX_RENDER_WORK / RENDER_WORK.keystore) + 2
  const objs = objects(
    Array.from({ length: n }, (_, i) => `- {objectName: k${i}, secretPath: secret/data/b, format: pkcs12}`).join('\n'),
  )
  const labels = objs.map((o) => `object "${o.objectName}"`)
  const work = new RenderWork()
  const err = await renderObjects(
    objs,
    objs.map(() => ({ data: { data: { bundle: b.pem } } })),
    0o644,
    labels,
    undefined,
    new Set(),
    { work },
  ).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(err instanceof ProviderError)
  t.match(err, { code: 'MOUNT_BUDGET_EXCEEDED', message: /^object "k\d+" takes the Mount past its render work budget/ })
  t.ok(work.exceeded, 'a refusal worth remembering')
})

t.test('one object holds at most 32 PEM blocks, refused before any is parsed', async (t) => {
  t.equal(MAX_PEM_BLOCKS * RENDER_WORK.certificate, RENDER_WORK_PER_TURN, "parsing them is one render turn's worth")
  const fits = hostileBundle({ chainLength: 2, decoys: MAX_PEM_BLOCKS - 4, decoyKey: normalKey, keyIds: true })
  const work = new RenderWork()
  t.equal(certificateMaterial([fits.pem], WHAT, 'tls', work).served.length, 3, `${MAX_PEM_BLOCKS} blocks are read`)
  const over = hostileBundle({ chainLength: 2, decoys: MAX_PEM_BLOCKS - 3, decoyKey: normalKey, keyIds: true })
  const fresh = new RenderWork()
  const err = thrown(() => certificateMaterial([over.pem], WHAT, 'tls', fresh), ProviderError)
  t.match(err, { code: 'OUTPUT_FAILED', message: /: format "tls": the material holds more than 32 PEM blocks$/ })
  t.equal(fresh.used, 0, 'nothing was parsed or counted')
})

t.test('certificates weigh what parsing them costs: bundles without any chain are refused by the budget', async (t) => {
  // A key, its certificate and 30 CA certificates nothing names: no signature is ever checked.
  const b = hostileBundle({ chainLength: 0, decoys: MAX_PEM_BLOCKS - 2, decoyKey: normalKey, keyIds: true })
  const perObject = RENDER_WORK.object + MAX_PEM_BLOCKS * RENDER_WORK.certificate
  const n = Math.floor(MAX_RENDER_WORK / perObject) + 1
  const objs = objects(
    Array.from({ length: n + 5 }, (_, i) => `- {objectName: b${i}, secretPath: secret/data/b, format: tls}`).join('\n'),
  )
  const work = new RenderWork()
  const err = await renderObjects(
    objs,
    objs.map(() => ({ data: { data: { bundle: b.pem } } })),
    0o644,
    objs.map((o) => `object "${o.objectName}"`),
    undefined,
    new Set(),
    { work },
  ).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(err instanceof ProviderError)
  t.match(err, {
    code: 'MOUNT_BUDGET_EXCEEDED',
    message: new RegExp(`^object "b${n - 1}" takes the Mount past its render work budget`),
  })
})

t.test('the render takes a turn after each keystore and stops when its pace says so', async (t) => {
  const b = hostileBundle({ chainLength: 1, decoys: 0, decoyKey: normalKey })
  const objs = objects(
    Array.from({ length: 5 }, (_, i) => `- {objectName: k${i}, secretPath: secret/data/b, format: pkcs12}`).join('\n'),
  )
  const labels = objs.map((o) => `object "${o.objectName}"`)
  const turns: string[] = []
  const bodies = objs.map(() => ({ data: { data: { bundle: b.pem } } }))
  const files = await renderObjects(objs, bodies, 0o644, labels, undefined, new Set(), {
    pace: {
      check: () => undefined,
      turn: (what) => {
        turns.push(what)
        return Promise.resolve()
      },
    },
  })
  t.equal(files.length, 5)
  t.same(
    turns,
    ['object "k1"', 'object "k2"', 'object "k3"', 'object "k4"'],
    'a turn before every keystore after the first',
  )

  const stopped = await renderObjects(objs, bodies, 0o644, labels, undefined, new Set(), {
    pace: {
      check: (what) => {
        if (what === 'object "k2"')
          throw new ProviderError('DEADLINE_EXCEEDED', `the Mount ran out of time before ${what}`)
      },
      turn: () => Promise.resolve(),
    },
  }).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.match(stopped, { code: 'DEADLINE_EXCEEDED', message: /object "k2"/ })
})
