/**
 * The fields of one entry of `objects`: the one list the object parser (objects.ts) and the docs
 * test read. An unknown field is an error naming it and listing the known ones, in this order.
 */

/**
 * What a field holds. `string`: Go's yaml decodes it into a string, so a plain YAML scalar there
 * keeps its source text (`secretKey: 0123` is "0123", not 83). `map`: a YAML map. `file mode`: an
 * octal literal such as 0640. `boolean`: true or false (YAML booleans, or the strings Go's
 * strconv.ParseBool reads).
 */
export type ObjectFieldKind = 'string' | 'map' | 'file mode' | 'boolean'

export interface ObjectFieldSpec {
  readonly name: string
  readonly kind: ObjectFieldKind
  /** Accepted and ignored, as the reference provider does (and left out of the object's version). */
  readonly legacy: boolean
  /** This provider's own output fields (docs/outputs.md), not the reference provider's. */
  readonly added: boolean
  readonly meaning: string
}

export const OBJECT_FIELDS: readonly ObjectFieldSpec[] = [
  {
    name: 'objectName',
    kind: 'string',
    legacy: false,
    added: false,
    meaning: "the file's path in the volume and the object-version id (required, unique)",
  },
  { name: 'secretPath', kind: 'string', legacy: false, added: false, meaning: 'the Vault API path to read' },
  { name: 'secretKey', kind: 'string', legacy: false, added: false, meaning: 'the key of the secret to write' },
  { name: 'method', kind: 'string', legacy: false, added: false, meaning: 'GET, PUT or POST' },
  { name: 'secretArgs', kind: 'map', legacy: false, added: false, meaning: 'the JSON body of the request' },
  { name: 'filePermission', kind: 'file mode', legacy: false, added: false, meaning: "the file's mode" },
  {
    name: 'encoding',
    kind: 'string',
    legacy: false,
    added: false,
    meaning: 'utf-8, base64 or hex: how the value is decoded before it is written',
  },
  {
    name: 'secretKeyPath',
    kind: 'string',
    legacy: false,
    added: true,
    meaning: 'a value deep inside the secret, instead of secretKey',
  },
  { name: 'format', kind: 'string', legacy: false, added: true, meaning: "the secret's data in another shape" },
  { name: 'template', kind: 'string', legacy: false, added: true, meaning: 'a Mustache template over the objects' },
  {
    name: 'passwordObject',
    kind: 'string',
    legacy: false,
    added: true,
    meaning: 'format pkcs12: the object whose value is the keystore password (none: an empty password)',
  },
  {
    name: 'optional',
    kind: 'boolean',
    legacy: false,
    added: true,
    meaning: 'true: when Vault answers that the secret does not exist, the Mount goes on without this object',
  },
  {
    name: 'namespace',
    kind: 'string',
    legacy: false,
    added: true,
    meaning: "the Vault namespace this object is read in, instead of the Mount's (vaultNamespace)",
  },
  { name: 'objectVersion', kind: 'string', legacy: true, added: false, meaning: 'legacy: accepted and ignored' },
]
