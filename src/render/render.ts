/**
 * Vault responses + object specs -> files and object versions. Pure: every
 * check that the driver would make on the result happens here, with the
 * object named in the error.
 */
import { basename } from 'node:path'
import { ProviderError, q } from '../errors.js'
import { filePathProblem, pathConflicts } from '../request/file-paths.js'
import { formatKeyPath } from '../request/key-path.js'
import type { Encoding, SecretObject } from '../request/types.js'
import { isPlainObject } from '../util/plain-object.js'
import { canonicalJson } from '../util/canonical-json.js'
import { certificateMaterial, splitCertificate } from './certificates.js'
import { decodeValue } from './encoding.js'
import { extractKey, secretData, wholeResponse } from './extract.js'
import { formatData } from './formats.js'
import { writePkcs12 } from './pkcs12.js'
import { describeLevel, selectPath } from './select.js'
import { renderTemplate } from './template.js'
import { versionOf } from './versions.js'
import { RENDER_WORK, RENDER_WORK_PER_TURN, RenderWork } from './work.js'

export interface RenderedFile {
  path: string
  mode: number
  contents: Buffer
}

export interface RenderedObject {
  id: string
  version: string
  files: RenderedFile[]
}

/**
 * What one Mount may still produce (src/mount/budget.ts): charge() counts
 * bytes as they are produced and throws MOUNT_BUDGET_EXCEEDED naming `what`.
 */
export interface RenderBudget {
  charge(bytes: number, what: string): void
}

/** The value of `@objectName` in a template: what that object selects, decoded. */
export type ObjectValues = (objectName: string) => unknown

const NO_OBJECTS: ObjectValues = (name) => {
  throw new ProviderError('OUTPUT_FAILED', `template references @${q(name)}, but no other objects are available`)
}

/**
 * What an object reads from its response: the value of `secretKey` or
 * `secretKeyPath`, else the secret's data without the envelope.
 */
export function selectedValue(obj: SecretObject, body: unknown, label: string): unknown {
  const secretKey = obj.secretKey
  if (secretKey !== undefined) {
    const scope = secretData(body, label, () => `no key ${q(secretKey)} to read`)
    if (!Object.prototype.hasOwnProperty.call(scope, secretKey)) {
      throw new ProviderError(
        'SECRET_KEY_NOT_FOUND',
        `${label}: secretKey ${q(secretKey)} not found; ${describeLevel(scope)}`,
      )
    }
    return scope[secretKey]
  }
  if (obj.secretKeyPath !== undefined) {
    const path = formatKeyPath(obj.secretKeyPath)
    const found = selectPath(
      secretData(body, label, () => `no secretKeyPath ${q(path)} to read`),
      obj.secretKeyPath,
    )
    if (!found.ok)
      throw new ProviderError('SECRET_KEY_NOT_FOUND', `${label}: secretKeyPath ${q(path)}: ${found.problem}`)
    return found.value
  }
  return secretData(body, label)
}

const UTF8 = new TextDecoder('utf-8', { fatal: true })

/** Every string inside `value` decoded with `encoding` into text (formats and templates write text). */
export function decodedText(value: unknown, encoding: Encoding, label: string): unknown {
  if (encoding === 'utf-8') return value
  const walk = (v: unknown, at: Array<string | number>): unknown => {
    if (typeof v === 'string') {
      const where = at.length === 0 ? 'the value' : `the value at ${formatKeyPath(at)}`
      const bytes = decodeValue(v, encoding, `${label}, ${where}`)
      try {
        return UTF8.decode(bytes)
      } catch {
        throw new ProviderError(
          'DECODE_FAILED',
          `${label}: ${where} decodes (${encoding}) to bytes that are not UTF-8 text`,
        )
      }
    }
    if (Array.isArray(v)) return v.map((item, i) => walk(item, [...at, i]))
    if (isPlainObject(v)) {
      const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>
      for (const [k, item] of Object.entries(v)) out[k] = walk(item, [...at, k])
      return out
    }
    return v
  }
  return walk(value, [])
}

/** Strings in a deterministic order: map keys sorted, arrays in order. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value)
  else if (Array.isArray(value)) for (const v of value) strings(v, out)
  else if (isPlainObject(value)) for (const k of Object.keys(value).sort()) strings(value[k], out)
  return out
}

/** One value as file bytes: strings decoded with `encoding`, other JSON values as compact JSON. */
function valueBytes(value: unknown, encoding: Encoding, label: string, what: string): Buffer {
  if (typeof value === 'string') return decodeValue(value, encoding, `${label}, ${what}`)
  if (encoding !== 'utf-8') {
    throw new ProviderError(
      'DECODE_FAILED',
      `${label}: ${what} holds a JSON ${Array.isArray(value) ? 'array' : 'value'}, not a string, so encoding ${q(encoding)} cannot apply`,
    )
  }
  return Buffer.from(canonicalJson(value), 'utf8')
}

