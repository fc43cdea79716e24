// The PKCS#12 writer: read back by OpenSSL with the password (key and certificates intact), modern
// algorithms, and the same bytes for the same inputs.
import { execFileSync } from 'node:child_process'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { writePkcs12 } from '../../../src/render/pkcs12.js'
import { selfSignedServerCert } from '../../support/tls.js'
import { tempDirFor } from '../../support/tmp.js'

const openssl = (args: string[]): string =>
  execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

t.test('OpenSSL reads the key and the chain back; the algorithms are modern; the bytes are stable', async (t) => {
  const dir = await tempDirFor(t)
  const { key: keyFile, cert: certFile } = selfSignedServerCert(dir, 'unit.example.test')
  const key = createPrivateKey(await readFile(keyFile))
  const cert = new X509Certificate(await readFile(certFile))
  const input = { key, chain: [cert], password: 'pw-ünicode-1', friendlyName: 'unit' }
  const p12 = writePkcs12(input)
  t.ok(writePkcs12(input).equals(p12), 'the same inputs give the same bytes')
  t.notOk(writePkcs12({ ...input, password: 'other' }).equals(p12), 'another password, other bytes')
  const file = join(dir, 'a.p12')
  await writeFile(file, p12)
  const details = execFileSync(
    'sh',
    ['-c', `openssl pkcs12 -in '${file}' -passin 'pass:${input.password}' -info -noout 2>&1`],
    { encoding: 'utf8' },
  )
  t.match(details, /MAC: sha256/, 'an HMAC-SHA256 MAC')
  t.match(details, /PBES2, PBKDF2, AES-256-CBC/, 'the key under PBES2, PBKDF2 and AES-256-CBC')
  const keyOut = openssl(['pkcs12', '-in', file, '-passin', `pass:${input.password}`, '-nocerts', '-nodes'])
  const back = createPrivateKey(keyOut)
  t.same(
    back.export({ format: 'der', type: 'pkcs8' }),
    key.export({ format: 'der', type: 'pkcs8' }),
    'the key comes back as it went in',
  )
  t.match(
    openssl(['pkcs12', '-in', file, '-passin', `pass:${input.password}`, '-nokeys']),
    /CN\s?=\s?unit\.example\.test/,
  )
  const empty = join(dir, 'e.p12')
  await writeFile(empty, writePkcs12({ ...input, password: '' }))
  t.match(openssl(['pkcs12', '-in', empty, '-passin', 'pass:', '-nokeys']), /unit\.example\.test/, 'an empty password')
})
