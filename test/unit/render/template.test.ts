import t from 'tap'
import { ProviderError } from '../../../src/errors.js'
import { MAX_TEMPLATE_STEPS, renderTemplate, type TemplateInput } from '../../../src/render/template.js'
import { TemplateSyntaxError, checkTemplate } from '../../../src/request/template-syntax.js'
import { thrown } from '../../support/thrown.js'

const WHAT = 'object "app.env" (GET secret/data/app)'
const OBJECTS: Record<string, unknown> = {
  'db/creds': { username: 'v-app-1', password: 'p<&>"\'' },
  'tls.crt': 'CERT',
  config: {
    hosts: [
      { name: 'a', port: 1 },
      { name: 'b', port: 2 },
    ],
    enabled: true,
    none: null,
    empty: [],
  },
}

function input(root: unknown): TemplateInput {
  return {
    root,
    what: WHAT,
    object: (name) => {
      if (!(name in OBJECTS)) throw new Error(`unexpected object ${name}`)
      return OBJECTS[name]
    },
  }
}

function render(template: string, root: unknown = {}): string {
  return renderTemplate(template, input(root))
}

t.test('values are written as they are: no HTML escaping', async (t) => {
  t.equal(render('{{a}}|{{{a}}}|{{&a}}', { a: `<b>&"'` }), `<b>&"'|<b>&"'|<b>&"'`)
  t.equal(
    render('{{n}} {{b}} {{o}} {{l}} {{z}}', { n: 1.5, b: false, o: { y: 1, x: 2 }, l: [1, 'a'], z: null }),
    '1.5 false {"x":2,"y":1} [1,"a"] null',
  )
})

t.test('nested names, quoted keys, and other objects by @objectName', async (t) => {
  t.equal(render('{{a.b[1]}} {{["k.dot"]}}', { a: { b: ['x', 'y'] }, 'k.dot': 'kd' }), 'y kd')
  t.equal(
    render('postgres://{{@db/creds.username}}:{{@db/creds.password}}@{{host}}/app {{@["tls.crt"]}}', { host: 'h' }),
    `postgres://v-app-1:p<&>"'@h/app CERT`,
  )
})

t.test('sections iterate arrays, push maps, test truthiness; standalone lines vanish', async (t) => {
  const tpl =
    '{{#@config.hosts}}\n{{name}}:{{port}}\n{{/@config.hosts}}\n{{#@config.enabled}}on{{/@config.enabled}}{{^@config.empty}} none{{/@config.empty}}\n'
  t.equal(render(tpl), 'a:1\nb:2\non none\n')
  t.equal(
    render('{{#m}}{{x}}-{{top}}{{/m}}', { m: { x: 1 }, top: 't' }),
    '1-t',
    'names resolve through enclosing sections',
  )
  t.equal(render('{{#l}}[{{.}}]{{/l}}', { l: ['a', 'b'] }), '[a][b]')
  t.equal(
    render('{{#l}}{{[1]}}{{/l}}', {
      l: [
        ['a', 'b'],
        ['c', 'd'],
      ],
    }),
    'bd',
    '[i] indexes the current item',
  )
  t.equal(render('{{^@config.none}}null is falsy{{/@config.none}}'), 'null is falsy')
  t.equal(render('{{=<% %>=}}<% a %> {{a}}', { a: 'v' }), 'v {{a}}', 'delimiters can change')
  t.equal(render('{{! a comment }}x'), 'x')
})

t.test('a missing name is an error naming it and what exists there, never values', async (t) => {
  const err = (tpl: string, root: unknown = { user: 'u-secret-1', db: { host: 'h-secret-2' } }): ProviderError =>
    thrown(() => render(tpl, root), ProviderError)
  const e1 = err('{{pasword}}')
  t.equal(e1.code, 'SECRET_KEY_NOT_FOUND')
  t.match(
    e1.message,
    /^object "app\.env" \(GET secret\/data\/app\): template: "pasword": no key "pasword" at the top level; keys present: "db", "user"/,
  )
  t.match(err('{{db.port}}').message, /"db\.port": no key "port" at db; keys present: "host"/)
  t.match(
    err('{{@db/creds.user}}').message,
    /"@db\/creds\.user": no key "user" at the top level; keys present: "password", "username" \(in object "db\/creds"\)/,
  )
  t.match(err('{{#missing}}x{{/missing}}').message, /"missing": no key "missing"/, 'sections too')
  t.match(
    err('{{#db}}{{nope}}{{/db}}').message,
    /template: "nope": no key "nope" at the top level; keys present: "db", "user" \(nor in any enclosing section\)$/,
  )
  t.match(e1.message, /keys present: "db", "user"$/, 'no section note at the top level')
  t.match(err('{{^missing}}x{{/missing}}').message, /"missing": no key "missing"/, 'inverted sections too')
  t.match(err('{{constructor}}').message, /no key "constructor"/, 'no prototype members')
  t.match(err('{{user.length}}').message, /it is a string, which has no keys/)
  for (const tpl of ['{{pasword}}', '{{db.port}}', '{{user.length}}']) t.notMatch(err(tpl).message, /secret-/)
})

