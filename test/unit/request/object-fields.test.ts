// The object-field table is what the object parser reads: every field of it is accepted (and
// becomes part of the object's configuration, legacy ones aside), string fields keep their YAML
// source text as Go's yaml does, and any other field is refused with the table's list.
import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import { OBJECT_FIELDS } from '../../../src/request/object-fields.js'
import { parseObjects } from '../../../src/request/objects.js'
import { thrown } from '../../support/thrown.js'

/** A valid YAML value for each field, in an object that also has objectName and secretPath. */
const SAMPLES: Record<string, string> = {
  objectName: 'sample',
  secretPath: 'secret/data/sample',
  secretKey: 'password',
  method: 'PUT',
  secretArgs: '{common_name: web.example}',
  filePermission: '0640',
  encoding: 'base64',
  secretKeyPath: 'db.password',
  format: 'json',
  template: '"{{password}}"',
  objectVersion: '"3"',
  passwordObject: 'pw',
  optional: 'true',
  namespace: 'team-a/apps',
}

/** Fields a field needs beside it to be valid. */
const ALONGSIDE: Record<string, Record<string, string>> = { passwordObject: { format: 'pkcs12' } }

/** An object with `field`, and a second object `pw` that a passwordObject can name. */
function objectWith(field: string, value: string): string {
  const fields: Record<string, string> = {
    objectName: 'x',
    secretPath: 'secret/data/x',
    ...ALONGSIDE[field],
    [field]: value,
  }
  return `- ${Object.entries(fields)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n  ')}\n- objectName: pw\n  secretPath: secret/data/pw\n`
}

t.test('every field of the table has a sample here', async (t) => {
  t.same(Object.keys(SAMPLES).sort(), OBJECT_FIELDS.map((f) => f.name).sort())
})

t.test('every field is accepted; only legacy ones stay out of the object’s configuration', async (t) => {
  for (const field of OBJECT_FIELDS) {
    const [object] = parseObjects(objectWith(field.name, SAMPLES[field.name]!))
    t.equal(field.name in object!.config, !field.legacy, `${field.name} accepted, in the config: ${!field.legacy}`)
  }
})

t.test('string fields keep their source text', async (t) => {
  const strings = OBJECT_FIELDS.filter((f) => f.kind === 'string' && !f.legacy)
  t.ok(strings.length >= 8)
  for (const field of strings) {
    // Whether the field accepts "0123" or refuses it, the parser saw the text, not the number 83.
    let outcome: string
    try {
      outcome = JSON.stringify(parseObjects(objectWith(field.name, '0123'))[0]!.config[field.name])
    } catch (err) {
      outcome = (err as Error).message
    }
    t.match(outcome, '"0123"', field.name)
  }
})

t.test('an unknown field is refused, naming it and the table’s fields', async (t) => {
  const known = OBJECT_FIELDS.filter((f) => !f.legacy).map((f) => f.name)
  const err = thrown(() => parseObjects(objectWith('secretkey', 'x')), ProviderError)
  t.equal(err.code, 'BAD_OBJECT')
  t.equal(err.message, `object "x": unknown field "secretkey" (known fields: ${known.join(', ')})`)
})

t.test('names are unique', async (t) => {
  const names = OBJECT_FIELDS.map((f) => f.name)
  t.equal(new Set(names).size, names.length)
})
