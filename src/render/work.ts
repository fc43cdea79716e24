/**
 * What rendering costs the CPU, counted so that one Mount's render is bounded work: each Mount has
 * a work budget, certificate chains a cap on signature checks, and the render gives the event loop
 * a turn after each turn's worth of work (render.ts). Counted in units of about one signature
 * check against an RSA-2048 key; the weights follow the measurements in bench/NOTES.md.
 */
import type { KeyObject } from 'node:crypto'
import { ProviderError } from '../errors.js'

/** What each kind of work weighs. Charged before the work is done: work over the budget never starts. */
export const RENDER_WORK = {
  /** Any object: selecting, decoding and writing its value. */
  object: 1,
  /**
   * Each certificate (or key) of a `tls` or `pkcs12` object's material, parsed, its key read and
   * compared with the private key: 6–12 signature checks' worth when measured (bench/NOTES.md).
   */
  certificate: 8,
  /** A PKCS#12 keystore: PBKDF2 for its key and the PKCS#12 derivation of its MAC key, 2048 iterations each. */
  keystore: 256,
} as const

/**
 * Work one Mount's render may do: about 128 keystores, or thousands of ordinary objects. No real
 * Mount comes near it; a tenant's 999 keystores over one secret are refused at the 128th, after a
 * bounded amount of CPU, instead of costing seconds of it on every retry.
 */
export const MAX_RENDER_WORK = 128 * RENDER_WORK.keystore

/**
 * Work after which a render gives others a turn (render.ts): one keystore, or a chain check of a
 * large bundle, is a turn's worth; small objects go several at a time (RENDER_OBJECTS_PER_TURN).
 */
export const RENDER_WORK_PER_TURN = RENDER_WORK.keystore

/**
 * Signature checks one object's certificate chain may take. A real chain of a handful of
 * certificates takes one check per link and one for its root; a careful TLS library caps the
 * checks of a whole verification too (Go's crypto/x509: 100). Candidates are chosen by name and
 * key identifiers first, so only a bundle built to be expensive (many CAs of one name without key
 * identifiers) comes near it.
 */
export const MAX_SIGNATURE_CHECKS_PER_OBJECT = 64
/** The same over all objects of one Mount: 16 objects' worth of hard chains. */
export const MAX_SIGNATURE_CHECKS_PER_MOUNT = 16 * MAX_SIGNATURE_CHECKS_PER_OBJECT

/**
 * What one signature check against `key` counts: checking against an RSA key costs about the
 * square of its modulus length (its public exponent is bounded, see certificates.ts), so a
 * 4096-bit key counts as 4 checks and an 8192-bit one as 16; every other key as one.
 */
export function signatureCost(key: KeyObject): number {
  const bits = key.asymmetricKeyDetails?.modulusLength
  if (bits === undefined) return 1
  return Math.max(1, Math.round((bits / 2048) ** 2))
}

/** Counts a Mount's render work against MAX_RENDER_WORK and its signature checks against their cap. */
export class RenderWork {
  private spent = 0
  private signatures = 0
  private readonly limit: number
  private readonly signatureLimit: number
  /** True once the Mount's work budget was exceeded (a refusal worth remembering: it would only repeat). */
  exceeded = false

  constructor(limit: number = MAX_RENDER_WORK, signatureLimit: number = MAX_SIGNATURE_CHECKS_PER_MOUNT) {
    this.limit = limit
    this.signatureLimit = signatureLimit
  }

  get used(): number {
    return this.spent
  }

  /** Counts `units` of work for `what` (an object's label); throws MOUNT_BUDGET_EXCEEDED past the budget. */
  charge(units: number, what: string): void {
    if (this.spent + units > this.limit) {
      this.exceeded = true
      throw new ProviderError(
        'MOUNT_BUDGET_EXCEEDED',
        `${what} takes the Mount past its render work budget (${this.limit} units; a PKCS#12 keystore counts ${RENDER_WORK.keystore}, ` +
          `each object ${RENDER_WORK.object}, each certificate ${RENDER_WORK.certificate}, each signature check at least 1); ` +
          `it had used ${this.spent} before this object. Split the objects over several SecretProviderClasses, or write fewer keystores`,
      )
    }
    this.spent += units
  }

  /** Counts one signature check of `cost` (signatureCost) for `what`; throws OUTPUT_FAILED past the Mount's cap. */
  signatureCheck(cost: number, what: string, format: string): void {
    if (this.signatures + cost > this.signatureLimit) {
      throw new ProviderError(
        'OUTPUT_FAILED',
        `${what}: format "${format}": the Mount's certificate chains take more than ${this.signatureLimit} signature checks ` +
          `(the most one Mount may; a check against a larger RSA key counts as several); split the objects over several SecretProviderClasses`,
      )
    }
    this.signatures += cost
    this.charge(cost, what)
  }
}
