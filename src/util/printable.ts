/**
 * Text that reaches a person — a FailedMount event, a log line read in a terminal, the CLI's output —
 * with every character that could act on the terminal or reorder what is shown replaced by a visible
 * escape: C0 controls (ESC, BEL, CR, LF…), DEL, C1 controls, the line and paragraph separators, and
 * the bidirectional marks, embeddings, overrides and isolates. A server named by a pod can answer
 * with such characters; they must never reach a terminal as they are.
 */

// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/

/** Which kind of such character `text` holds first, if any. */
export function unprintableKind(text: string): 'control' | 'bidirectional' | undefined {
  if (CONTROL.test(text)) return 'control'
  if (BIDI.test(text)) return 'bidirectional'
  return undefined
}

const SHORT: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/**
 * `text` with every such character escaped as JSON escapes it (`\n`, `\u001b`, `\u202e`); other text
 * unchanged. Idempotent: an escape is printable text.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

// What JSON.stringify leaves raw: DEL, C1, the separators and the bidirectional characters.
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/** JSON text (JSON.stringify's output) with what JSON leaves raw escaped too; still the same JSON. */
export function printableJson(json: string): string {
  return json.replace(UNPRINTABLE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
