/**
 * The validator node-vault checks each request with, given through its
 * documented `tv4` option. node-vault validates every `client.request()`
 * against its request schema (an object whose `path` and `method` are
 * strings) with tv4, which builds a validation context and walks the schema
 * again on every call: ~40 µs per Vault request in the daemon on Node 20,
 * 3 % of a warm Mount's CPU (npm run bench -- --profile).
 *
 * This one answers "valid" at once for data that a schema of exactly that
 * shape certainly accepts (every property it names is a string), and hands
 * everything else to tv4 itself: every refusal, and the error node-vault
 * reports for it, is tv4's own. A schema of any other shape always goes to tv4.
 */

/** What node-vault uses of tv4: validate(), then `error` when it answered false. */
export interface SchemaValidator {
  validate(data: unknown, schema: object): boolean
  readonly error: unknown
}

const OBJECT_SCHEMA_KEYS = new Set(['type', 'properties', 'required'])

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * The property names of `{ type: 'object', properties: { <name>: { type: 'string' }, ... }, required?: [<names>] }`
 * (required names among the properties), or null for any other schema.
 */
export function stringPropertiesOf(schema: object): readonly string[] | null {
  if (!isRecord(schema) || schema['type'] !== 'object') return null
  if (Object.keys(schema).some((k) => !OBJECT_SCHEMA_KEYS.has(k))) return null
  const properties = schema['properties']
  if (!isRecord(properties)) return null
  const names = Object.keys(properties)
  for (const name of names) {
    const p = properties[name]
    if (!isRecord(p) || p['type'] !== 'string') return null
    // `type` and nothing else (a format, pattern or length would be tv4's to check).
    if (Object.keys(p).length !== 1) return null
  }
  const required = schema['required']
  if (required !== undefined) {
    if (!Array.isArray(required)) return null
    if (!required.every((r) => typeof r === 'string' && names.includes(r))) return null
  }
  return names
}

/** `tv4` with the fast answer above in front of it; the shape of each schema is worked out once. */
class FastPathValidator implements SchemaValidator {
  private readonly tv4: SchemaValidator
  private readonly shapes = new WeakMap<object, readonly string[] | null>()
  private lastError: unknown = null

  constructor(tv4: SchemaValidator) {
    this.tv4 = tv4
  }

  get error(): unknown {
    return this.lastError
  }

  validate(data: unknown, schema: object): boolean {
    let names = this.shapes.get(schema)
    if (names === undefined) {
      names = stringPropertiesOf(schema)
      this.shapes.set(schema, names)
    }
    if (names !== null && isRecord(data) && names.every((n) => typeof data[n] === 'string')) {
      this.lastError = null
      return true
    }
    const valid = this.tv4.validate(data, schema)
    this.lastError = this.tv4.error
    return valid
  }
}

export function withStringPropertiesFastPath(tv4: SchemaValidator): SchemaValidator {
  return new FastPathValidator(tv4)
}
