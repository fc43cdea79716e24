/**
 * Parses the `objects` parameter: a YAML list of secret objects, written for
 * HashiCorp's vault-csi-provider. Pure: a string in, typed objects and every
 * problem found out (collectObjects), each a ProviderError whose fields name
 * the object (index and objectName) or the file; parseObjects throws the first.
 */
import { isMap, isScalar, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml'
import { DEFAULT_MAX_OBJECTS_BYTES } from '../config/config.js'
import { ProviderError, q, type ErrorFields } from '../errors.js'
import { Issues } from './issues.js'
import { KeyPathSyntaxError, parseKeyPath } from './key-path.js'
import { TemplateSyntaxError, checkTemplate } from './template-syntax.js'
import { filePathProblem, pathConflicts } from './file-paths.js'
import { OBJECT_FIELDS } from './object-fields.js'
import { yamlTreeProblem } from './yaml-prescan.js'
import {
  ENCODINGS,
  METHODS,
  OUTPUT_FORMATS,
  type Encoding,
  type HttpMethod,
  type Json,
  type OutputFormat,
  type SecretObject,
} from './types.js'
import { canonicalJson } from '../util/canonical-json.js'
import { namespaceProblem } from '../config/vault-address.js'
import { MAX_NAME_PARAMETER_CHARS } from './parameters.js'
import { isPlainObject } from '../util/plain-object.js'

export const MAX_OBJECTS = 1000
export const MAX_YAML_ALIASES = 50
export const MAX_SECRET_ARGS_DEPTH = 16

/** The fields a Mount reads, in the order an unknown field's error lists them. */
const KNOWN_FIELDS = new Set(OBJECT_FIELDS.filter((f) => !f.legacy).map((f) => f.name))
/** Fields Go decodes into strings: a plain scalar there keeps its source text (`0123`, `on`). */
const STRING_FIELDS = new Set(OBJECT_FIELDS.filter((f) => !f.legacy && f.kind === 'string').map((f) => f.name))
/** Field names a literal keystore password would be given in: refused with the way to do it instead. */
const LITERAL_PASSWORD_FIELDS = new Set(['password', 'pkcs12Password', 'keystorePassword'])
/** Formats that write a directory of files under objectName. */
export const DIRECTORY_FORMATS: ReadonlySet<OutputFormat> = new Set<OutputFormat>(['files', 'tls'])
/** Accepted for compatibility and ignored, as the reference provider does. */
const LEGACY_FIELDS = new Set(OBJECT_FIELDS.filter((f) => f.legacy).map((f) => f.name))

/** The fields of every problem of the `objects` parameter. */
const OBJECTS_PARAMETER: ErrorFields = { parameter: 'objects' }

function objectError(index: number, name: string | undefined, detail: string): ProviderError {
  return new ProviderError('BAD_OBJECT', detail, {
    ...OBJECTS_PARAMETER,
    object: name === undefined ? { index } : { index, name },
  })
}

/** A problem of the list as a whole. */
function listError(detail: string): ProviderError {
  return new ProviderError('BAD_PARAMETER', detail, OBJECTS_PARAMETER)
}

export interface ObjectsLimits {
  /** -max-objects-size: the text's size in bytes. */
  maxBytes: number
}

export const DEFAULT_OBJECTS_LIMITS: ObjectsLimits = { maxBytes: DEFAULT_MAX_OBJECTS_BYTES }

/**
 * YAML 1.1 (what Go's yaml.v2 reads) so that `filePermission: 0640` is octal,
 * as users expect. The text is bounded in size, then in depth and nodes by a
 * linear pre-scan, before the YAML library builds a tree from it.
 */
function loadYaml(text: string, limits: ObjectsLimits): unknown {
  // Characters first: no byte count is taken of a text that is too long anyway.
  if (text.length > limits.maxBytes || Buffer.byteLength(text) > limits.maxBytes) {
    throw listError(`parameter "objects" is larger than ${limits.maxBytes} bytes (-max-objects-size)`)
  }
  const problem = yamlTreeProblem(text)
  if (problem) throw listError(`parameter "objects" ${problem}`)
  const doc = parseDocument(text, { version: '1.1', uniqueKeys: true, prettyErrors: true })
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!
    const pos = first.linePos?.[0]
    const where = pos ? ` at line ${pos.line}, column ${pos.col}` : ''
    // The YAML library's message can quote the source; keep only its code.
    throw listError(`parameter "objects" is not valid YAML${where} (${first.code})`)
  }
  const contents = doc.contents
  if (contents !== null && !isSeq(contents) && !isMap(contents) && !isScalar(contents)) {
    throw listError('parameter "objects" must be a YAML list of objects')
  }
  let data: unknown
  try {
    data = doc.toJS({ maxAliasCount: MAX_YAML_ALIASES })
  } catch {
    throw listError(`parameter "objects" uses more than ${MAX_YAML_ALIASES} YAML aliases`)
  }
  if (isSeq(contents) && Array.isArray(data)) restoreSourceText(contents, data)
  return data
}

