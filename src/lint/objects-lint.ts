/**
 * Every problem of an `objects` parameter, found by the Mount's own parser.
 *
 * parseObjects (the function every Mount calls) stops at the first bad object. To report all of
 * them at once, each object it rejects is replaced, in the YAML source, by a harmless placeholder
 * with the same name, and the text is parsed again, until it passes. So every message is one a
 * Mount would give for that object, word for word; nothing here validates on its own. The YAML is
 * read separately only to know where each object starts and ends.
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml'
import { isProviderError, type ErrorCode } from '../errors.js'
import { filePathProblem } from '../request/file-paths.js'
import { DIRECTORY_FORMATS, parseObjects } from '../request/objects.js'
import type { OutputFormat, SecretObject } from '../request/types.js'

export interface ObjectProblem {
  /** The message a Mount would fail with, verbatim. */
  message: string
  code: ErrorCode
  /** The object at fault (its index in the list), when the problem is one object's. */
  index?: number
  /** 1-based line of that object inside the `objects` text. */
  line?: number
}

export interface ObjectsLint {
  problems: ObjectProblem[]
  /** The parsed objects, when the whole text passes as it is. */
  objects?: SecretObject[]
  /** 1-based line of each object inside the `objects` text (empty when the text is not a YAML list). */
  lines: number[]
}

interface Item {
  start: number
  end: number
  line: number
  /** objectName as written, when it is a scalar. */
  name?: string
  /** A directory format (files, tls), kept by the placeholder so that `dir/x` objects stay valid. */
  directoryFormat?: OutputFormat
}

/** Where each top-level item of the list is, from a position-only read of the YAML. */
function itemsOf(text: string): Item[] {
  const lineCounter = new LineCounter()
  // Same YAML version as parseObjects; duplicate keys are its business, not this read's.
  const doc = parseDocument(text, { version: '1.1', uniqueKeys: false, lineCounter })
  if (doc.errors.length > 0 || !isSeq(doc.contents)) return []
  return doc.contents.items.map((raw) => {
    const node = raw as Node
    const [start, rangeEnd] = node.range ?? [0, 0]
    // A block map's range takes the line break after it: keep that, the next item needs it.
    let end = rangeEnd
    while (end > start && /\s/.test(text[end - 1]!)) end--
    const item: Item = { start, end, line: lineCounter.linePos(start).line }
    if (isMap(node)) {
      const name = node.get('objectName', true)
      if (isScalar(name) && name.value !== null && typeof name.value !== 'object') {
        item.name = name.source ?? String(name.value)
      }
      const format = node.get('format')
      if (typeof format === 'string' && DIRECTORY_FORMATS.has(format.toLowerCase() as OutputFormat)) {
        item.directoryFormat = format.toLowerCase() as OutputFormat
      }
    }
    return item
  })
}

const BY_INDEX = /^objects\[(\d+)\]: /
const BY_NAME = /^object ("(?:[^"\\]|\\.)*")/
const DUPLICATES = /^objectName must be unique; duplicated: (.*)$/

/** The name in a message: q() quotes it as JSON and cuts it at 120 characters with "…". */
function nameMatches(quoted: string, name: string | undefined): boolean {
  if (name === undefined) return false
  const shown = JSON.parse(quoted) as string
  return shown === name || (shown.endsWith('…') && name.startsWith(shown.slice(0, -1)))
}

/**
 * The objects a message blames (indexes into items), or none when it is about the whole list.
 * `names` are the objects' names in the text as it was parsed (placeholders keep theirs, or get a
 * made-up one); `retry` parses the text with one more object replaced.
 */
