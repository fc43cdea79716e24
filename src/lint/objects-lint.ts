/**
 * Every problem of an `objects` parameter, found by the Mount's own parser in one pass
 * (collectObjects: parseObjects fails with the first of them), each placed on its object's line.
 * Nothing here validates on its own; the YAML is read separately only to know where each object
 * starts.
 */
import { isSeq, LineCounter, parseDocument, type Node } from 'yaml'
import type { ErrorCode, ProviderError } from '../errors.js'
import { collectObjects } from '../request/objects.js'
import type { SecretObject } from '../request/types.js'

export interface ObjectProblem {
  /** The message a Mount would fail with, verbatim. */
  message: string
  code: ErrorCode
  /** The object at fault (its index in the list), when the problem is one object's. */
  index?: number
  /** Its objectName, when it has one. */
  object?: string
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

/** Where each top-level item of the list starts, from a position-only read of the YAML. */
function linesOf(text: string): number[] {
  const lineCounter = new LineCounter()
  // Same YAML version as parseObjects; duplicate keys are its business, not this read's.
  const doc = parseDocument(text, { version: '1.1', uniqueKeys: false, lineCounter })
  if (doc.errors.length > 0 || !isSeq(doc.contents)) return []
  return doc.contents.items.map((item) => lineCounter.linePos((item as Node).range?.[0] ?? 0).line)
}

/**
 * The entry a problem is about: the object it names, else the one whose name is the file it names
 * (of two objects of one name, the second: the first that collides).
 */
function indexOf(issue: ProviderError, names: ReadonlyArray<string | undefined>): number | undefined {
  if (issue.fields.object !== undefined) return issue.fields.object.index
  const file = issue.fields.file
  if (file === undefined) return undefined
  const first = names.indexOf(file)
  const second = names.indexOf(file, first + 1)
  if (first === -1) return undefined
  return second === -1 ? first : second
}

export function lintObjects(text: string): ObjectsLint {
  const { objects, issues, names } = collectObjects(text)
  const lines = linesOf(text)
  const problems = issues.map((issue): ObjectProblem => {
    const index = indexOf(issue, names)
    const object = issue.fields.object?.name ?? issue.fields.file
    return {
      message: issue.message,
      code: issue.code,
      ...(index === undefined ? {} : { index, line: lines[index] }),
      ...(object === undefined ? {} : { object }),
    }
  })
  return { problems, objects: problems.length === 0 ? objects : undefined, lines }
}