/**
 * YAML 1.1 typing turns `secretKey: 0123` into 83 and `objectName: on` into
 * true; Go's yaml gives string fields and string map keys their source text.
 * Put the source text back where Go would keep it.
 */
function restoreSourceText(seq: YAMLSeq, data: unknown[]): void {
  seq.items.forEach((item, i) => {
    const target = data[i]
    if (!isMap(item) || !isPlainObject(target)) return
    for (const pair of item.items) {
      if (!isScalar(pair.key)) continue
      const key = String(pair.key.value)
      const value = pair.value
      const typed = isScalar(value) && (typeof value.value === 'number' || typeof value.value === 'boolean')
      if (STRING_FIELDS.has(key) && typed && value.source !== undefined) {
        target[key] = value.source
      }
      if (key === 'secretArgs' && isMap(value)) target[key] = withSourceKeys(value, target[key])
    }
  })
}

function withSourceKeys(map: YAMLMap, js: unknown): unknown {
  if (!isPlainObject(js)) return js
  const out: Record<string, unknown> = {}
  for (const pair of map.items) {
    // Merge keys and complex keys: keep what the YAML library built.
    if (!isScalar(pair.key) || pair.key.value === '<<') return js
    const jsKey = String(pair.key.value)
    const sourceKey = typeof pair.key.value === 'string' ? pair.key.value : (pair.key.source ?? jsKey)
    out[sourceKey] = isMap(pair.value) ? withSourceKeys(pair.value, js[jsKey]) : js[jsKey]
  }
  return out
}

/** Strings are expected, but a YAML scalar such as `secretKey: 123` is what Go's yaml also accepts. */
function scalarString(value: unknown): string | undefined {
  if (typeof value === 'string') return value
  if (typeof value === 'number' && Number.isFinite(value)) return String(value)
  if (typeof value === 'boolean') return String(value)
  return undefined
}

function toJson(value: unknown, depth: number): Json | undefined {
  if (depth > MAX_SECRET_ARGS_DEPTH) return undefined
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) {
    const out: Json[] = []
    for (const item of value) {
      const j = toJson(item, depth + 1)
      if (j === undefined) return undefined
      out.push(j)
    }
    return out
  }
  if (value instanceof Map) return undefined
  if (typeof value === 'object') {
    const out: { [key: string]: Json } = {}
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const j = toJson(v, depth + 1)
      if (j === undefined) return undefined
      out[k] = j
    }
    return out
  }
  return undefined
}

/** `/v1/x`, `v1/x`, `/x` and `x` all name the API path `x`. */
export function normaliseSecretPath(raw: string): { path: string; query: Array<[string, string]> } {
  const qIndex = raw.indexOf('?')
  let path = qIndex === -1 ? raw : raw.slice(0, qIndex)
  const queryText = qIndex === -1 ? '' : raw.slice(qIndex + 1)
  path = path.replace(/^\/+/, '')
  if (path.startsWith('v1/')) path = path.slice(3).replace(/^\/+/, '')
  const query = [...new URLSearchParams(queryText).entries()]
  return { path, query }
}

