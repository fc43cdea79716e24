// X.509 certificates built in the test process (asn1js and node:crypto), for material the openssl
// CLI makes slowly or not at all: hundreds of CA certificates sharing one name, with or without key
// identifiers, and RSA public keys with any exponent. A public key needs no private half to be
// checked against, so a "decoy" CA's key can be two random numbers.
import { createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'
import * as asn1 from 'asn1js'

const OID = {
  commonName: '2.5.4.3',
  rsaEncryption: '1.2.840.113549.1.1.1',
  sha256WithRsa: '1.2.840.113549.1.1.11',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
}

const oid = (id: string): asn1.ObjectIdentifier => new asn1.ObjectIdentifier({ value: id })
const der = (b: asn1.BaseBlock): Buffer => Buffer.from(b.toBER(false))
const parse = (b: Buffer): asn1.AsnType => asn1.fromBER(new Uint8Array(b)).result

function name(cn: string): asn1.Sequence {
  return new asn1.Sequence({
    value: [
      new asn1.Set({
        value: [new asn1.Sequence({ value: [oid(OID.commonName), new asn1.Utf8String({ value: cn })] })],
      }),
    ],
  })
}

function extension(id: string, critical: boolean, value: asn1.BaseBlock): asn1.Sequence {
  return new asn1.Sequence({
    value: [
      oid(id),
      ...(critical ? [new asn1.Boolean({ value: true })] : []),
      new asn1.OctetString({ valueHex: new Uint8Array(der(value)) }),
    ],
  })
}

function unsignedInteger(b: Buffer): asn1.Integer {
  // A leading zero keeps a number whose top bit is set positive.
  const bytes = b[0]! & 0x80 ? Buffer.concat([Buffer.alloc(1), b]) : b
  return new asn1.Integer({ valueHex: new Uint8Array(bytes) })
}

export interface CertSpec {
  subject: string
  issuer: string
  /** The certificate's key. */
  publicKey: KeyObject
  /** The issuer's private key (RSA or EC). */
  signer: KeyObject
  serial: number
  ca?: boolean
  /** Subject and authority key identifiers; none when absent. */
  ski?: Buffer
  aki?: Buffer
}

/** A certificate's DER, valid from an hour ago for two days. */
export function buildCert(s: CertSpec): Buffer {
  const rsa = s.signer.asymmetricKeyType === 'rsa'
  const sigAlg = new asn1.Sequence({
    value: rsa ? [oid(OID.sha256WithRsa), new asn1.Null()] : [oid(OID.ecdsaWithSha256)],
  })
  const now = Date.now()
  const exts: asn1.Sequence[] = []
  if (s.ca)
    exts.push(extension(OID.basicConstraints, true, new asn1.Sequence({ value: [new asn1.Boolean({ value: true })] })))
  if (s.ski)
    exts.push(extension(OID.subjectKeyIdentifier, false, new asn1.OctetString({ valueHex: new Uint8Array(s.ski) })))
  if (s.aki) {
    const keyId = new asn1.Primitive({ idBlock: { tagClass: 3, tagNumber: 0 }, valueHex: new Uint8Array(s.aki) })
    exts.push(extension(OID.authorityKeyIdentifier, false, new asn1.Sequence({ value: [keyId] })))
  }
  const tbs = new asn1.Sequence({
    value: [
      new asn1.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: [new asn1.Integer({ value: 2 })] }),
      new asn1.Integer({ value: s.serial }),
      sigAlg,
      name(s.issuer),
      new asn1.Sequence({
        value: [
          new asn1.UTCTime({ valueDate: new Date(now - 3600_000) }),
          new asn1.UTCTime({ valueDate: new Date(now + 2 * 86400_000) }),
        ],
      }),
      name(s.subject),
      parse(s.publicKey.export({ format: 'der', type: 'spki' })),
      ...(exts.length > 0
        ? [
            new asn1.Constructed({
              idBlock: { tagClass: 3, tagNumber: 3 },
              value: [new asn1.Sequence({ value: exts })],
            }),
          ]
        : []),
    ],
  })
  const tbsDer = der(tbs)
  const signature = sign('sha256', tbsDer, s.signer)
  return der(
    new asn1.Sequence({
      value: [parse(tbsDer), sigAlg, new asn1.BitString({ valueHex: new Uint8Array(signature), unusedBits: 0 })],
    }),
  )
}

export function pem(label: string, derBytes: Buffer): string {
  const b64 = derBytes.toString('base64').replace(/(.{64})/g, '$1\n')
  return `-----BEGIN ${label}-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END ${label}-----\n`
}

export const certPem = (derBytes: Buffer): string => pem('CERTIFICATE', derBytes)

