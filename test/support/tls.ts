// Throw-away certificates for tests, made by the machine's openssl.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A self-signed CA certificate (PEM) with the given common name; its key is thrown away. */
export function selfSignedCaPem(commonName = 'test-ca'): string {
  const dir = mkdtempSync(join(tmpdir(), 'vcp-ca-'))
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        `/CN=${commonName}`,
        '-days',
        '1',
        '-keyout',
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
      ],
      { stdio: 'ignore' },
    )
    return readFileSync(join(dir, 'c.pem'), 'utf8')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * A self-signed server certificate for 127.0.0.1 (P-256, SAN IP:127.0.0.1), written into `dir`
 * as `<name>.key` and `<name>.crt`: a local HTTPS server the code under test can verify with it.
 */
export function selfSignedServerCert(dir: string, commonName: string, name = 'server'): { key: string; cert: string } {
  const key = join(dir, `${name}.key`)
  const cert = join(dir, `${name}.crt`)
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-days',
      '1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  )
  return { key, cert }
}
