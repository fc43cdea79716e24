// Issue 9, class 1: TLS files a pod names (vaultCACertPath, vaultCADirectory, the client
// certificate and key) are read only if regular and within -max-tls-file-size, and with
// -tls-file-dirs only under those directories (after resolving symlinks). Against the real
// daemon and a real OpenBao serving TLS, while a victim pod mounts.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { exclusiveSuite } from '../support/adversary.js'
import { expectAttack, finishSuite, startWorld, type World } from '../support/adversary-world.js'
import { tempDirFor } from '../support/tmp.js'

t.setTimeout(20 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

const TLS_CAP = 1024 * 1024
const notRegular = (param: string): RegExp[] => [new RegExp(`parameter "${param}"`), /is not a regular file/]
const tooLarge = (param: string): RegExp[] => [
  new RegExp(`parameter "${param}"`),
  new RegExp(`larger than ${TLS_CAP} bytes \\(-max-tls-file-size\\)`),
]

t.test('TLS files named by a pod', async (t) => {
  const dir = await tempDirFor(t, 'vcp-adv-files-')
  const w: World = await startWorld({ bao: { tls: true } })
  t.teardown(() => w.stop())
  const caCopy = join(dir, 'ca.pem')
  copyFileSync(w.bao.caCertPath!, caCopy)
  const fifo = (name: string): string => {
    const p = join(dir, name)
    execFileSync('mkfifo', [p])
    return p
  }
  symlinkSync('/dev/zero', join(dir, 'zero-link.pem'))
  mkdirSync(join(dir, 'a-directory.pem'))
  // A regular file twice the cap, starting like a certificate.
  writeFileSync(
    join(dir, 'huge.pem'),
    Buffer.concat([Buffer.from('-----BEGIN CERTIFICATE-----\n'), Buffer.alloc(2 * TLS_CAP, 65)]),
  )
  // A directory of 1000 files of 8 KiB junk: 8 MiB, far past the cap, and no certificate.
  const bigDir = join(dir, 'many')
  mkdirSync(bigDir)
  for (let i = 0; i < 1000; i++)
    writeFileSync(join(bigDir, `c${String(i).padStart(4, '0')}.pem`), Buffer.alloc(8192, 66))
  const objects = [{ objectName: 'password', secretPath: 'secret/data/victim', secretKey: 'password' }]
  const tls = (p: Record<string, string>): string => w.attrs({ objects, ...p })

  const cases: Array<{ klass: string; name: string; params: () => Record<string, string>; expect: RegExp[] }> = [
    {
      klass: '1',
      name: 'vaultCACertPath=/dev/zero',
      params: () => ({ vaultCACertPath: '/dev/zero' }),
      expect: notRegular('vaultCACertPath'),
    },
    {
      klass: 'own',
      name: 'vaultCACertPath: a symlink to /dev/zero',
      params: () => ({ vaultCACertPath: join(dir, 'zero-link.pem') }),
      expect: notRegular('vaultCACertPath'),
    },
    {
      klass: '1',
      name: 'vaultCACertPath: a FIFO nobody writes to',
      params: () => ({ vaultCACertPath: fifo('ca-fifo.pem') }),
      expect: notRegular('vaultCACertPath'),
    },
    {
      klass: '1',
      name: 'vaultCACertPath: a directory',
      params: () => ({ vaultCACertPath: join(dir, 'a-directory.pem') }),
      expect: notRegular('vaultCACertPath'),
    },
    {
      klass: '1',
      name: 'vaultCACertPath: a 2 MiB regular file',
      params: () => ({ vaultCACertPath: join(dir, 'huge.pem') }),
      expect: tooLarge('vaultCACertPath'),
    },
    {
      klass: 'own',
      name: 'vaultCACertPath=/dev/urandom',
      params: () => ({ vaultCACertPath: '/dev/urandom' }),
      expect: notRegular('vaultCACertPath'),
    },
    {
      klass: '1',
      name: 'vaultTLSClientCertPath=/dev/zero',
      params: () => ({ vaultTLSClientCertPath: '/dev/zero', vaultTLSClientKeyPath: caCopy }),
      expect: notRegular('vaultTLSClientCertPath'),
    },
    {
      klass: '1',
      name: 'vaultTLSClientKeyPath: a FIFO',
      params: () => ({
        vaultTLSClientCertPath: caCopy,
        vaultTLSClientKeyPath: fifo('key-fifo.pem'),
      }),
      expect: notRegular('vaultTLSClientKeyPath'),
    },
    {
      klass: '1',
      name: 'vaultCADirectory=/proc',
      params: () => ({ vaultCADirectory: '/proc' }),
      expect: [/parameter "vaultCADirectory"/],
    },
    {
      klass: '1',
      name: 'vaultCADirectory=/proc/self',
      params: () => ({ vaultCADirectory: '/proc/self' }),
      expect: [/parameter "vaultCADirectory"/],
    },
    {
      klass: 'own',
      name: 'vaultCADirectory=/sys/kernel',
      params: () => ({ vaultCADirectory: '/sys/kernel' }),
      expect: [/parameter "vaultCADirectory"/],
    },
    {
      klass: 'own',
      name: 'vaultCADirectory=/dev',
      params: () => ({ vaultCADirectory: '/dev' }),
      expect: [/parameter "vaultCADirectory"/],
    },
    {
      klass: '1',
      name: 'vaultCADirectory: 1000 files of 8 KiB',
      params: () => ({ vaultCADirectory: bigDir }),
      expect: [/parameter "vaultCADirectory"/, /-max-tls-file-size/],
    },
  ]
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      await expectAttackOn(t, w, c.klass, c.name, () => tls(c.params()), c.expect)
    })
  }

  await t.test(
    'own: 12 FIFOs at once (more than libuv’s 4 file-system threads), then a TLS file is still read',
    async (t) => {
      await expectAttackOn(
        t,
        w,
        'own',
        '12 FIFO Mounts at once',
        () => tls({ vaultCACertPath: fifo('flood-fifo.pem') }),
        notRegular('vaultCACertPath'),
        { concurrency: 12 },
      )
      // A new connection key (another path to the same CA) needs a fresh file read: it must not queue behind FIFOs.
      const fresh = join(dir, 'ca-after-flood.pem')
      copyFileSync(w.bao.caCertPath!, fresh)
      const after = await w.mount(tls({ vaultCACertPath: fresh }), 'null', 10_000)
      t.equal(after.grpcCode, 'OK', `a legitimate Mount naming a CA file works after the flood: ${after.message}`)
    },
  )

  await t.test('own: 8 Mounts at once naming /dev/zero', async (t) => {
    await expectAttackOn(
      t,
      w,
      'own',
      '8 x vaultCACertPath=/dev/zero at once',
      () => tls({ vaultCACertPath: '/dev/zero' }),
      notRegular('vaultCACertPath'),
      {
        concurrency: 8,
      },
    )
  })

  await finishSuite(t, w, 'files')
})

