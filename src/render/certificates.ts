/**
 * `format: tls`: a certificate, its chain and its private key, from a PKI
 * issue response (certificate, issuing_ca, ca_chain, private_key) or a
 * PEM bundle stored in KV, split into the files TLS software expects:
 *
 *   tls.crt           the certificate matching the private key, then its issuers
 *                     in order up to (not including) a self-signed root
 *   tls.key           the private key
 *   ca.crt            the top of the chain (the self-signed root, or the highest
 *                     issuer present), then any other CA certificate found;
 *                     absent when the material holds no issuer at all
 *   tls-combined.pem  tls.key followed by tls.crt (HAProxy style; the driver's
 *                     kubernetes.io/tls sync splits it again)
 *
 * Every block is re-encoded from its DER bytes (64-column base64, "\n"), so an
 * unchanged certificate always gives identical files, whatever whitespace the
 * source had. Pure.
 *
 * The chain is checked the way a careful TLS library checks one, since the material is a tenant's:
 * RSA keys outside what real CAs use are refused before anything is computed with them, an issuer's
 * candidates are chosen by name and key identifiers before any signature is checked, and the
 * signature checks of one object (and, through RenderWork, of one Mount) are capped.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto'
import { ProviderError } from '../errors.js'
import {
  MAX_SIGNATURE_CHECKS_PER_OBJECT,
  RENDER_WORK,
  RENDER_WORK_PER_TURN,
  signatureCost,
  type RenderWork,
} from './work.js'

export const TLS_FILES = ['tls.crt', 'tls.key', 'ca.crt', 'tls-combined.pem'] as const
/**
 * PEM blocks one object's material may hold: parsing them is one render turn's worth of work at
 * most (an object is rendered without a turn in between), and a real bundle holds a key, its
 * certificate and a few issuers. 100 blocks once kept the event loop busy three turns long.
 */
export const MAX_PEM_BLOCKS = RENDER_WORK_PER_TURN / RENDER_WORK.certificate

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g
const KEY_TYPES: Record<string, 'pkcs8' | 'pkcs1' | 'sec1'> = {
  'PRIVATE KEY': 'pkcs8',
  'RSA PRIVATE KEY': 'pkcs1',
  'EC PRIVATE KEY': 'sec1',
}

interface PemBlock {
  label: string
  der: Buffer
}

export function pemEncode(label: string, der: Buffer): string {
  const b64 = der.toString('base64')
  let body = ''
  for (let i = 0; i < b64.length; i += 64) body += `${b64.slice(i, i + 64)}\n`
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`
}

function readBlocks(texts: readonly string[], fail: (m: string) => never): PemBlock[] {
  const blocks: PemBlock[] = []
  for (const text of texts) {
    for (const m of text.matchAll(PEM_BLOCK)) {
      const label = m[1]!
      const body = m[2]!
      if (label === 'ENCRYPTED PRIVATE KEY' || (label in KEY_TYPES && /Proc-Type:\s*4,ENCRYPTED/.test(body))) {
        fail('the private key is encrypted; only unencrypted keys can be written')
      }
      const b64 = body.replace(/\s+/g, '')
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) fail(`a ${label} block is not valid base64`)
      blocks.push({ label, der: Buffer.from(b64, 'base64') })
      if (blocks.length > MAX_PEM_BLOCKS) fail(`the material holds more than ${MAX_PEM_BLOCKS} PEM blocks`)
    }
  }
  return blocks
}

/**
 * The largest RSA public exponent accepted, and the largest modulus. Checking a signature costs
 * about the exponent's length times the square of the modulus's: OpenSSL accepts a 3072-bit key with
 * a 3070-bit exponent, whose every check took milliseconds. Real CAs use 65537; Go's crypto/x509
 * refuses exponents above 2^31-1, even ones and 1, and Go's crypto/tls moduli above 8192 bits.
 */
export const MAX_RSA_PUBLIC_EXPONENT = 2n ** 31n - 1n
export const MAX_RSA_MODULUS_BITS = 8192

/** Why `key` is refused (see MAX_RSA_PUBLIC_EXPONENT), or undefined for a key fit to be computed with. */
function keyProblem(key: KeyObject): string | undefined {
  if (key.asymmetricKeyType !== 'rsa' && key.asymmetricKeyType !== 'rsa-pss') return undefined
  const { modulusLength, publicExponent } = key.asymmetricKeyDetails ?? {}
  if (modulusLength !== undefined && modulusLength > MAX_RSA_MODULUS_BITS) {
    return `an RSA key of ${modulusLength} bits (at most ${MAX_RSA_MODULUS_BITS})`
  }
  if (publicExponent !== undefined) {
    if (publicExponent > MAX_RSA_PUBLIC_EXPONENT) {
      return `an RSA public exponent of ${publicExponent.toString(2).length} bits (at most 2^31-1, as Go's crypto/x509 accepts; real CAs use 65537)`
    }
    if (publicExponent <= 1n || publicExponent % 2n === 0n) {
      return 'an RSA public exponent that is even or below 3 (real CAs use 65537)'
    }
  }
  return undefined
}

