/**
 * How long a Vault response stays good, read from the response itself. Pure.
 *
 * - leased: the response carries a lease (database, cloud credentials…): it
 *   lives `lease_duration` seconds and may be renewable;
 * - issued: a certificate (PKI issue/sign): it lives until its notAfter;
 * - static: anything else (KV…): no lifetime of its own.
 */
import { X509Certificate } from 'node:crypto'
import { isPlainObject } from '../../util/plain-object.js'

/** A dynamic secret is replaced (or renewed) once this fraction of its lifetime has passed. */
export const RENEW_FRACTION = 2 / 3

export type Lifetime =
  | { kind: 'static' }
  | { kind: 'leased'; leaseId: string; ttlMs: number; renewable: boolean }
  | { kind: 'issued'; notBefore: number; notAfter: number }

function certificateValidity(
  data: Record<string, unknown>,
  obtainedAt: number,
): { notBefore: number; notAfter: number } | undefined {
  const pem = data.certificate
  if (typeof pem !== 'string' || !pem.includes('BEGIN CERTIFICATE')) return undefined
  try {
    const cert = new X509Certificate(pem)
    const notBefore = Date.parse(cert.validFrom)
    const notAfter = Date.parse(cert.validTo)
    if (Number.isFinite(notBefore) && Number.isFinite(notAfter) && notAfter > notBefore) return { notBefore, notAfter }
  } catch {
    // Not parseable: fall back to Vault's own expiration field.
  }
  if (typeof data.expiration === 'number' && data.expiration * 1000 > obtainedAt) {
    return { notBefore: obtainedAt, notAfter: data.expiration * 1000 }
  }
  return undefined
}

/** `write`: the request was a PUT/POST. Only a write issues a certificate; a GET of one (KV v1, pki/cert) is static. */
export function lifetimeOf(body: unknown, obtainedAt: number, write: boolean): Lifetime {
  if (!isPlainObject(body)) return { kind: 'static' }
  const leaseId = body.lease_id
  const duration = body.lease_duration
  if (typeof leaseId === 'string' && leaseId !== '' && typeof duration === 'number' && duration > 0) {
    return { kind: 'leased', leaseId, ttlMs: duration * 1000, renewable: body.renewable === true }
  }
  if (write && isPlainObject(body.data)) {
    const validity = certificateValidity(body.data, obtainedAt)
    // PKI issue/sign answers carry the new certificate with its key or serial number.
    if (validity && (typeof body.data.private_key === 'string' || typeof body.data.serial_number === 'string')) {
      return { kind: 'issued', ...validity }
    }
  }
  return { kind: 'static' }
}

/** When a response with this lifetime, obtained at `obtainedAt`, should be replaced or renewed. */
export function renewPoint(lifetime: Lifetime, obtainedAt: number): number {
  switch (lifetime.kind) {
    case 'static':
      return obtainedAt
    case 'leased':
      return obtainedAt + lifetime.ttlMs * RENEW_FRACTION
    case 'issued': {
      // CAs backdate notBefore (PKI by 30 s): count the lifetime from when it was issued to us.
      const start = Math.max(lifetime.notBefore, obtainedAt)
      return start + (lifetime.notAfter - start) * RENEW_FRACTION
    }
  }
}

export function expiryOf(lifetime: Lifetime, obtainedAt: number): number {
  switch (lifetime.kind) {
    case 'static':
      return obtainedAt
    case 'leased':
      return obtainedAt + lifetime.ttlMs
    case 'issued':
      return lifetime.notAfter
  }
}
