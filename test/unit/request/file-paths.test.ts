import fc from 'fast-check'
import t from 'tap'
import { MAX_ELEMENT_BYTES, MAX_PATH_BYTES, filePathProblem, pathConflicts } from '../../../src/request/file-paths.js'

/**
 * Lexical clean of a slash-separated path, following the rules documented
 * for Go's path/filepath.Clean on Unix: collapse repeated separators, drop
 * "." elements, let ".." cancel the element before it, drop ".." right after
 * the root, drop a trailing slash, and give "." for an empty result.
 */
function goClean(path: string): string {
  if (path === '') return '.'
  const rooted = path.startsWith('/')
  const out: string[] = []
  for (const el of path.split('/')) {
    if (el === '' || el === '.') continue
    if (el === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop()
      else if (!rooted) out.push('..')
      continue
    }
    out.push(el)
  }
  const joined = out.join('/')
  if (rooted) return `/${joined}`
  return joined === '' ? '.' : joined
}

/** The driver's checks on a MountResponse file path (contract §3). */
function driverAccepts(path: string): boolean {
  if (goClean(path) !== path) return false
  if (path === '' || path.startsWith('/')) return false
  const elements = path.split('/')
  if (elements.includes('..')) return false
  if (elements[0]!.startsWith('..')) return false
  if (elements.some((e) => Buffer.byteLength(e) > 255)) return false
  return Buffer.byteLength(path) <= 4096
}

t.test('the reference clean behaves like Go', async (t) => {
  const cases: Array<[string, string]> = [
    ['', '.'],
    ['a', 'a'],
    ['a/b', 'a/b'],
    ['a//b', 'a/b'],
    ['a/b/', 'a/b'],
    ['./a', 'a'],
    ['a/./b', 'a/b'],
    ['a/../b', 'b'],
    ['../a', '../a'],
    ['/../a', '/a'],
    ['a/..', '.'],
    ['/', '/'],
  ]
  for (const [input, clean] of cases) t.equal(goClean(input), clean, JSON.stringify(input))
})

t.test('accepted paths', async (t) => {
  for (const path of [
    'a',
    'db-password',
    'tls.crt',
    '.hidden',
    'nested/bar',
    'a/b/c/d.json',
    'a/..b',
    'a/...',
    'a/.x/..y',
    '.x..',
    'with space',
    'ünïcödé/ファイル',
    'x'.repeat(MAX_ELEMENT_BYTES),
  ]) {
    t.equal(filePathProblem(path), undefined, JSON.stringify(path))
  }
})

t.test('refused paths, with the reason', async (t) => {
  const cases: Array<[string, string]> = [
    ['', 'is empty'],
    ['/etc/passwd', 'is absolute; it must be relative to the volume'],
    ['/', 'is absolute; it must be relative to the volume'],
    ['..', 'contains a ".." element (path traversal)'],
    ['../x', 'contains a ".." element (path traversal)'],
    ['a/../x', 'contains a ".." element (path traversal)'],
    ['a/..', 'contains a ".." element (path traversal)'],
    ['..data', 'starts with "..", which the driver reserves for its own files'],
    ['..data/x', 'starts with "..", which the driver reserves for its own files'],
    ['...', 'starts with "..", which the driver reserves for its own files'],
    ['..2024_01_01_00_00_00.123', 'starts with "..", which the driver reserves for its own files'],
    ['a/', 'ends with "/"'],
    ['a/b/', 'ends with "/"'],
    ['a//b', 'contains an empty element ("//")'],
    ['./a', 'contains a "." element'],
    ['a/./b', 'contains a "." element'],
    ['.', 'contains a "." element'],
    ['a\nb', 'contains a control character'],
    ['a\u0000b', 'contains a control character'],
    ['\u001b[31mred', 'contains a control character'],
    ['a\u007f', 'contains a control character'],
    ['x'.repeat(MAX_ELEMENT_BYTES + 1), `has an element longer than ${MAX_ELEMENT_BYTES} bytes`],
    // 128 two-byte characters: 128 characters but 256 bytes.
    ['é'.repeat(128), `has an element longer than ${MAX_ELEMENT_BYTES} bytes`],
    [`ok/${'é'.repeat(128)}`, `has an element longer than ${MAX_ELEMENT_BYTES} bytes`],
  ]
  for (const [path, reason] of cases) t.equal(filePathProblem(path), reason, JSON.stringify(path))
})

t.test('whole path length limit is in bytes, 4096 inclusive', async (t) => {
  t.equal(MAX_PATH_BYTES, 4096)
  t.equal(MAX_ELEMENT_BYTES, 255)
  // 16 elements of 255 bytes + 15 slashes = 4095 bytes.
  const base = Array(16).fill('x'.repeat(255)).join('/')
  t.equal(Buffer.byteLength(base), 4095)
  t.equal(filePathProblem(base), undefined)
  t.equal(filePathProblem(`${base}/y`), `is longer than ${MAX_PATH_BYTES} bytes`)
  const at4096 = `${'a/'.repeat(2047)}bb`
  t.equal(Buffer.byteLength(at4096), 4096)
  t.equal(filePathProblem(at4096), undefined)
  t.equal(filePathProblem(`${at4096}c`), `is longer than ${MAX_PATH_BYTES} bytes`)
  t.equal(filePathProblem(`${'a/'.repeat(2047)}bé`), `is longer than ${MAX_PATH_BYTES} bytes`)
})