/** The password of a `format: pkcs12` object: the text of its passwordObject, or empty without one. */
function keystorePassword(obj: SecretObject, objects: ObjectValues, label: string): string {
  if (obj.passwordObject === undefined) return ''
  const value = objects(obj.passwordObject)
  if (typeof value !== 'string') {
    throw new ProviderError(
      'OUTPUT_FAILED',
      `${label}: format "pkcs12": passwordObject ${q(obj.passwordObject)} holds ${describeLevel(value)}, not the text of a password`,
    )
  }
  return value
}

/**
 * `label` names the object and the Vault request in error messages;
 * `objects` resolves `@objectName` in templates.
 */
export function renderObject(
  obj: SecretObject,
  body: unknown,
  defaultMode: number,
  label: string,
  objects: ObjectValues = NO_OBJECTS,
  budget?: RenderBudget,
  work?: RenderWork,
): RenderedFile[] {
  const mode = obj.filePermission ?? defaultMode
  if (obj.template !== undefined) {
    const root = obj.secretPath === '' ? undefined : decodedText(selectedValue(obj, body, label), obj.encoding, label)
    const charge = budget ? (chars: number) => budget.charge(chars, label) : undefined
    const text = renderTemplate(obj.template, { root, object: objects, what: label, charge })
    return [{ path: obj.objectName, mode, contents: Buffer.from(text, 'utf8') }]
  }
  if (obj.format === 'files') {
    const value = selectedValue(obj, body, label)
    if (!isPlainObject(value)) {
      throw new ProviderError(
        'OUTPUT_FAILED',
        `${label}: format "files" needs a map of keys, but ${describeLevel(value)}`,
      )
    }
    return Object.keys(value)
      .sort()
      .map((key) => {
        const path = `${obj.objectName}/${key}`
        const problem = filePathProblem(path)
        if (problem) {
          throw new ProviderError(
            'BAD_FILE_PATH',
            `${label}: format "files": key ${q(key, 60)} cannot be a file name (the path ${q(path, 80)} ${problem})`,
            { file: path },
          )
        }
        return { path, mode, contents: valueBytes(value[key], obj.encoding, label, `key ${q(key, 60)}`) }
      })
  }
  if (obj.format === 'tls') {
    const texts = strings(decodedText(selectedValue(obj, body, label), obj.encoding, label))
    return splitCertificate(texts, label, work).map(([name, contents]) => ({
      path: `${obj.objectName}/${name}`,
      mode,
      contents,
    }))
  }
  if (obj.format === 'pkcs12') {
    const texts = strings(decodedText(selectedValue(obj, body, label), obj.encoding, label))
    const { key, served, root } = certificateMaterial(texts, label, 'pkcs12', work)
    work?.charge(RENDER_WORK.keystore, label)
    return [
      {
        path: obj.objectName,
        mode,
        contents: writePkcs12({
          key,
          chain: root === undefined ? served : [...served, root],
          password: keystorePassword(obj, objects, label),
          friendlyName: basename(obj.objectName),
        }),
      },
    ]
  }
  if (obj.format !== undefined) {
    const value = decodedText(selectedValue(obj, body, label), obj.encoding, label)
    return [{ path: obj.objectName, mode, contents: formatData(value, obj.format, label) }]
  }
  if (obj.secretKeyPath !== undefined) {
    const what = `secretKeyPath ${q(formatKeyPath(obj.secretKeyPath))}`
    return [
      { path: obj.objectName, mode, contents: valueBytes(selectedValue(obj, body, label), obj.encoding, label, what) },
    ]
  }
  // The reference provider's two shapes, byte for byte.
  let contents: Buffer
  if (obj.secretKey === undefined) {
    contents = Buffer.from(wholeResponse(body, label), 'utf8')
  } else {
    const secretKey = obj.secretKey
    const { value, isString } = extractKey(body, secretKey, label)
    if (!isString && obj.encoding !== 'utf-8') {
      throw new ProviderError(
        'DECODE_FAILED',
        `${label}: secretKey ${q(secretKey)} holds a JSON ${value.startsWith('[') ? 'array' : 'value'}, not a string, so encoding ${q(obj.encoding)} cannot apply`,
      )
    }
    contents = decodeValue(value, obj.encoding, () => `${label}, secretKey ${q(secretKey)}`)
  }
  return [{ path: obj.objectName, mode, contents }]
}

/**
 * When a Mount's render gives the event loop a turn, so that other callbacks (health probes, other
 * pods' Mounts) run in between: after this many objects, after a template (the costliest to render),
 * once this many bytes were rendered since the last turn, or after RENDER_WORK_PER_TURN of work (a
 * keystore, a large certificate bundle). A turn costs a loop iteration (a poll syscall) and a
 * promise: the usual Mount of a few small objects renders in one go, well under a millisecond,
 * while a large one still lets others in every few objects or few tens of KiB.
 */
export const RENDER_OBJECTS_PER_TURN = 8
export const RENDER_BYTES_PER_TURN = 64 * 1024

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * How a Mount's render shares the process (src/mount/render-turns.ts): `check` throws when the
 * Mount must stop before `what` (its deadline passed, the driver cancelled it); `turn` resolves when
 * the render may go on after a turn's worth of work. Without one, the render only yields.
 */
export interface RenderPace {
  check(what: string): void
  turn(what: string): Promise<void>
}

