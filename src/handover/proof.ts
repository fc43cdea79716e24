/**
 * How the two processes of a handover prove to each other that they hold the same HMAC key
 * (the object-version key: the same Kubernetes Secret or key file, so the same provider
 * installation) without the key crossing the socket. Each side sends a random nonce; each
 * answers HMAC-SHA256(key, label ‖ successor's nonce ‖ predecessor's nonce ‖ both process IDs).
 * The labels differ per direction, so a side cannot pass the other's answer back as its own,
 * and fresh nonces mean no recorded answer is ever valid again.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export const NONCE_BYTES = 32
export const PROOF_LABELS = {
  predecessor: 'vault-csi-provider handover: predecessor',
  successor: 'vault-csi-provider handover: successor',
} as const

export function newNonce(): string {
  return randomBytes(NONCE_BYTES).toString('base64')
}

export interface Transcript {
  successorNonce: string
  predecessorNonce: string
  successorPid: number
  predecessorPid: number
}

export function proof(key: Buffer, who: keyof typeof PROOF_LABELS, t: Transcript): string {
  // Fields joined with a separator that none of them contains (base64 and decimal digits).
  const text = [PROOF_LABELS[who], t.successorNonce, t.predecessorNonce, t.successorPid, t.predecessorPid].join('\n')
  return createHmac('sha256', key).update(text).digest('base64')
}

/** Compares in constant time; false for anything that is not the expected proof. */
export function proofMatches(key: Buffer, who: keyof typeof PROOF_LABELS, t: Transcript, given: string): boolean {
  const expected = Buffer.from(proof(key, who, t), 'base64')
  const actual = Buffer.from(given, 'base64')
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}
