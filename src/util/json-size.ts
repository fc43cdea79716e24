/**
 * About how many bytes `value` (a parsed Vault answer) takes as JSON: string
 * lengths plus a few bytes per value and key. Stops counting once past
 * `limit`, so the walk costs no more than the budget allows. Iterative: a
 * deeply nested answer cannot exhaust the stack.
 */
export function jsonSize(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  let size = 0
  const stack: unknown[] = [value]
  while (stack.length > 0 && size <= limit) {
    const v = stack.pop()
    if (typeof v === 'string') size += v.length + 2
    else if (Array.isArray(v)) {
      size += 2
      for (let i = 0; i < v.length && size <= limit; i++) {
        size += 1
        stack.push(v[i])
      }
    } else if (v !== null && typeof v === 'object') {
      size += 2
      for (const k in v) {
        if (!Object.hasOwn(v, k)) continue
        size += k.length + 4
        if (size > limit) break
        stack.push((v as Record<string, unknown>)[k])
      }
    } else size += 8
  }
  return size
}
