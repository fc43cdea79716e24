// The DaemonSet's memory figures come from the daemon's measured RSS: idle after start-up,
// and the high-water mark after a burst of Mounts from many distinct pods (each its own
// Vault login and cached session). This test measures both again, prints them, and fails
// when the manifest no longer leaves the headroom its comment promises. The daemon runs as
// the image runs it: with the V8 heap flags of the Dockerfile's ENTRYPOINT.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { memoryFromStatus } from '../../bench/providers.js'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { Fixture } from '../support/fixture.js'
import { imageNodeFlags } from '../support/image.js'
import { parseYamlDocuments, type K8sObject } from '../support/manifests.js'

/** Mounts in the burst, and distinct pod identities among them. */
const BURST_MOUNTS = Number(process.env.VCP_RSS_BURST ?? 120)
const BURST_PODS = Math.ceil(BURST_MOUNTS / 2)
const CONCURRENCY = 8

interface Rss {
  rssMiB: number
  hwmMiB: number
}

async function rssOf(pid: number): Promise<Rss> {
  const m = memoryFromStatus(await readFile(`/proc/${pid}/status`, 'utf8'))
  return { rssMiB: m.rssKiB / 1024, hwmMiB: m.hwmKiB / 1024 }
}

/** Kubernetes quantity (Mi, Gi, M, plain bytes) in MiB. */
function quantityMiB(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|k|M|G)?$/.exec(q)
  if (!m) throw new Error(`unexpected quantity ${q}`)
  const n = Number(m[1])
  const unit = m[2] ?? ''
  const bytes: Record<string, number> = {
    '': 1,
    Ki: 1024,
    Mi: 1024 ** 2,
    Gi: 1024 ** 3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
  }
  return (n * bytes[unit]!) / 1024 ** 2
}

t.test('memory request and limit cover the measured RSS', async (t) => {
  const text = await readFile(join(PACKAGE_ROOT, 'daemonset', 'base', 'daemonset.yaml'), 'utf8')
  const ds = parseYamlDocuments(text, 'daemonset.yaml').find((o: K8sObject) => o.kind === 'DaemonSet')!
  const spec = (ds.spec as any).template.spec
  const provider = spec.containers.find((c: { name: string }) => c.name === 'provider')
  const requestMiB = quantityMiB(provider.resources.requests.memory)
  const limitMiB = quantityMiB(provider.resources.limits.memory)

  const nodeArgs = imageNodeFlags()
  t.ok(
    nodeArgs.some((f) => f.startsWith('--max-old-space-size=')),
    `the image's heap flags: ${nodeArgs.join(' ')}`,
  )
  const fx = await Fixture.start({ logLevel: 'info', nodeArgs })
  t.teardown(() => fx.stop())
  await fx.kvPut('rss/app', { password: 'p'.repeat(64), user: 'app', cert: 'c'.repeat(4096) })

  // Idle: after start-up and one Mount (which loads the lazily imported Vault client code).
  const warm = await fx.mount({
    params: { objects: [{ objectName: 'user', secretPath: 'secret/data/rss/app', secretKey: 'user' }] },
  })
  t.ok(warm.result.ok, warm.result.message)
  await new Promise((r) => setTimeout(r, 2000))
  const idle = await rssOf(fx.provider.pid)

  const objects = [
    { objectName: 'password', secretPath: 'secret/data/rss/app', secretKey: 'password' },
    { objectName: 'user', secretPath: 'secret/data/rss/app', secretKey: 'user' },
    { objectName: 'cert.pem', secretPath: 'secret/data/rss/app', secretKey: 'cert' },
    { objectName: 'all.json', secretPath: 'secret/data/rss/app' },
  ]
  let next = 0
  let failed = 0
  const started = Date.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (;;) {
        const i = next++
        if (i >= BURST_MOUNTS) return
        const { result } = await fx.mount({ pod: { name: `app-${i % BURST_PODS}` }, params: { objects } })
        if (!result.ok) failed++
      }
    }),
  )
  const burstMs = Date.now() - started
  const after = await rssOf(fx.provider.pid)
  t.equal(failed, 0, 'every Mount of the burst succeeded')

  t.comment(
    `RSS idle ${idle.rssMiB.toFixed(1)} MiB; after ${BURST_MOUNTS} Mounts from ${BURST_PODS} pods ` +
      `(${CONCURRENCY} at a time, ${burstMs} ms): VmRSS ${after.rssMiB.toFixed(1)} MiB, VmHWM ${after.hwmMiB.toFixed(1)} MiB; ` +
      `manifest request ${requestMiB} MiB, limit ${limitMiB} MiB (Node ${process.versions.node}, ${nodeArgs.join(' ')})`,
  )
  t.ok(requestMiB >= idle.rssMiB, `request (${requestMiB} MiB) covers the idle RSS (${idle.rssMiB.toFixed(1)} MiB)`)
  t.ok(
    requestMiB >= after.hwmMiB,
    `request (${requestMiB} MiB) covers the burst's high-water mark (${after.hwmMiB.toFixed(1)} MiB)`,
  )
  t.ok(
    limitMiB >= 2 * after.hwmMiB,
    `limit (${limitMiB} MiB) is at least twice the burst high-water mark (${after.hwmMiB.toFixed(1)} MiB)`,
  )
})