function culprits(
  message: string,
  names: ReadonlyArray<string | undefined>,
  replaced: ReadonlyMap<number, string>,
  retry: (index: number) => string | undefined,
): number[] {
  const byIndex = BY_INDEX.exec(message)
  if (byIndex) return [Number(byIndex[1])]
  const dup = DUPLICATES.exec(message)
  if (dup) {
    const duplicated = new Set([...dup[1]!.matchAll(/"(?:[^"\\]|\\.)*"/g)].map((m) => JSON.parse(m[0]) as string))
    const seen = new Set<string>()
    const later: number[] = []
    names.forEach((name, i) => {
      if (name === undefined || !duplicated.has(name)) return
      if (seen.has(name)) later.push(i)
      seen.add(name)
    })
    return later
  }
  const byName = BY_NAME.exec(message)
  if (!byName) return []
  const candidates = names.flatMap((name, i) => (!replaced.has(i) && nameMatches(byName[1]!, name) ? [i] : []))
  // Several objects of that name: the one whose replacement makes this message go away.
  if (candidates.length > 1) {
    const culprit = candidates.find((i) => retry(i) !== message)
    if (culprit !== undefined) return [culprit]
  }
  return candidates.slice(0, 1)
}

function placeholder(item: Item, name: string): string {
  const format = item.directoryFormat ? `, "format": ${JSON.stringify(item.directoryFormat)}` : ''
  return `{"objectName": ${JSON.stringify(name)}, "secretPath": "lint/placeholder"${format}}`
}

function withReplacements(text: string, items: readonly Item[], replaced: ReadonlyMap<number, string>): string {
  let out = text
  for (const [i, replacement] of [...replaced].sort((a, b) => items[b[0]]!.start - items[a[0]]!.start)) {
    const item = items[i]!
    out = out.slice(0, item.start) + replacement + out.slice(item.end)
  }
  return out
}

/** A later message may list the stand-ins among an object's possible references: leave them out. */
function withoutPlaceholders(message: string): string {
  return message
    .replace(/, "lint-placeholder-\d+"/g, '')
    .replace(/"lint-placeholder-\d+"(, )?/g, '')
    .replace(/\(objects it can reference: \)/, '(objects it can reference: none)')
}

/** The message parseObjects gives for this text, or undefined when it passes. */
function firstError(text: string): string | undefined {
  try {
    parseObjects(text)
    return undefined
  } catch (err) {
    if (!isProviderError(err)) throw err
    return err.message
  }
}

export function lintObjects(text: string): ObjectsLint {
  const items = itemsOf(text)
  const lines = items.map((i) => i.line)
  const names = items.map((i) => i.name)
  const problems: ObjectProblem[] = []
  const replaced = new Map<number, string>()
  const replace = (i: number, name: string): void => {
    replaced.set(i, placeholder(items[i]!, name))
    names[i] = name
  }
  for (let round = 0; round <= items.length; round++) {
    let objects: SecretObject[]
    try {
      objects = parseObjects(withReplacements(text, items, replaced))
    } catch (err) {
      if (!isProviderError(err)) throw err
      const retry = (i: number): string | undefined =>
        firstError(
          withReplacements(text, items, new Map([...replaced, [i, placeholder(items[i]!, `lint-placeholder-${i}`)]])),
        )
      const blamed = culprits(err.message, names, replaced, retry).filter((i) => i < items.length)
      if (blamed.length === 0) {
        // About the whole list (YAML, size, not a list): only the first read can say so; later
        // ones could only be about the placeholders.
        if (round === 0) problems.push({ message: err.message, code: err.code })
        break
      }
      const first = blamed[0]!
      const message = round === 0 ? err.message : withoutPlaceholders(err.message)
      problems.push({ message, code: err.code, index: first, line: items[first]!.line })
      const duplicate = DUPLICATES.test(err.message)
      for (const i of blamed) {
        const name = items[i]!.name
        const keepName = !duplicate && name !== undefined && name !== '' && !filePathProblem(name)
        replace(i, keepName ? name : `lint-placeholder-${i}`)
      }
      continue
    }
    return { problems, objects: round === 0 ? objects : undefined, lines }
  }
  return { problems, lines }
}