const YIELD_ONLY: RenderPace = { check: () => undefined, turn: yieldToEventLoop }

/** The Mount's work meter and pace; each defaults to a fresh meter and plain yielding. */
export interface RenderRun {
  work?: RenderWork
  pace?: RenderPace
}

/**
 * Renders every object of a Mount. `bodies[i]` is the response object i
 * reads (undefined for a template without secretPath); templates see the
 * other objects through `@objectName`. Every object's output is charged to
 * `budget` as it is produced (a template's as it is written), and the event
 * loop gets a turn between objects as RENDER_OBJECTS_PER_TURN and RENDER_BYTES_PER_TURN say.
 * `skipped`: optional objects whose secret Vault does not have; they write no file.
 * `run`: every object's work is counted against the Mount's work budget (RenderWork), and before
 * each object the pace may stop the render (deadline, cancellation) or make it wait for its turn.
 */
export async function renderObjects(
  objects: readonly SecretObject[],
  bodies: readonly unknown[],
  defaultMode: number,
  labels: readonly string[],
  budget?: RenderBudget,
  skipped: ReadonlySet<number> = new Set(),
  run: RenderRun = {},
): Promise<RenderedFile[][]> {
  const work = run.work ?? new RenderWork()
  const pace = run.pace ?? YIELD_ONLY
  const index = new Map(objects.map((o, i) => [o.objectName, i]))
  const memo = new Map<number, unknown>()
  const values: ObjectValues = (name) => {
    const i = index.get(name)
    if (i === undefined || objects[i]!.template !== undefined) {
      // parseObjects refuses such references; kept as a safety net.
      throw new ProviderError(
        'OUTPUT_FAILED',
        `template references @${q(name)}, which is not an object that reads a secret`,
      )
    }
    if (skipped.has(i)) {
      throw new ProviderError(
        'OUTPUT_FAILED',
        `object ${q(name)} is optional and Vault has no such secret, yet another object needs its value`,
      )
    }
    if (!memo.has(i)) {
      const o = objects[i]!
      memo.set(i, decodedText(selectedValue(o, bodies[i], labels[i]!), o.encoding, labels[i]!))
    }
    return memo.get(i)
  }
  const out: RenderedFile[][] = []
  let objectsSinceTurn = 0
  let bytesSinceTurn = 0
  let workAtTurn = work.used
  for (const [i, obj] of objects.entries()) {
    const label = labels[i]!
    if (
      objectsSinceTurn >= RENDER_OBJECTS_PER_TURN ||
      bytesSinceTurn >= RENDER_BYTES_PER_TURN ||
      work.used - workAtTurn >= RENDER_WORK_PER_TURN
    ) {
      await pace.turn(label)
      objectsSinceTurn = 0
      bytesSinceTurn = 0
      workAtTurn = work.used
    }
    pace.check(label)
    // An optional object whose secret does not exist writes nothing.
    if (!skipped.has(i)) work.charge(RENDER_WORK.object, label)
    const files = skipped.has(i) ? [] : renderObject(obj, bodies[i], defaultMode, label, values, budget, work)
    const bytes = files.reduce((n, f) => n + f.contents.length, 0)
    // A template's output was charged while it was written.
    if (obj.template === undefined) budget?.charge(bytes, label)
    out.push(files)
    // A template counts as a whole turn's worth of objects: the next object waits for a turn.
    objectsSinceTurn += obj.template === undefined ? 1 : RENDER_OBJECTS_PER_TURN
    bytesSinceTurn += bytes
  }
  return out
}

export function versionObject(obj: SecretObject, files: RenderedFile[], hmacKey: Buffer): RenderedObject {
  return { id: obj.objectName, version: versionOf(hmacKey, obj.configJson, files), files }
}

/**
 * The last gate before the response: the driver's path rules over the whole volume. `objects` are
 * at their places in the class (undefined: an optional object skipped); an error names the object
 * (`object`: its place in the class) or the file (`file`) at fault.
 */
export function checkVolume(objects: readonly (RenderedObject | undefined)[]): void {
  const owner = new Map<string, string>()
  for (const [index, o] of objects.entries()) {
    if (o === undefined) continue
    for (const f of o.files) {
      const problem = filePathProblem(f.path)
      if (problem) {
        throw new ProviderError('BAD_FILE_PATH', `file path ${q(f.path)} ${problem}`, {
          object: { index, name: o.id },
          file: f.path,
        })
      }
      owner.set(f.path, o.id)
    }
  }
  const { duplicates, nested } = pathConflicts(
    objects.flatMap((o) => o?.files.map((f) => f.path) ?? []),
    { maxNested: 1 },
  )
  if (duplicates.length > 0) {
    const file = duplicates[0]!
    throw new ProviderError('BAD_FILE_PATH', `file ${q(file)} would be written by more than one object`, { file })
  }
  if (nested.length > 0) {
    const [dir, file] = nested[0]!
    throw new ProviderError(
      'BAD_FILE_PATH',
      `object ${q(owner.get(file) ?? file)} writes ${q(file)} inside ${q(dir)}, which object ${q(owner.get(dir) ?? dir)} writes as a file`,
      { file },
    )
  }
}