function parseSecretPath(index: number, name: string, raw: string): { path: string; query: Array<[string, string]> } {
  const { path, query } = normaliseSecretPath(raw)
  if (path === '') throw objectError(index, name, `secretPath ${q(raw)} names no Vault path`)
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) {
    throw objectError(index, name, `secretPath ${q(raw)} contains a control character`)
  }
  const segments = path.split('/')
  if (segments.some((s) => s === '..' || s === '.')) {
    throw objectError(index, name, `secretPath ${q(raw)} contains a "." or ".." segment`)
  }
  return { path, query }
}

/** `filePermission` as an integer mode 0–0777 (YAML already turned `0640` into 416). */
function parseFilePermission(index: number, name: string, value: unknown): number {
  let mode: number | undefined
  if (typeof value === 'number' && Number.isInteger(value)) mode = value
  else if (typeof value === 'string' && /^0[0-7]+$/.test(value)) mode = Number.parseInt(value, 8)
  else if (typeof value === 'string' && /^0o[0-7]+$/i.test(value)) mode = Number.parseInt(value.slice(2), 8)
  else if (typeof value === 'string' && /^\d+$/.test(value)) mode = Number.parseInt(value, 10)
  if (mode === undefined || mode < 0 || mode > 0o777) {
    throw objectError(
      index,
      name,
      `filePermission must be a file mode from 0 to 0777 (an octal literal such as 0640), got ${q(String(value))}`,
    )
  }
  return mode
}

function canonicalConfig(entry: Record<string, unknown>): { [key: string]: Json } {
  const out: { [key: string]: Json } = {}
  for (const key of Object.keys(entry).sort()) {
    if (LEGACY_FIELDS.has(key)) continue
    const j = toJson(entry[key], 0)
    if (j !== undefined) out[key] = j
  }
  return out
}

