import { execFileSync } from 'node:child_process'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import { splitCertificate } from '../../../src/render/certificates.js'
import { thrown } from '../../support/thrown.js'

const WHAT = 'object "web" (GET secret/data/web)'

/** A root, an intermediate and two leaves made by the openssl CLI. */
function makePki(dir: string): Record<string, string> {
  const ssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  }
  writeFileSync(join(dir, 'ca.ext'), 'basicConstraints=critical,CA:true\nkeyUsage=critical,keyCertSign,cRLSign\n')
  writeFileSync(join(dir, 'leaf.ext'), 'basicConstraints=critical,CA:false\nsubjectAltName=DNS:web.example.test\n')
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'root.key',
    '-out',
    'root.crt',
    '-subj',
    '/CN=Root',
    '-days',
    '2',
    '-addext',
    'basicConstraints=critical,CA:true',
  )
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'root2.key',
    '-out',
    'root2.crt',
    '-subj',
    '/CN=Next Root',
    '-days',
    '2',
    '-addext',
    'basicConstraints=critical,CA:true',
  )
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'int.key', '-out', 'int.csr', '-subj', '/CN=Intermediate')
  ssl(
    'x509',
    '-req',
    '-in',
    'int.csr',
    '-CA',
    'root.crt',
    '-CAkey',
    'root.key',
    '-CAcreateserial',
    '-out',
    'int.crt',
    '-days',
    '2',
    '-extfile',
    'ca.ext',
  )
  ssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'leaf.key',
    '-out',
    'leaf.csr',
    '-subj',
    '/CN=web.example.test',
  )
  ssl(
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'int.crt',
    '-CAkey',
    'int.key',
    '-CAcreateserial',
    '-out',
    'leaf.crt',
    '-days',
    '1',
    '-extfile',
    'leaf.ext',
  )
  ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'other.key',
    '-out',
    'other.csr',
    '-subj',
    '/CN=other.example.test',
  )
  ssl(
    'x509',
    '-req',
    '-in',
    'other.csr',
    '-CA',
    'int.crt',
    '-CAkey',
    'int.key',
    '-CAcreateserial',
    '-out',
    'other.crt',
    '-days',
    '1',
    '-extfile',
    'leaf.ext',
  )
  ssl('pkey', '-in', 'leaf.key', '-out', 'leaf.enc.key', '-aes256', '-passout', 'pass:pw')
  const out: Record<string, string> = {}
  for (const f of [
    'root2.crt',
    'root.crt',
    'int.crt',
    'leaf.crt',
    'leaf.key',
    'other.crt',
    'other.key',
    'root.key',
    'leaf.enc.key',
  ]) {
    out[f] = readFileSync(join(dir, f), 'utf8')
  }
  return out
}

function certs(pem: string): X509Certificate[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/g)].map(
    (m) => new X509Certificate(m[0]),
  )
}

