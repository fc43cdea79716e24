import t from 'tap'
import { MAX_YAML_DEPTH, MAX_YAML_NODES, yamlTreeProblem } from '../../../src/request/yaml-prescan.js'

const small = { maxDepth: 4, maxNodes: 1000 }

t.test('ordinary objects texts pass', async (t) => {
  const texts = [
    '- objectName: a\n  secretPath: x\n  secretArgs: {a: [1, 2]}\n- objectName: b\n  secretPath: y\n',
    '- {objectName: a, secretPath: x}\n- {objectName: b, secretPath: y}\n',
    'a:\n  b:\n    c: 1\nd:\n  e:\n    f: 1\n',
    '- - - x\n',
    // Block scalar content is one token, whatever it looks like.
    '- objectName: t\n  template: |\n    a: b:\n      - - - - - - [[[[[[ {{x}}\n',
    '- objectName: \'quoted: [[[[\'\n  secretPath: "x{{{{"\n',
  ]
  for (const text of texts) t.equal(yamlTreeProblem(text, small), undefined, text)
})

t.test('deep nesting is refused, flow or block', async (t) => {
  t.equal(yamlTreeProblem('- ' + '['.repeat(3) + ']'.repeat(3), small), undefined)
  t.equal(yamlTreeProblem('- ' + '['.repeat(4) + ']'.repeat(4), small), 'nests collections more than 4 levels deep')
  t.equal(yamlTreeProblem('- {a: {b: [x]}}', small), undefined)
  t.equal(yamlTreeProblem('- {a: {b: [{c: x}]}}', small), 'nests collections more than 4 levels deep')
  t.equal(yamlTreeProblem('- - - - x\n', small), undefined)
  t.equal(yamlTreeProblem('- - - - - x\n', small), 'nests collections more than 4 levels deep')
  t.equal(yamlTreeProblem('a:\n  b:\n    c:\n      d: 1\n', small), undefined)
  t.equal(
    yamlTreeProblem('a:\n  b:\n    c:\n      d:\n        e: 1\n', small),
    'nests collections more than 4 levels deep',
  )
  // Closing a level makes room again.
  t.equal(yamlTreeProblem('- [[[x]]]\n- [[[y]]]\n- {a: {b: {c: z}}}\n', small), undefined)
  // The default: far more than any objects list needs, far less than the parser's stack.
  const deep = '- ' + '['.repeat(MAX_YAML_DEPTH) + ']'.repeat(MAX_YAML_DEPTH)
  t.match(yamlTreeProblem(deep), /^nests collections more than 32 levels deep$/)
  const deepest = '- ' + '['.repeat(100_000) + ']'.repeat(100_000)
  t.match(yamlTreeProblem(deepest), /^nests collections more than 32 levels deep$/)
})

t.test('node floods are refused', async (t) => {
  t.equal(yamlTreeProblem(`- [${'a,'.repeat(400)}]`, small), undefined)
  t.match(yamlTreeProblem(`- [${'a,'.repeat(600)}]`, small), /^has more than 1000 YAML nodes/)
  t.match(yamlTreeProblem(`- [${',:'.repeat(600)}]`, small), /^has more than 1000 YAML nodes/, 'empty nodes count')
  t.match(yamlTreeProblem('- a\n'.repeat(1001), small), /^has more than 1000 YAML nodes/)
  // 1000 objects of six fields each fit the default.
  const fields = [
    'objectName: o',
    'secretPath: secret/data/x',
    'secretKey: k',
    'encoding: utf-8',
    'filePermission: 0640',
    'method: GET',
  ]
  const thousand = Array.from({ length: 1000 }, (_, i) => `- ${fields.map((f) => `${f}${i}`).join('\n  ')}`).join('\n')
  t.equal(yamlTreeProblem(thousand), undefined)
  t.match(yamlTreeProblem(`- [${'a,'.repeat(MAX_YAML_NODES)}]`), /^has more than 25000 YAML nodes/)
})