function parseObject(index: number, entry: unknown): SecretObject {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    throw objectError(index, undefined, 'must be a map with objectName and secretPath')
  }
  const fields = entry as Record<string, unknown>
  const name = scalarString(fields.objectName)
  if (name === undefined || name === '') {
    throw objectError(index, undefined, 'objectName is missing or not a string')
  }
  for (const key of Object.keys(fields)) {
    if (LITERAL_PASSWORD_FIELDS.has(key)) {
      throw objectError(
        index,
        name,
        `${q(key)}: a password is never written in a SecretProviderClass; store it in Vault, list it as an object, and name that object in passwordObject`,
      )
    }
    if (!KNOWN_FIELDS.has(key) && !LEGACY_FIELDS.has(key)) {
      throw objectError(index, name, `unknown field ${q(key)} (known fields: ${[...KNOWN_FIELDS].join(', ')})`)
    }
  }
  const pathProblem = filePathProblem(name)
  if (pathProblem) throw objectError(index, name, `objectName ${pathProblem}`)

  const template = parseTemplateField(index, name, fields.template)
  const rawPath = scalarString(fields.secretPath)
  const hasPath = fields.secretPath !== undefined && fields.secretPath !== null && fields.secretPath !== ''
  if (!hasPath && template === undefined) throw objectError(index, name, 'secretPath is missing or not a string')
  if (hasPath && rawPath === undefined) throw objectError(index, name, 'secretPath is missing or not a string')
  if (!hasPath) {
    for (const field of ['method', 'secretArgs', 'secretKey', 'secretKeyPath', 'encoding', 'namespace']) {
      if (fields[field] !== undefined && fields[field] !== null && fields[field] !== '') {
        throw objectError(
          index,
          name,
          `${field} needs a secretPath (a template without secretPath reads only other objects)`,
        )
      }
    }
  }
  const { path, query } = hasPath ? parseSecretPath(index, name, rawPath!) : { path: '', query: [] }

  let method: HttpMethod = 'GET'
  if (fields.method !== undefined && fields.method !== null && fields.method !== '') {
    const m = scalarString(fields.method)?.toUpperCase()
    if (m === undefined || !(METHODS as readonly string[]).includes(m)) {
      throw objectError(index, name, `method must be one of ${METHODS.join(', ')}, got ${q(String(fields.method))}`)
    }
    method = m as HttpMethod
  }

  let secretKey: string | undefined
  if (fields.secretKey !== undefined && fields.secretKey !== null && fields.secretKey !== '') {
    secretKey = scalarString(fields.secretKey)
    if (secretKey === undefined) throw objectError(index, name, 'secretKey must be a string')
  }

  let secretKeyPath: Array<string | number> | undefined
  if (fields.secretKeyPath !== undefined && fields.secretKeyPath !== null && fields.secretKeyPath !== '') {
    const text = scalarString(fields.secretKeyPath)
    if (text === undefined) throw objectError(index, name, 'secretKeyPath must be a string')
    if (secretKey !== undefined) {
      throw objectError(index, name, 'set secretKey or secretKeyPath, not both (secretKeyPath "a" is secretKey "a")')
    }
    try {
      secretKeyPath = parseKeyPath(text)
    } catch (err) {
      if (err instanceof KeyPathSyntaxError) throw objectError(index, name, `secretKeyPath ${q(text)} ${err.message}`)
      throw err
    }
  }

  let format: OutputFormat | undefined
  if (fields.format !== undefined && fields.format !== null && fields.format !== '') {
    const f = scalarString(fields.format)?.toLowerCase()
    if (f === undefined || !(OUTPUT_FORMATS as readonly string[]).includes(f)) {
      throw objectError(
        index,
        name,
        `format must be one of ${OUTPUT_FORMATS.join(', ')}, got ${q(String(fields.format))}`,
      )
    }
    format = f as OutputFormat
    if (template !== undefined) throw objectError(index, name, 'set format or template, not both')
  }

  let encoding: Encoding = 'utf-8'
  if (fields.encoding !== undefined && fields.encoding !== null && fields.encoding !== '') {
    const e = scalarString(fields.encoding)?.toLowerCase()
    if (e === undefined || !(ENCODINGS as readonly string[]).includes(e)) {
      throw objectError(
        index,
        name,
        `encoding must be one of ${ENCODINGS.join(', ')}, got ${q(String(fields.encoding))}`,
      )
    }
    encoding = e as Encoding
  }

  let secretArgs: { [key: string]: Json } | undefined
  if (fields.secretArgs !== undefined && fields.secretArgs !== null) {
    const args = toJson(fields.secretArgs, 0)
    if (args === undefined || args === null || typeof args !== 'object' || Array.isArray(args)) {
      throw objectError(index, name, 'secretArgs must be a map of request parameters (plain YAML values)')
    }
    secretArgs = args
  }

  const filePermission =
    fields.filePermission === undefined || fields.filePermission === null
      ? undefined
      : parseFilePermission(index, name, fields.filePermission)

  const config = canonicalConfig(fields)
  const object: SecretObject = {
    objectName: name,
    secretPath: path,
    query,
    method,
    secretArgs,
    secretKey,
    encoding,
    filePermission,
    config,
    configJson: canonicalJson(config),
  }
  const passwordObject = parsePasswordObject(index, name, fields.passwordObject, format)
  const optional = parseOptional(index, name, fields.optional)
  const namespace = parseObjectNamespace(index, name, fields.namespace)
  // New fields only when set: objects without them stay exactly as before.
  if (secretKeyPath !== undefined) object.secretKeyPath = secretKeyPath
  if (format !== undefined) object.format = format
  if (template !== undefined) object.template = template
  if (passwordObject !== undefined) object.passwordObject = passwordObject
  if (optional) object.optional = true
  if (namespace !== undefined) object.namespace = namespace
  return object
}

/** `namespace`: a Vault namespace path, bounded like the vaultNamespace parameter; empty means the Mount's. */
function parseObjectNamespace(index: number, name: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined
  const text = scalarString(value)
  if (text === undefined) throw objectError(index, name, 'namespace must be a string')
  if (text.length > MAX_NAME_PARAMETER_CHARS) {
    throw objectError(index, name, `namespace is longer than ${MAX_NAME_PARAMETER_CHARS} characters`)
  }
  const problem = namespaceProblem(text)
  if (problem !== undefined) throw objectError(index, name, `namespace ${q(text, 40)} ${problem}`)
  return text
}

