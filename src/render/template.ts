/**
 * `template`: one file rendered from a Mustache template. The template is
 * parsed by the `mustache` library (delimiters, sections, standalone lines);
 * values are looked up and written here, with these differences from
 * Mustache.render:
 * - nothing is HTML-escaped (`{{x}}` and `{{{x}}}` are the same);
 * - a name that does not resolve is an error naming it and the keys that do
 *   exist where the lookup stopped, never an empty string;
 * - only own keys of the secret data are visible (no prototype members), no
 *   lambdas, no partials: rendering runs no code;
 * - names use the key-path syntax of `secretKeyPath` (`a.b[0]["x.y"]`), and
 *   `@<objectName>…` reads another object of the same SecretProviderClass;
 * - the work and the output size are bounded.
 */
import { ProviderError, q } from '../errors.js'
import { parseName, parseTokens, type Token } from '../request/template-syntax.js'
import { isPlainObject } from '../util/plain-object.js'
import { canonicalJson } from '../util/canonical-json.js'
import { selectPath } from './select.js'

/** Rendered output of one template, in characters. */
export const MAX_TEMPLATE_OUTPUT = 1024 * 1024
/** Tokens rendered plus section iterations, for one template. */
export const MAX_TEMPLATE_STEPS = 100_000

export interface TemplateInput {
  /** The object's own data (the secret's data, or what secretKeyPath selects); undefined without secretPath. */
  root: unknown
  /** The value another object of the Mount selects, for `@objectName`. */
  object(name: string): unknown
  /** Names the object and field in errors. */
  what: string
  /**
   * Counts output characters against the Mount's budget as they are written,
   * so that many templates, each within MAX_TEMPLATE_OUTPUT, are stopped
   * together; throws when the budget is spent.
   */
  charge?: (chars: number) => void
}

interface Frame {
  view: unknown
  parent?: Frame
}

export function renderTemplate(template: string, input: TemplateInput): string {
  const tokens = parseTokens(template)
  let steps = 0
  let size = 0
  const fail = (message: string): never => {
    throw new ProviderError('SECRET_KEY_NOT_FOUND', `${input.what}: template: ${message}`)
  }

  const lookup = (raw: string, frame: Frame): unknown => {
    const name = parseName(raw)
    if (name.object !== undefined) {
      const base = input.object(name.object)
      const found = selectPath(base, name.steps)
      if (!found.ok) fail(`${q(name.text, 80)}: ${found.problem} (in object ${q(name.object)})`)
      return found.ok ? found.value : undefined
    }
    if (name.steps.length === 0) return frame.view
    const first = name.steps[0]!
    if (typeof first === 'number') {
      // `{{[0]}}` indexes the current item.
      const found = selectPath(frame.view, name.steps)
      if (!found.ok) fail(`${q(name.text, 80)}: ${found.problem}`)
      return found.ok ? found.value : undefined
    }
    // The first key is looked up through the enclosing sections, innermost first (Mustache's rule).
    let scope: Frame | undefined = frame
    while (scope) {
      if (isPlainObject(scope.view) && Object.hasOwn(scope.view, first)) break
      scope = scope.parent
    }
    const base = scope ? scope.view : rootFrame.view
    const found = selectPath(base, name.steps)
    if (!found.ok) {
      const where = !scope && frame !== rootFrame ? ' (nor in any enclosing section)' : ''
      fail(`${q(name.text, 80)}: ${found.problem}${where}`)
    }
    return found.ok ? found.value : undefined
  }

  const emit = (text: string): string => {
    size += text.length
    if (size > MAX_TEMPLATE_OUTPUT) {
      throw new ProviderError(
        'OUTPUT_FAILED',
        `${input.what}: template output exceeds ${MAX_TEMPLATE_OUTPUT} characters`,
      )
    }
    input.charge?.(text.length)
    return text
  }
  const step = (): void => {
    if (++steps > MAX_TEMPLATE_STEPS) {
      throw new ProviderError(
        'OUTPUT_FAILED',
        `${input.what}: template needs more than ${MAX_TEMPLATE_STEPS} rendering steps`,
      )
    }
  }
  const falsy = (v: unknown): boolean => !v || (Array.isArray(v) && v.length === 0)

  const render = (list: Token[], frame: Frame): string => {
    let out = ''
    for (const token of list) {
      step()
      const [type, value] = token
      switch (type) {
        case 'text':
          out += emit(value)
          break
        case 'name':
        case '&':
          out += emit(valueText(lookup(value, frame)))
          break
        case '#': {
          const v = lookup(value, frame)
          if (falsy(v)) break
          const inner = token[4] ?? []
          if (Array.isArray(v)) {
            // Every iteration is a step, even of an empty section: `{{#l}}` nested five deep over a
            // 50-item list is 312 million iterations without a single token inside.
            for (const item of v) {
              step()
              out += render(inner, { view: item, parent: frame })
            }
          } else {
            out += render(inner, { view: v, parent: frame })
          }
          break
        }
        case '^':
          if (falsy(lookup(value, frame))) out += render(token[4] ?? [], frame)
          break
        case '>':
          throw new ProviderError('OUTPUT_FAILED', `${input.what}: template: partials are not supported`)
        default:
          // '!' comments and '=' delimiter changes write nothing.
          break
      }
    }
    return out
  }
  const rootFrame: Frame = { view: input.root ?? {} }
  return render(tokens, rootFrame)
}

/** Strings as they are; other JSON values as compact canonical JSON. */
function valueText(value: unknown): string {
  if (typeof value === 'string') return value
  if (value === undefined) return ''
  return canonicalJson(value)
}
