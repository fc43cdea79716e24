/**
 * `format: pkcs12`: a private key, its certificate and the chain as one PKCS#12 file (RFC 7292), the
 * keystore Java and .NET applications read. Node's crypto has no PKCS#12 writer: the structures are
 * encoded with asn1js, the cryptography is Node's.
 *
 * Modern algorithms, as OpenSSL 3 and Java (since 8u301) write and read them: the key is encrypted
 * with PBES2 (PBKDF2 with HMAC-SHA256, AES-256-CBC), the file is authenticated with an HMAC-SHA256
 * MAC; the certificates are not secret and are stored as they are.
 *
 * Deterministic: the salts and the IV are derived from the key, the certificates and the password, so
 * an unchanged certificate gives a byte-identical file (and object version) on every Mount, and a
 * changed one fresh values. Pure.
 */
import { createCipheriv, createHash, createHmac, pbkdf2Sync, type KeyObject, type X509Certificate } from 'node:crypto'
import * as asn1 from 'asn1js'

/** PBKDF2 and MAC iterations: OpenSSL 3's default. */
export const PKCS12_ITERATIONS = 2048

const OID = {
  data: '1.2.840.113549.1.7.1',
  pkcs8ShroudedKeyBag: '1.2.840.113549.1.12.10.1.2',
  certBag: '1.2.840.113549.1.12.10.1.3',
  x509Certificate: '1.2.840.113549.1.9.22.1',
  friendlyName: '1.2.840.113549.1.9.20',
  localKeyId: '1.2.840.113549.1.9.21',
  pbes2: '1.2.840.113549.1.5.13',
  pbkdf2: '1.2.840.113549.1.5.12',
  hmacWithSha256: '1.2.840.113549.2.9',
  aes256Cbc: '2.16.840.1.101.3.4.1.42',
  sha256: '2.16.840.1.101.3.4.2.1',
}

export interface Pkcs12Input {
  key: KeyObject
  /** The key's certificate first, then its issuers. */
  chain: readonly X509Certificate[]
  password: string
  /** The entry's name (its alias in Java's keytool). */
  friendlyName: string
}

const oid = (id: string): asn1.ObjectIdentifier => new asn1.ObjectIdentifier({ value: id })
const octets = (b: Buffer): asn1.OctetString => new asn1.OctetString({ valueHex: new Uint8Array(b) })
const der = (value: asn1.BaseBlock): Buffer => Buffer.from(value.toBER(false))
const explicit0 = (value: asn1.BaseBlock): asn1.Constructed =>
  new asn1.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: [value] })
const algorithm = (id: string, params: asn1.BaseBlock): asn1.Sequence => new asn1.Sequence({ value: [oid(id), params] })

/** A ContentInfo of type data holding `content`'s DER. */
function dataContent(content: asn1.BaseBlock): asn1.Sequence {
  return new asn1.Sequence({ value: [oid(OID.data), explicit0(octets(der(content)))] })
}

function attributes(localKeyId: Buffer | undefined, friendlyName: string | undefined): asn1.Set {
  const attrs: asn1.Sequence[] = []
  if (friendlyName !== undefined) {
    attrs.push(
      new asn1.Sequence({
        value: [oid(OID.friendlyName), new asn1.Set({ value: [new asn1.BmpString({ value: friendlyName })] })],
      }),
    )
  }
  if (localKeyId !== undefined) {
    attrs.push(new asn1.Sequence({ value: [oid(OID.localKeyId), new asn1.Set({ value: [octets(localKeyId)] })] }))
  }
  return new asn1.Set({ value: attrs })
}

function safeBag(bagId: string, value: asn1.BaseBlock, attrs: asn1.Set | undefined): asn1.Sequence {
  return new asn1.Sequence({ value: [oid(bagId), explicit0(value), ...(attrs ? [attrs] : [])] })
}

