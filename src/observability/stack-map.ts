/**
 * Leads the frames of a logged stack trace from the built daemon (dist/daemon.js, one bundle) back to
 * src/ files and lines, with the bundle's source map and Node's documented `SourceMap` class.
 *
 * Why not `--enable-source-maps`: with it Node maps every call site it is asked for, and pino asks for
 * its caller when the logger is made, so every node pays for the map and Node's mapping code from the
 * start (measured in bench/NOTES.md). Here the map is read when the first stack is
 * logged, and most daemons never log one.
 */
import { readFileSync } from 'node:fs'
import { SourceMap, type SourceMapPayload } from 'node:module'
import { fileURLToPath } from 'node:url'

export type StackMapper = (stack: string) => string

/** The longest map read (the bundle's, kept to what a trace needs by scripts/bundle.mjs, is about 60 KB). */
export const MAX_SOURCE_MAP_BYTES = 4 * 1024 * 1024

/** Reads the map beside `scriptUrl` (`<script>.map`); undefined when there is none or it cannot be used. */
function loadMap(scriptUrl: string): SourceMap | undefined {
  try {
    const text = readFileSync(`${fileURLToPath(scriptUrl)}.map`)
    if (text.length > MAX_SOURCE_MAP_BYTES) return undefined
    return new SourceMap(JSON.parse(text.toString('utf8')) as SourceMapPayload)
  } catch {
    return undefined
  }
}

/**
 * A mapper for frames in the script at `scriptUrl` (a file: URL, as `import.meta.url` gives it). A frame
 * in a package's code, or one the map does not cover, stays as it was; without a map the stack is unchanged.
 */
export function stackMapper(scriptUrl: string): StackMapper {
  let map: SourceMap | undefined | null = null
  const locations = [`${scriptUrl}:`, `${fileURLToPath(scriptUrl)}:`]
  const mapUrl = `${scriptUrl}.map`

  /** `line:column` (1-based, as V8 prints them) in the script, as `file:line:column` of the source. */
  const original = (line: number, column: number): string | undefined => {
    map ??= loadMap(scriptUrl)
    const entry = map?.findEntry(line - 1, column - 1)
    // findEntry answers with the nearest position before: one on an earlier line is not this frame's.
    if (entry === undefined || !('originalSource' in entry) || entry.generatedLine !== line - 1) return undefined
    // A package's positions only mark where its code is (scripts/bundle.mjs): its frame stays as it was.
    if (entry.originalSource.split('/').includes('node_modules')) return undefined
    const file = fileURLToPath(new URL(entry.originalSource, mapUrl))
    return `${file}:${entry.originalLine + 1}:${entry.originalColumn + 1}`
  }

  const mapLine = (text: string): string => {
    for (const location of locations) {
      const at = text.indexOf(location)
      if (at < 0) continue
      const rest = text.slice(at + location.length)
      const [line, column] = rest.split(/[:)]/, 2).map(Number)
      if (!Number.isInteger(line) || !Number.isInteger(column)) return text
      const mapped = original(line!, column!)
      if (mapped === undefined) return text
      const end = at + location.length + `${line}:${column}`.length
      return `${text.slice(0, at)}${mapped}${text.slice(end)}`
    }
    return text
  }

  return (stack) => stack.split('\n').map(mapLine).join('\n')
}