/**
 * An RSA public key with modulus and exponent of the given sizes (random, both odd, top bits set):
 * nobody holds its private half, but checking a signature against it costs what its sizes say.
 */
export function rsaPublicKey(modulusBits: number, exponentBits: number): KeyObject {
  return rsaPublicKeyOf(randomOdd(modulusBits), randomOdd(exponentBits))
}

/** A random RSA public key with the exponent every real CA uses (65537), as Go's crypto/x509 accepts it. */
export function rsaPublicKeyF4(modulusBits: number): KeyObject {
  return rsaPublicKeyOf(randomOdd(modulusBits), Buffer.from([0x01, 0x00, 0x01]))
}

function randomOdd(bits: number): Buffer {
  const b = randomBytes(Math.ceil(bits / 8))
  const extra = b.length * 8 - bits
  b[0] = (b[0]! & (0xff >> extra)) | (0x80 >> extra)
  b[b.length - 1]! |= 1
  return b
}

function rsaPublicKeyOf(modulus: Buffer, exponent: Buffer): KeyObject {
  const rsaKey = new asn1.Sequence({ value: [unsignedInteger(modulus), unsignedInteger(exponent)] })
  const spki = new asn1.Sequence({
    value: [
      new asn1.Sequence({ value: [oid(OID.rsaEncryption), new asn1.Null()] }),
      new asn1.BitString({ valueHex: new Uint8Array(der(rsaKey)), unusedBits: 0 }),
    ],
  })
  return createPublicKey({ key: der(spki), format: 'der', type: 'spki' })
}

export interface KeyPair {
  publicKey: KeyObject
  privateKey: KeyObject
}

export function rsaKeyPair(bits = 2048): KeyPair {
  return generateKeyPairSync('rsa', { modulusLength: bits })
}

export function keyPem(k: KeyObject): string {
  return k.export({ format: 'pem', type: 'pkcs8' }).toString()
}

export interface HostileBundle {
  /** The key, its certificate, the chain and the decoys, as one PEM text. */
  pem: string
  chainLength: number
  decoys: number
}

/**
 * A key, its certificate and a chain of `chainLength` CA certificates that all bear one name
 * ("CN=ca") and no key identifiers, the decoys first: `decoys` more CA certificates of that name
 * whose keys are made by `decoyKey`. A walk that takes every certificate of the right name as a
 * candidate checks each decoy's signature at every step of the chain. Two RSA keys alternate
 * along the chain (each certificate is signed by the other), so no chain certificate is self-signed.
 */
export function hostileBundle(o: {
  chainLength: number
  decoys: number
  decoyKey: (i: number) => KeyObject
  /** Key identifiers on every certificate (decoys get ones nothing names). */
  keyIds?: boolean
  /**
   * The chain's RSA keys. A signature is checked against an RSA key only when it is as long as the
   * key's modulus, so decoys cost what their keys say only beside a chain of their size.
   */
  chainKeyBits?: number
}): HostileBundle {
  const leaf = rsaKeyPair()
  const pair = [rsaKeyPair(o.chainKeyBits), rsaKeyPair(o.chainKeyBits)] as const
  const ids = [randomBytes(20), randomBytes(20)] as const
  let serial = 1
  const certs: string[] = []
  for (let i = 0; i < o.decoys; i++) {
    certs.push(
      certPem(
        buildCert({
          subject: 'ca',
          issuer: 'ca',
          publicKey: o.decoyKey(i),
          signer: pair[0].privateKey,
          serial: serial++,
          ca: true,
          ...(o.keyIds ? { ski: randomBytes(20), aki: ids[0] } : {}),
        }),
      ),
    )
  }
  // Chain certificate i has the key pair[i % 2] and is signed by the other one.
  for (let i = 0; i < o.chainLength; i++) {
    certs.push(
      certPem(
        buildCert({
          subject: 'ca',
          issuer: 'ca',
          publicKey: pair[i % 2]!.publicKey,
          signer: pair[(i + 1) % 2]!.privateKey,
          serial: serial++,
          ca: true,
          ...(o.keyIds ? { ski: ids[i % 2], aki: ids[(i + 1) % 2] } : {}),
        }),
      ),
    )
  }
  const leafCert = certPem(
    buildCert({
      subject: 'leaf',
      issuer: 'ca',
      publicKey: leaf.publicKey,
      signer: pair[0].privateKey,
      serial,
      ...(o.keyIds ? { ski: randomBytes(20), aki: ids[0] } : {}),
    }),
  )
  return { pem: keyPem(leaf.privateKey) + leafCert + certs.join(''), chainLength: o.chainLength, decoys: o.decoys }
}
