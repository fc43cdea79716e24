/**
 * How deep a parsed JSON value is nested, found without recursion: a Vault answer comes from a server a
 * pod may name, and every recursive walk over it (canonical JSON, formats, templates) would overflow
 * the stack on a value nested a few thousand levels deep.
 */

/** Whether `value` nests arrays and objects more than `max` levels deep (a scalar is level 0). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    if (depth + 1 > max) return true
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1])
    }
  }
  return false
}