function parsePasswordObject(
  index: number,
  name: string,
  value: unknown,
  format: OutputFormat | undefined,
): string | undefined {
  if (value === undefined || value === null || value === '') return undefined
  if (format !== 'pkcs12') throw objectError(index, name, 'passwordObject is for format pkcs12 only')
  const ref = scalarString(value)
  if (ref === undefined) throw objectError(index, name, 'passwordObject must be the objectName of another object')
  if (ref === name) throw objectError(index, name, 'passwordObject names the object itself')
  return ref
}

/** `optional`: true or false, as a YAML boolean or Go's strconv.ParseBool spellings. */
function parseOptional(index: number, name: string, value: unknown): boolean {
  if (value === undefined || value === null || value === '') return false
  if (typeof value === 'boolean') return value
  const text = scalarString(value)
  if (text !== undefined && ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true
  if (text !== undefined && ['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false
  throw objectError(index, name, `optional must be true or false, got ${q(String(value))}`)
}

function parseTemplateField(index: number, name: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw objectError(index, name, 'template must be a string')
  if (value === '') throw objectError(index, name, 'template is empty')
  try {
    checkTemplate(value)
  } catch (err) {
    if (err instanceof TemplateSyntaxError) throw objectError(index, name, `template ${err.message}`)
    throw err
  }
  return value
}

/**
 * An entry of the list as the checks across objects see it. `object` is absent when the entry was
 * refused (its problem kept already); it keeps the name it gave, when that is a usable file path,
 * so that the objects naming it are judged as if it were right.
 */
interface Entry {
  index: number
  name?: string
  /** A directory format (files, tls): `name/x` objects may live in it. */
  directory: boolean
  object?: SecretObject
}

function refusedEntry(index: number, raw: unknown): Entry {
  const fields = isPlainObject(raw) ? raw : {}
  const name = scalarString(fields.objectName)
  const format = scalarString(fields.format)?.toLowerCase()
  const usable = name !== undefined && name !== '' && filePathProblem(name) === undefined
  return {
    index,
    ...(usable ? { name } : {}),
    directory: DIRECTORY_FORMATS.has(format as OutputFormat),
  }
}

/** Two objects of one name, and a file object standing where another needs a directory. */
function checkPaths(entries: readonly Entry[], issues: Issues): void {
  const named = entries.filter((e) => e.name !== undefined)
  // `a/b` beside a directory object `a` is fine unless a file collides (checked when rendering).
  const directories = new Set(named.filter((e) => e.directory).map((e) => e.name))
  const { duplicates, nested } = pathConflicts(
    named.map((e) => e.name!),
    { isDirectory: (dir) => directories.has(dir) },
  )
  if (duplicates.length > 0) {
    const shown = duplicates.slice(0, 10).map((d) => q(d))
    const more = duplicates.length > 10 ? ` and ${duplicates.length - 10} more` : ''
    // `file`: the name two objects would write (the later of them is the one to blame).
    issues.add(
      new ProviderError('BAD_OBJECT', `objectName must be unique; duplicated: ${shown.join(', ')}${more}`, {
        ...OBJECTS_PARAMETER,
        file: duplicates[0]!,
      }),
    )
  }
  for (const [dir, file] of nested) {
    issues.add(
      new ProviderError(
        'BAD_OBJECT',
        `object ${q(file)} needs ${q(dir)} to be a directory, but object ${q(dir)} is a file`,
        { ...OBJECTS_PARAMETER, file },
      ),
    )
  }
}

/**
 * `@objectName` references of templates: to objects of the list that are not templates themselves.
 * A refused object counts as one that reads a secret.
 */
function checkTemplateReferences(entries: readonly Entry[], issues: Issues): void {
  const byName = new Map(entries.filter((e) => e.name !== undefined).map((e) => [e.name!, e]))
  for (const { index, object } of entries) {
    if (object?.template === undefined) continue
    const name = object.objectName
    for (const ref of checkTemplate(object.template)) {
      const target = byName.get(ref)
      if (!target) {
        const names = entries.filter((e) => e.name !== undefined && e.object?.template === undefined)
        const listed = [...new Set(names.map((e) => q(e.name!, 60)))].join(', ') || 'none'
        issues.add(
          objectError(
            index,
            name,
            `template references @${q(ref)}, which is not an objectName of this SecretProviderClass (objects it can reference: ${listed})`,
          ),
        )
        break
      }
      if (target.object?.template !== undefined) {
        issues.add(
          objectError(
            index,
            name,
            `template references @${q(ref)}, which is itself a template; templates can reference only objects that read a secret`,
          ),
        )
        break
      }
    }
  }
}

/** passwordObject names an object of the class that reads a secret (not a template); a refused one counts as such. */
function checkPasswordObjects(entries: readonly Entry[], issues: Issues): void {
  const byName = new Map(entries.filter((e) => e.name !== undefined).map((e) => [e.name!, e]))
  for (const { index, object } of entries) {
    if (object?.passwordObject === undefined) continue
    const target = byName.get(object.passwordObject)
    if (target === undefined || target.object?.template !== undefined) {
      issues.add(
        objectError(
          index,
          object.objectName,
          `passwordObject ${q(object.passwordObject)} is not an objectName of this SecretProviderClass that reads a secret`,
        ),
      )
    }
  }
}

/** The list itself: what stops the parse before any object is read. */
function parseList(text: string, limits: ObjectsLimits): unknown[] {
  const data = loadYaml(text, limits)
  if (data === null || data === undefined) {
    throw listError('parameter "objects" is empty: list at least one object')
  }
  if (!Array.isArray(data)) throw listError('parameter "objects" must be a YAML list of objects')
  if (data.length === 0) throw listError('parameter "objects" is an empty list: list at least one object')
  if (data.length > MAX_OBJECTS) {
    throw listError(`parameter "objects" lists ${data.length} objects; at most ${MAX_OBJECTS} are allowed`)
  }
  return data
}

/** Every problem of an `objects` text, and the objects that passed. */
export interface CollectedObjects {
  /** The objects with no problem of their own, in the list's order. */
  objects: SecretObject[]
  /** In the order the checks run (each object's, then those across objects): a Mount fails with the first. */
  issues: ProviderError[]
  /** Each entry's objectName, refused ones included when theirs is a usable path (what `file` fields name). */
  names: ReadonlyArray<string | undefined>
}

/**
 * Every check of parseObjects, each problem kept (at most MAX_ISSUES): a problem of the list
 * itself (size, YAML, not a list) stops at once; an object's first problem is kept and the next
 * object read; then the checks across objects run over all of them.
 */
export function collectObjects(text: string, limits: ObjectsLimits = DEFAULT_OBJECTS_LIMITS): CollectedObjects {
  const issues = new Issues()
  const data = issues.attempt(() => parseList(text, limits))
  if (data === undefined) return { objects: [], issues: issues.list(), names: [] }
  const entries = data.map((raw, index): Entry => {
    const object = issues.attempt(() => parseObject(index, raw))
    if (object === undefined) return refusedEntry(index, raw)
    const directory = object.format !== undefined && DIRECTORY_FORMATS.has(object.format)
    return { index, name: object.objectName, directory, object }
  })
  checkPaths(entries, issues)
  checkTemplateReferences(entries, issues)
  checkPasswordObjects(entries, issues)
  return {
    objects: entries.flatMap((e) => (e.object === undefined ? [] : [e.object])),
    issues: issues.list(),
    names: entries.map((e) => e.name),
  }
}

/** The objects of an `objects` text; throws the first problem collectObjects finds. */
export function parseObjects(text: string, limits: ObjectsLimits = DEFAULT_OBJECTS_LIMITS): SecretObject[] {
  const { objects, issues } = collectObjects(text, limits)
  if (issues.length > 0) throw issues[0]!
  return objects
}