t.test('never accepts what the driver refuses; accepts what it accepts (except "." and control chars)', async (t) => {
  const atoms = ['a', 'b', '.', '..', '', '...', '..data', '.x', 'x..']
  const paths: string[] = []
  const build = (prefix: string[], depth: number): void => {
    if (prefix.length > 0) paths.push(prefix.join('/'))
    if (depth === 0) return
    for (const atom of atoms) build([...prefix, atom], depth - 1)
  }
  build([], 4)
  paths.push('/a', '/', '//a')
  let unsound = 0
  let incomplete = 0
  for (const path of paths) {
    const ours = filePathProblem(path) === undefined
    const driver = driverAccepts(path)
    if (ours && !driver) {
      unsound++
      t.fail(`accepted ${JSON.stringify(path)}, which the driver refuses`)
    }
    if (!ours && driver && path !== '.') {
      incomplete++
      t.fail(`refused ${JSON.stringify(path)} (${filePathProblem(path)}), which the driver accepts`)
    }
  }
  t.ok(paths.length > 7000, `${paths.length} paths checked`)
  t.equal(unsound, 0)
  t.equal(incomplete, 0)
})

t.test('pathConflicts', async (t) => {
  t.strictSame(pathConflicts([]), { duplicates: [], nested: [] })
  t.strictSame(pathConflicts(['a', 'b', 'c/d', 'c/e', 'ab', 'a.b']), { duplicates: [], nested: [] })
  t.strictSame(pathConflicts(['a', 'b', 'a', 'a', 'b', 'c']).duplicates, ['a', 'b'])
  t.strictSame(pathConflicts(['a', 'a/b']).nested, [['a', 'a/b']])
  t.strictSame(pathConflicts(['a/b', 'a']).nested, [['a', 'a/b']])
  t.strictSame(pathConflicts(['a', 'a/b/c']).nested, [['a', 'a/b/c']])
  t.strictSame(pathConflicts(['a/b', 'a/b/c']).nested, [['a/b', 'a/b/c']])
  t.strictSame(pathConflicts(['a', 'a/b', 'a/b/c']).nested, [
    ['a', 'a/b'],
    ['a', 'a/b/c'],
    ['a/b', 'a/b/c'],
  ])
  // "ab" is not a directory of "a" nor the other way round.
  t.strictSame(pathConflicts(['a', 'ab/c', 'a.b/c']).nested, [])
  const both = pathConflicts(['x', 'x', 'x/y'])
  t.strictSame(both.duplicates, ['x'])
  t.strictSame(both.nested, [['x', 'x/y']])
})

t.test('pathConflicts agrees with the pairwise definition, flat names and nested ones', async (t) => {
  // Every pair compared as text: a duplicate, or one path a directory of the other.
  const pairwise = (paths: string[]): { duplicates: string[]; nested: Array<[string, string]> } => {
    const unique = [...new Set(paths)]
    const duplicates = unique.filter((p) => paths.indexOf(p) !== paths.lastIndexOf(p))
    const nested: Array<[string, string]> = []
    for (const p of unique) for (const d of unique) if (p.startsWith(`${d}/`) && d.length > 0) nested.push([d, p])
    return { duplicates, nested }
  }
  const sortPairs = (pairs: Array<[string, string]>): string[] => pairs.map((p) => p.join(' > ')).sort()
  // Few letters and short names, so duplicates and directory prefixes are frequent.
  const name = fc.array(fc.constantFrom('a', 'b'), { minLength: 1, maxLength: 2 }).map((parts) => parts.join(''))
  const paths = fc.array(
    fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/')),
    { maxLength: 8 },
  )
  fc.assert(
    fc.property(paths, (ps) => {
      const got = pathConflicts(ps, { maxNested: 1000 })
      const want = pairwise(ps)
      return (
        JSON.stringify(got.duplicates.sort()) === JSON.stringify(want.duplicates.sort()) &&
        JSON.stringify(sortPairs(got.nested)) === JSON.stringify(sortPairs(want.nested))
      )
    }),
  )
  t.pass('pathConflicts matched the pairwise definition on every generated set')
})

t.test('pathConflicts on thousands of deep names: correct results', async (t) => {
  // 120 names of 2,000 levels once took 6.8 s (every prefix built as a string); the results are what is asserted.
  const deep = (i: number): string => `${Array.from({ length: 2000 }, () => 'd').join('/')}/f${i}`
  const names = Array.from({ length: 3000 }, (_, i) => (i < 120 ? deep(i) : `n${i}/${'e/'.repeat(100)}x`))
  t.strictSame(pathConflicts(names), { duplicates: [], nested: [] })
  // A file at one of the shared directories: every name below it conflicts; the first few are reported.
  const dir = Array.from({ length: 1000 }, () => 'd').join('/')
  const withFile = [...names, dir]
  const found = pathConflicts(withFile)
  t.equal(found.nested.length, 16, 'bounded report')
  t.strictSame(found.nested[0], [dir, deep(0)])
  t.strictSame(pathConflicts(withFile, { maxNested: 1000 }).nested.length, 120)
  t.strictSame(pathConflicts(withFile, { isDirectory: (p) => p === dir }).nested, [])
  // Same hash input order does not matter; duplicates are still found among many.
  const dups = pathConflicts([...names, names[5]!, names[2999]!])
  t.strictSame(dups.duplicates, [names[5], names[2999]])
  // A chain of nested names: n²/2 pairs exist, at most maxNested are built.
  const chain = Array.from({ length: 2000 }, (_, i) => Array.from({ length: i + 1 }, () => 'c').join('/'))
  t.equal(pathConflicts(chain).nested.length, 16)
  t.strictSame(pathConflicts(chain).nested[0], ['c', 'c/c'])
  // Prefixes that are not at a "/" never conflict.
  t.strictSame(pathConflicts(['ab', 'abc/d', 'a/b', 'a.b/c']).nested, [])
})
