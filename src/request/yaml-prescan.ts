/**
 * A linear pre-scan of the `objects` YAML, run before the YAML library builds
 * anything. The library's parser and composer keep a syntax tree of every
 * token: 250 KB of nested flow collections (`[[[[…`) took the heap past
 * 128 MiB and the daemon down with it. The scan uses only the library's lexer,
 * which yields one token string at a time and keeps none, and stops at the
 * first token over a limit: the whole text is never held twice.
 */
import { CST, Lexer } from 'yaml'

/** Collections inside collections: an `objects` list needs 4 (list, object, secretArgs, a value in it). */
export const MAX_YAML_DEPTH = 32
/**
 * Tokens that can become a node of the tree: scalars, flow collections
 * (start and end), list items, `:` and `,` (an empty key or value is a node
 * without a scalar).
 * 1000 objects with six fields each come to 19,000; the YAML library needs
 * about 1 KiB of heap per node (2 per flow collection), so 25,000 stay
 * near 25 MiB.
 */
export const MAX_YAML_NODES = 25_000

/** Token types that open a block collection level at their column. */
const BLOCK_INDICATORS = new Set(['seq-item-ind', 'explicit-key-ind'])
const NODE_TOKENS = new Set([
  'single-quoted-scalar',
  'double-quoted-scalar',
  'alias',
  'flow-map-start',
  'flow-seq-start',
  // A collection costs the YAML library about twice what a scalar does: count its end too.
  'flow-map-end',
  'flow-seq-end',
  'seq-item-ind',
  'explicit-key-ind',
  'map-value-ind',
  'comma',
])

export interface YamlLimits {
  maxDepth: number
  maxNodes: number
}

const DEFAULT_LIMITS: YamlLimits = { maxDepth: MAX_YAML_DEPTH, maxNodes: MAX_YAML_NODES }

/**
 * Why `text` would make the YAML library build too deep or too big a tree, or
 * undefined. Depth counts open flow collections (`[`, `{`) plus the block
 * collections around them, estimated from the indentation columns of list
 * items and keys. Time and memory are linear in the text.
 */
export function yamlTreeProblem(text: string, limits: YamlLimits = DEFAULT_LIMITS): string | undefined {
  let nodes = 0
  let flowDepth = 0
  /** Columns of the open block collections, innermost last. */
  const blocks: number[] = []
  let column = 0
  /** Column of the last scalar that started on this line: the key of a `key: value` pair. */
  let keyColumn = 0
  let scalarNext = false

  const openBlock = (col: number): string | undefined => {
    while (blocks.length > 0 && blocks[blocks.length - 1]! >= col) blocks.pop()
    blocks.push(col)
    if (blocks.length + flowDepth > limits.maxDepth) return tooDeep(limits.maxDepth)
    return undefined
  }

  for (const token of new Lexer().lex(text)) {
    // The lexer's control tokens (document start, flow end, scalar marker) are not source text.
    if (token === CST.DOCUMENT || token === CST.FLOW_END || token === CST.SCALAR) {
      if (token === CST.SCALAR) {
        nodes += 1
        if (nodes > limits.maxNodes) return tooMany(limits.maxNodes)
        scalarNext = true
      }
      continue
    }
    const start = column
    const newline = token.lastIndexOf('\n')
    column = newline === -1 ? column + token.length : token.length - newline - 1
    if (scalarNext) {
      // The source of the scalar announced by the previous token (a block scalar spans lines).
      scalarNext = false
      keyColumn = start
      continue
    }
    const type = CST.tokenType(token) ?? 'unknown'
    if (NODE_TOKENS.has(type)) {
      nodes += 1
      if (nodes > limits.maxNodes) return tooMany(limits.maxNodes)
    }
    switch (type) {
      case 'single-quoted-scalar':
      case 'double-quoted-scalar':
      case 'alias':
        keyColumn = start
        break
      case 'flow-map-start':
      case 'flow-seq-start':
        flowDepth += 1
        if (blocks.length + flowDepth > limits.maxDepth) return tooDeep(limits.maxDepth)
        break
      case 'flow-map-end':
      case 'flow-seq-end':
        if (flowDepth > 0) flowDepth -= 1
        break
      case 'map-value-ind':
        if (flowDepth === 0) {
          const problem = openBlock(keyColumn)
          if (problem) return problem
        }
        break
      default:
        if (BLOCK_INDICATORS.has(type) && flowDepth === 0) {
          const problem = openBlock(start)
          if (problem) return problem
        }
    }
  }
  return undefined
}

function tooMany(max: number): string {
  return `has more than ${max} YAML nodes (keys, values and list items); list fewer objects or split them over several SecretProviderClasses`
}

function tooDeep(max: number): string {
  return `nests collections more than ${max} levels deep`
}