/** A private key, its certificate and what is known of the chain, checked to belong together. */
export interface CertificateMaterial {
  key: KeyObject
  /** The key as it was given (its PEM label and DER), written back as it is. */
  keyLabel: string
  keyDer: Buffer
  /** The key's certificate, then its issuers up to (not including) a self-signed root. */
  served: X509Certificate[]
  /** The top of the chain (the self-signed root, or the highest issuer), then any other CA certificate. */
  caCerts: X509Certificate[]
  /** The root, when the material holds the self-signed root of the key's chain. */
  root: X509Certificate | undefined
}

/**
 * `texts`: every string of the material, in a deterministic order. `what`
 * names the object in errors, `format` the output; no key or certificate content is ever quoted.
 * `work` counts the parsing and every signature check against the Mount's budget and cap.
 */
export function certificateMaterial(
  texts: readonly string[],
  what: string,
  format: string,
  work?: RenderWork,
): CertificateMaterial {
  const fail = (message: string): never => {
    throw new ProviderError('OUTPUT_FAILED', `${what}: format "${format}": ${message}`)
  }
  const blocks = readBlocks(texts, fail)
  work?.charge(blocks.length * RENDER_WORK.certificate, what)

  const certs: X509Certificate[] = []
  const seen = new Set<string>()
  const keys: Array<{ block: PemBlock; key: KeyObject }> = []
  for (const block of blocks) {
    if (block.label === 'CERTIFICATE') {
      const id = block.der.toString('base64')
      if (seen.has(id)) continue
      seen.add(id)
      let cert: X509Certificate | undefined
      try {
        cert = new X509Certificate(block.der)
      } catch {
        fail(`certificate ${certs.length + 1} cannot be parsed`)
      }
      let problem: string | undefined
      try {
        problem = keyProblem(cert!.publicKey)
      } catch {
        fail(`certificate ${certs.length + 1} has a public key that cannot be read`)
      }
      if (problem) fail(`certificate ${certs.length + 1} has ${problem}; the material is refused`)
      certs.push(cert!)
    } else if (block.label in KEY_TYPES) {
      let key: KeyObject | undefined
      try {
        key = createPrivateKey({ key: block.der, format: 'der', type: KEY_TYPES[block.label]! })
      } catch {
        fail(`the ${block.label} block cannot be parsed`)
      }
      const problem = keyProblem(key!)
      if (problem) fail(`the private key has ${problem}; the material is refused`)
      keys.push({ block, key: key! })
    }
    // Other blocks (CSRs, public keys, CRLs) are not part of the split.
  }
  const distinctKeys = new Set(keys.map((k) => k.block.der.toString('base64')))
  if (distinctKeys.size === 0)
    fail('no private key found (expected a PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block)')
  if (distinctKeys.size > 1)
    fail(`${distinctKeys.size} different private keys found; the material must hold exactly one`)
  if (certs.length === 0) fail('no certificate found (expected a CERTIFICATE block)')
  const { block: keyBlock, key } = keys[0]!

  const matching = certs.filter((c) => c.checkPrivateKey(key))
  if (matching.length === 0) fail(`none of the ${certs.length} certificates matches the private key`)
  if (matching.length > 1) fail(`${matching.length} certificates match the private key; the material must hold one`)
  const leaf = matching[0]!

  let checks = 0
  /** One signature check, counted against the object's cap and the Mount's. */
  const signedBy = (child: X509Certificate, parent: X509Certificate): boolean => {
    const cost = signatureCost(parent.publicKey)
    checks += cost
    if (checks > MAX_SIGNATURE_CHECKS_PER_OBJECT) {
      fail(
        `checking the chain takes more than ${MAX_SIGNATURE_CHECKS_PER_OBJECT} signature checks (the most one object may; ` +
          'a check against a larger RSA key counts as several); does the material hold many CA certificates of one name without key identifiers?',
      )
    }
    work?.signatureCheck(cost, what, format)
    return child.verify(parent.publicKey)
  }
  const selfSignedMemo = new Map<X509Certificate, boolean>()
  const selfSigned = (c: X509Certificate): boolean => {
    let known = selfSignedMemo.get(c)
    // checkIssued compares names and key identifiers (OpenSSL's X509_check_issued), no signature.
    if (known === undefined) selfSignedMemo.set(c, (known = c.checkIssued(c) && signedBy(c, c)))
    return known
  }

  // Walk up from the leaf: each issuer must name and have signed the certificate below it. Only
  // certificates whose subject is the issuer's name, and whose key identifier is the one the
  // certificate names (when both have one), are candidates whose signature is checked.
  const chain: X509Certificate[] = [leaf]
  const onChain = new Set<X509Certificate>(chain)
  let current = leaf
  while (!selfSigned(current)) {
    const child = current
    const parent = certs.find((c) => !onChain.has(c) && child.checkIssued(c) && signedBy(child, c))
    if (!parent) break
    chain.push(parent)
    onChain.add(parent)
    current = parent
  }
  const top = chain[chain.length - 1]!
  const rootIncluded = chain.length > 1 && selfSigned(top)
  const served = rootIncluded ? chain.slice(0, -1) : chain

  const others = certs.filter((c) => !onChain.has(c))
  const strays = others.filter((c) => !c.ca)
  if (strays.length > 0) {
    fail(`${strays.length} certificate(s) are neither on the chain of the key's certificate nor CA certificates`)
  }
  let caCerts: X509Certificate[] = []
  if (chain.length > 1) caCerts = [top]
  else if (selfSigned(leaf)) caCerts = [leaf]
  caCerts = [...caCerts, ...others]

  return {
    key,
    keyLabel: keyBlock.label,
    keyDer: keyBlock.der,
    served,
    caCerts,
    root: rootIncluded ? top : undefined,
  }
}

/** The files of `format: tls` (see the header). */
export function splitCertificate(texts: readonly string[], what: string, work?: RenderWork): Array<[string, Buffer]> {
  const { keyLabel, keyDer, served, caCerts } = certificateMaterial(texts, what, 'tls', work)
  const crt = served.map((c) => pemEncode('CERTIFICATE', c.raw)).join('')
  const keyPem = pemEncode(keyLabel, keyDer)
  const files: Array<[string, Buffer]> = [
    ['tls.crt', Buffer.from(crt, 'utf8')],
    ['tls.key', Buffer.from(keyPem, 'utf8')],
  ]
  if (caCerts.length > 0) {
    files.push(['ca.crt', Buffer.from(caCerts.map((c) => pemEncode('CERTIFICATE', c.raw)).join(''), 'utf8')])
  }
  files.push(['tls-combined.pem', Buffer.from(keyPem + crt, 'utf8')])
  return files
}