/** RFC 7292 appendix B.2: the key the MAC is computed with (ID 3), with SHA-256. */
function pkcs12MacKey(password: string, salt: Buffer, iterations: number): Buffer {
  const u = 32
  const v = 64
  // The password as a BMPString with its two-byte terminator (an empty password is the terminator alone).
  const pw = Buffer.concat([Buffer.from(password, 'utf16le').swap16(), Buffer.alloc(2)])
  const fill = (src: Buffer): Buffer => {
    if (src.length === 0) return src
    const out = Buffer.alloc(v * Math.ceil(src.length / v))
    for (let i = 0; i < out.length; i++) out[i] = src[i % src.length]!
    return out
  }
  const d = Buffer.alloc(v, 3)
  let a = Buffer.concat([d, fill(salt), fill(pw)])
  for (let i = 0; i < iterations; i++) a = createHash('sha256').update(a).digest()
  if (a.length !== u) throw new Error('unexpected digest length')
  return a
}

/** The PKCS#12 file's bytes. */
export function writePkcs12(input: Pkcs12Input): Buffer {
  const [leaf] = input.chain
  if (leaf === undefined) throw new Error('a PKCS#12 file needs the key certificate')
  const keyDer = input.key.export({ format: 'der', type: 'pkcs8' })
  // Derived, not random: the same inputs give the same file (see the header).
  const seed = createHash('sha256')
    .update(keyDer)
    .update(Buffer.concat(input.chain.map((c) => c.raw)))
    .update(input.password, 'utf8')
    .digest()
  const derive = (label: string, length: number): Buffer =>
    createHmac('sha256', seed).update(label).digest().subarray(0, length)
  const localKeyId = createHash('sha1').update(leaf.raw).digest()

  // The key: PBES2 with PBKDF2-HMAC-SHA256 and AES-256-CBC.
  const keySalt = derive('key salt', 16)
  const iv = derive('key iv', 16)
  const aesKey = pbkdf2Sync(Buffer.from(input.password, 'utf8'), keySalt, PKCS12_ITERATIONS, 32, 'sha256')
  const cipher = createCipheriv('aes-256-cbc', aesKey, iv)
  const encryptedKey = Buffer.concat([cipher.update(keyDer), cipher.final()])
  const pbes2 = algorithm(
    OID.pbes2,
    new asn1.Sequence({
      value: [
        algorithm(
          OID.pbkdf2,
          new asn1.Sequence({
            value: [
              octets(keySalt),
              new asn1.Integer({ value: PKCS12_ITERATIONS }),
              algorithm(OID.hmacWithSha256, new asn1.Null()),
            ],
          }),
        ),
        algorithm(OID.aes256Cbc, octets(iv)),
      ],
    }),
  )
  const keyBag = safeBag(
    OID.pkcs8ShroudedKeyBag,
    new asn1.Sequence({ value: [pbes2, octets(encryptedKey)] }),
    attributes(localKeyId, input.friendlyName),
  )
  const certBags = input.chain.map((cert, i) =>
    safeBag(
      OID.certBag,
      new asn1.Sequence({ value: [oid(OID.x509Certificate), explicit0(octets(cert.raw))] }),
      i === 0 ? attributes(localKeyId, input.friendlyName) : undefined,
    ),
  )
  const authSafe = new asn1.Sequence({
    value: [dataContent(new asn1.Sequence({ value: certBags })), dataContent(new asn1.Sequence({ value: [keyBag] }))],
  })
  const authSafeDer = der(authSafe)

  // The MAC over the AuthenticatedSafe: HMAC-SHA256 with the PKCS#12 key derivation.
  const macSalt = derive('mac salt', 16)
  const mac = createHmac('sha256', pkcs12MacKey(input.password, macSalt, PKCS12_ITERATIONS))
    .update(authSafeDer)
    .digest()
  const pfx = new asn1.Sequence({
    value: [
      new asn1.Integer({ value: 3 }),
      new asn1.Sequence({ value: [oid(OID.data), explicit0(octets(authSafeDer))] }),
      new asn1.Sequence({
        value: [
          new asn1.Sequence({ value: [algorithm(OID.sha256, new asn1.Null()), octets(mac)] }),
          octets(macSalt),
          new asn1.Integer({ value: PKCS12_ITERATIONS }),
        ],
      }),
    ],
  })
  return der(pfx)
}