t.test('-tls-file-dirs: pod-named TLS files only under the operator’s directories', async (t) => {
  const dir = await tempDirFor(t, 'vcp-adv-dirs-')
  const allowed = join(dir, 'allowed')
  const outside = join(dir, 'outside')
  mkdirSync(allowed)
  mkdirSync(outside)
  const w: World = await startWorld({ bao: { tls: true }, args: () => [`-tls-file-dirs=${allowed}`] })
  t.teardown(() => w.stop())
  copyFileSync(w.bao.caCertPath!, join(allowed, 'ca.pem'))
  copyFileSync(w.bao.caCertPath!, join(outside, 'ca.pem'))
  symlinkSync(join(outside, 'ca.pem'), join(allowed, 'link-out.pem'))
  // "allowed-evil" shares the prefix "allowed" but is another directory.
  mkdirSync(`${allowed}-evil`)
  copyFileSync(w.bao.caCertPath!, join(`${allowed}-evil`, 'ca.pem'))
  const objects = [{ objectName: 'password', secretPath: 'secret/data/victim', secretKey: 'password' }]
  const outsideMsg = [/parameter "vaultCACertPath"/, /-tls-file-dirs/]

  const cases: Array<{ name: string; path: string }> = [
    { name: 'a CA file outside the directories', path: join(outside, 'ca.pem') },
    { name: 'a symlink inside pointing outside', path: join(allowed, 'link-out.pem') },
    { name: 'a ../ path leaving the directory', path: `${allowed}/../outside/ca.pem` },
    { name: 'a sibling directory sharing the prefix', path: join(`${allowed}-evil`, 'ca.pem') },
    { name: '/dev/zero', path: '/dev/zero' },
  ]
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      await expectAttackOn(
        t,
        w,
        '1',
        `-tls-file-dirs set: ${c.name}`,
        () => w.attrs({ objects, vaultCACertPath: c.path }),
        outsideMsg,
      )
    })
  }
  await t.test('a file inside the directories works; the operator’s flag file is not restricted', async (t) => {
    const inside = await w.mount(w.attrs({ objects, vaultCACertPath: join(allowed, 'ca.pem') }, w.victimPod))
    t.equal(inside.grpcCode, 'OK', inside.message)
    // The victim itself uses -vault-tls-ca-cert (outside the directories) on every Mount.
    const victim = await w.victim.once()
    t.equal(victim.grpcCode, 'OK', victim.message)
  })
  await finishSuite(t, w, 'files-dirs')
})

async function expectAttackOn(
  t: Test,
  w: World,
  klass: string,
  name: string,
  attributes: () => string,
  message: RegExp[],
  extra: { concurrency?: number } = {},
): Promise<void> {
  // Built once: the attack's attempts are one pod's retries, and nothing slow runs in this
  // process (where the victim's latency is measured) while the attack is on.
  const attrs = attributes()
  await expectAttack(t, w, {
    klass,
    name,
    attempt: () => w.mount(attrs, 'null', 20_000),
    expect: { code: 'InvalidArgument', message },
    ...extra,
  })
}