t.test('certificate split', async (t) => {
  const p = makePki(t.testdir({}))

  t.test('a shuffled KV bundle: leaf first then chain, key, root as CA, combined', async (t) => {
    // Root, then key, then leaf, then intermediate, with CRLF and extra whitespace.
    const bundle = `${p['root.crt']}\r\n${p['leaf.key']}\n\n${p['leaf.crt']!.replace(/\n/g, '\r\n')}${p['int.crt']}`
    const files = new Map(splitCertificate([bundle], WHAT))
    t.strictSame([...files.keys()], ['tls.crt', 'tls.key', 'ca.crt', 'tls-combined.pem'])
    const crt = certs(files.get('tls.crt')!.toString())
    t.strictSame(
      crt.map((c) => c.subject),
      ['CN=web.example.test', 'CN=Intermediate'],
      'leaf, then intermediate; no root',
    )
    const [ca] = certs(files.get('ca.crt')!.toString())
    t.equal(ca!.subject, 'CN=Root')
    t.ok(crt[0]!.verify(crt[1]!.publicKey) && crt[1]!.verify(ca!.publicKey), 'the chain verifies against ca.crt')
    const key = createPrivateKey(files.get('tls.key')!)
    t.ok(crt[0]!.checkPrivateKey(key), 'tls.key matches tls.crt')
    t.equal(
      files.get('tls-combined.pem')!.toString(),
      files.get('tls.key')!.toString() + files.get('tls.crt')!.toString(),
    )
    t.match(files.get('tls.crt')!.toString(), /^[A-Za-z0-9+/=\n -]+$/, 'normalised: no CR')
  })

  t.test('PKI-shaped material (several strings, duplicates) gives the same bytes as the bundle', async (t) => {
    const pki = [p['int.crt']!, p['root.crt']!, p['leaf.crt']!, p['int.crt']!, p['leaf.key']!, 'rsa', '1a:2b']
    const a = splitCertificate(pki, WHAT)
    const b = splitCertificate([p['leaf.key']! + p['leaf.crt']! + p['int.crt']! + p['root.crt']!], WHAT)
    t.strictSame(a, b)
  })

  t.test('without a root, ca.crt is the highest issuer present; without an issuer there is no ca.crt', async (t) => {
    const noRoot = new Map(splitCertificate([p['leaf.crt']! + p['int.crt']! + p['leaf.key']!], WHAT))
    t.strictSame(
      certs(noRoot.get('tls.crt')!.toString()).map((c) => c.subject),
      ['CN=web.example.test', 'CN=Intermediate'],
    )
    t.equal(certs(noRoot.get('ca.crt')!.toString())[0]!.subject, 'CN=Intermediate')
    const leafOnly = new Map(splitCertificate([p['leaf.crt']! + p['leaf.key']!], WHAT))
    t.strictSame([...leafOnly.keys()], ['tls.crt', 'tls.key', 'tls-combined.pem'])
    const selfSigned = new Map(splitCertificate([p['root.crt']! + p['root.key']!], WHAT))
    t.equal(
      selfSigned.get('ca.crt')!.toString(),
      selfSigned.get('tls.crt')!.toString(),
      'a self-signed certificate is its own CA',
    )
  })

  t.test('other CA certificates (a trust bundle during CA rollover) follow the chain top in ca.crt', async (t) => {
    const files = new Map(
      splitCertificate([p['root2.crt']! + p['leaf.crt']! + p['leaf.key']! + p['int.crt']! + p['root.crt']!], WHAT),
    )
    t.strictSame(
      certs(files.get('ca.crt')!.toString()).map((c) => c.subject),
      ['CN=Root', 'CN=Next Root'],
    )
    t.strictSame(
      certs(files.get('tls.crt')!.toString()).map((c) => c.subject),
      ['CN=web.example.test', 'CN=Intermediate'],
    )
  })

  t.test('refusals name the object and the problem, never key material', async (t) => {
    const bad = (texts: string[]): ProviderError => thrown(() => splitCertificate(texts, WHAT), ProviderError)
    const cases: Array<[string[], RegExp]> = [
      [[p['leaf.crt']!], /no private key found/],
      [[p['leaf.key']!], /no certificate found/],
      [[p['leaf.crt']! + p['other.key']!], /none of the 1 certificates matches the private key/],
      [[p['leaf.crt']! + p['leaf.key']! + p['other.key']!], /2 different private keys found/],
      [[p['leaf.crt']! + p['leaf.key']! + p['other.crt']!], /1 certificate\(s\) are neither on the chain/],
      [[p['leaf.crt']! + p['leaf.enc.key']!], /the private key is encrypted/],
      [['-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n' + p['leaf.key']!], /not valid base64/],
      [
        ['-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' + p['leaf.key']!],
        /certificate 1 cannot be parsed/,
      ],
    ]
    const keyLine = p['leaf.key']!.split('\n')[1]!
    for (const [texts, expected] of cases) {
      const e = bad(texts)
      t.equal(e.code, 'OUTPUT_FAILED')
      t.match(e.message, /^object "web" \(GET secret\/data\/web\): format "tls": /)
      t.match(e.message, expected)
      t.notMatch(e.message, keyLine.slice(0, 20))
    }
  })
})