t.test('checkTemplate: syntax errors, partials, and the objects referenced', async (t) => {
  t.strictSame(checkTemplate('{{a}} {{@x.y}} {{#@z}}{{@x}}{{/@z}}'), ['x', 'z'])
  const bad = (tpl: string): string => thrown(() => checkTemplate(tpl), TemplateSyntaxError).message
  t.match(bad('{{#a}}x'), /is not a valid Mustache template: Unclosed section "a"/)
  t.match(bad('{{a'), /Unclosed tag/)
  t.match(bad('{{> part}}'), /uses a partial/)
  t.match(bad('{{a..b}}'), /name "a\.\.b" expects a key name/)
  t.match(bad('{{@[0]}}'), /must start with an objectName/)
  t.match(bad('x'.repeat(70 * 1024)), /is longer than/)
})

t.test('rendering is bounded', async (t) => {
  const big = Array.from({ length: 200 }, (_, i) => i)
  const e = thrown(() => render('{{#l}}{{#l}}{{#l}}x{{/l}}{{/l}}{{/l}}', { l: big }), ProviderError)
  t.equal(e.code, 'OUTPUT_FAILED')
  t.match(e.message, new RegExp(`more than ${MAX_TEMPLATE_STEPS} rendering steps`))
  const e2 = thrown(() => render('{{#l}}{{v}}{{/l}}', { l: big.slice(0, 20), v: 'y'.repeat(60_000) }), ProviderError)
  t.match(e2.message, /template output exceeds/)
  // Empty sections iterate without a token inside: each iteration counts, or 50^5 iterations run.
  let iterations = 0
  class Counted<T> extends Array<T> {
    override *[Symbol.iterator](): ArrayIterator<T> {
      for (let i = 0; i < this.length; i++) {
        iterations += 1
        yield this[i]!
      }
      return undefined
    }
  }
  const fifty = Counted.from({ length: 50 }, (_, i) => i)
  const e3 = thrown(() => render(`${'{{#l}}'.repeat(5)}${'{{/l}}'.repeat(5)}`, { l: fifty }), ProviderError)
  t.match(e3.message, new RegExp(`more than ${MAX_TEMPLATE_STEPS} rendering steps`))
  t.ok(iterations <= MAX_TEMPLATE_STEPS, `${iterations} iterations before it stopped`)
  // Under the limit, the same shape renders.
  t.equal(render(`${'{{#l}}'.repeat(2)}.${'{{/l}}'.repeat(2)}`, { l: [...fifty] }), '.'.repeat(2500))
})

t.test('template output is charged as it is written', async (t) => {
  const charged: number[] = []
  const text = renderTemplate('a{{x}}b{{#l}}c{{/l}}', {
    root: { x: 'xyz', l: [1, 2] },
    object: () => undefined,
    what: 'object "t"',
    charge: (n) => charged.push(n),
  })
  t.equal(text, 'axyzbcc')
  t.strictSame(charged, [1, 3, 1, 1, 1])
  const stop = thrown(
    () =>
      renderTemplate('{{#l}}{{x}}{{/l}}', {
        root: { x: 'y'.repeat(1000), l: [1, 2, 3] },
        object: () => undefined,
        what: 'object "t"',
        charge: (n) => {
          charged.push(n)
          if (charged.length > 6) throw new ProviderError('MOUNT_BUDGET_EXCEEDED', 'object "t" takes the Mount past')
        },
      }),
    ProviderError,
  )
  t.equal(stop.code, 'MOUNT_BUDGET_EXCEEDED')
  t.equal(charged.length, 7, 'stopped at the second value')
})
