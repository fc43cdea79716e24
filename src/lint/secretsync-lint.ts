/**
 * `vault-csi-provider lint` on SecretSyncs (the Secrets Store Sync Controller's, docs/sync-controller.md):
 * each is resolved to its SecretProviderClass among everything linted (same namespace), and checked
 * for what would make its sync fail or surprise: what the API server refuses in the SecretSync (its
 * CRD's patterns), a class that is not there, a `sourcePath` naming no file the class writes, a
 * `kubernetes.io/tls` Secret the controller cannot fill; and, once per class, what does not work under
 * the controller: an audience it requests no token for, objects that may answer nothing (no object
 * version), `secretObjects` (the driver's sync, ignored there), objects read for nothing. The class
 * itself is checked by spc-lint.ts as for any pod.
 *
 * spc-lint.ts hands every document here (collect); the command asks for the problems once every file
 * is read (lint), since a SecretSync and its class may be in different files.
 */
import { isMap, isSeq, type Document, type Node, type YAMLMap } from 'yaml'
import { isProviderError, q } from '../errors.js'
import { DEFAULT_FLAVOUR, FLAVOURS, flavourOfProvider, type ProviderFlavour } from '../config/flavour.js'
import { KUBERNETES_SECRET_MAX_BYTES } from '../mount/sync-controller.js'
import { DIRECTORY_FORMATS, parseObjects } from '../request/objects.js'
import { readParameter, type ParameterKey } from '../request/parameters.js'
import { checkTemplate } from '../request/template-syntax.js'
import type { SecretObject } from '../request/types.js'
import { canonicalJson } from '../util/canonical-json.js'
import { formatBytes } from '../util/format-bytes.js'
import type { LintProblem } from './spc-lint.js'

/** Codes of the findings about SecretSyncs (besides MANIFEST and the Mount's NO_POD_TOKEN, NO_OBJECT_VERSIONS). */
export const SECRETSYNC_LINT_CODES = {
  /** No SecretProviderClass of that name in the SecretSync's namespace among the files linted. */
  SECRETSYNC_CLASS: 'error',
  /** A sourcePath naming no file the class writes. */
  SECRETSYNC_SOURCE: 'error',
  /** A sourcePath naming the file of an optional object: the sync fails while Vault has no such secret. */
  SECRETSYNC_OPTIONAL: 'warning',
  /** A secretObject the controller cannot write (kubernetes.io/tls keys). */
  SECRETSYNC_TYPE: 'error',
  /** The class's secretObjects: the CSI driver's sync, which the controller ignores. */
  SECRETSYNC_SECRET_OBJECTS: 'warning',
  /** Objects no sourcePath uses: read from Vault on every poll, and counted in the 1 MiB of the answer. */
  SECRETSYNC_UNUSED: 'warning',
  /** Two SecretSyncs of one service account reading one Vault request: one answer (one dynamic credential) for both. */
  SECRETSYNC_SHARED: 'warning',
} as const

export type SecretSyncLintCode = keyof typeof SECRETSYNC_LINT_CODES

/** The SecretSync CRD's patterns (v0.0.4): the API server refuses other values. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const DATA_KEY = /^[A-Za-z0-9.]([-A-Za-z0-9]+([-._a-zA-Z0-9]?[A-Za-z0-9])*)?(\/([0-9]+))*$/
const MAX_FIELD = 253
const GROUP = 'secret-sync.x-k8s.io'
const VERSION = 'v1alpha1'

export interface SecretSyncLintOptions {
  /** As LintOptions.provider: spec.provider of the classes checked; default vault and openbao. */
  provider?: string
  /** The controller's --token-request-audience (its chart's tokenRequestAudience). */
  audiences: readonly string[]
}

type Line = (node: Node | null | undefined) => number

interface Located {
  file: string
  line: number
  name: string | undefined
  /** metadata.namespace; undefined: the namespace it is applied to (kubectl -n), which matches any. */
  namespace: string | undefined
}

interface ClassDoc extends Located {
  provider: string
  /** Another provider's class: a SecretSync of it is skipped, not reported as missing its class. */
  foreign: boolean
  flavour: ProviderFlavour
  params: Map<string, string>
  /** Line of each parameter's key. */
  paramLines: Map<string, number>
  parametersLine: number
  /** Line of spec.secretObjects, when the class has them. */
  secretObjectsLine?: number
}

interface DataItem {
  sourcePath: unknown
  targetKey: unknown
  line: number
}

interface SyncDoc extends Located {
  apiVersion: unknown
  className: unknown
  classLine: number
  serviceAccount: unknown
  serviceAccountLine: number
  type: unknown
  typeLine: number
  /** undefined: spec.secretObject.data is not a list. */
  data: DataItem[] | undefined
  dataLine: number
}

function valueAt(map: YAMLMap | undefined, key: string): unknown {
  return map?.get(key)
}

function mapAt(doc: Document | YAMLMap, path: string[]): YAMLMap | undefined {
  const node = (doc as Document).getIn(path, true) as Node | undefined
  return isMap(node) ? node : undefined
}

function nodeAt(map: YAMLMap | undefined, key: string): Node | undefined {
  return map?.items.find((p) => (p.key as { value?: unknown } | null)?.value === key)?.key as Node | undefined
}

const where = (d: Located): string => `${d.namespace === undefined ? '' : `${d.namespace}/`}${d.name ?? '(unnamed)'}`

/** The file an object writes, or undefined for a directory (format files / tls): a sourcePath cannot name one. */
function fileOf(o: SecretObject): string | undefined {
  return o.template === undefined && o.format !== undefined && DIRECTORY_FORMATS.has(o.format)
    ? undefined
    : o.objectName
}

/** The objects of a class, or undefined when they do not parse (spc-lint reports why). */
function objectsOf(c: ClassDoc): SecretObject[] | undefined {
  const text = readParameter(c.params, 'objects', c.flavour)?.value
  if (text === undefined) return undefined
  try {
    return parseObjects(text)
  } catch (err) {
    if (isProviderError(err)) return undefined
    throw err
  }
}

/**
 * SecretSyncs and SecretProviderClasses of every file linted; the problems once all are read. One
 * per lint run.
 */
export class SecretSyncCollector {
  private readonly classes: ClassDoc[] = []
  private readonly syncs: SyncDoc[] = []

  constructor(private readonly opts: SecretSyncLintOptions) {}

  /** Keeps a SecretProviderClass or a SecretSync; true when the document is a SecretSync (so not "other"). */
  collect(value: unknown, doc: Document, file: string, lineOf: Line): boolean {
    if (value === null || typeof value !== 'object') return false
    const { kind, apiVersion } = value as { kind?: unknown; apiVersion?: unknown }
    const metadata = mapAt(doc, ['metadata'])
    const name = valueAt(metadata, 'name')
    const namespace = valueAt(metadata, 'namespace')
    const located = {
      file,
      line: lineOf(doc.contents as Node),
      name: typeof name === 'string' && name !== '' ? name : undefined,
      namespace: typeof namespace === 'string' && namespace !== '' ? namespace : undefined,
    }
    const spec = mapAt(doc, ['spec'])
    if (kind === 'SecretProviderClass') {
      this.addClass(located, spec, lineOf)
      return false
    }
    if (kind !== 'SecretSync' || typeof apiVersion !== 'string' || !apiVersion.startsWith(`${GROUP}/`)) return false
    const secretObject = spec === undefined ? undefined : mapAt(spec, ['secretObject'])
    const dataNode = secretObject?.get('data', true) as Node | undefined
    this.syncs.push({
      ...located,
      apiVersion,
      className: valueAt(spec, 'secretProviderClassName'),
      classLine: lineOf(nodeAt(spec, 'secretProviderClassName') ?? (doc.contents as Node)),
      serviceAccount: valueAt(spec, 'serviceAccountName'),
      serviceAccountLine: lineOf(nodeAt(spec, 'serviceAccountName') ?? (doc.contents as Node)),
      type: valueAt(secretObject, 'type'),
      typeLine: lineOf(nodeAt(secretObject, 'type') ?? nodeAt(spec, 'secretObject') ?? (doc.contents as Node)),
      data: isSeq(dataNode)
        ? dataNode.items.map((item) => ({
            sourcePath: isMap(item) ? item.get('sourcePath') : undefined,
            targetKey: isMap(item) ? item.get('targetKey') : undefined,
            line: lineOf(item as Node),
          }))
        : undefined,
      dataLine: lineOf(nodeAt(secretObject, 'data') ?? nodeAt(spec, 'secretObject') ?? (doc.contents as Node)),
    })
    return true
  }

  private addClass(located: Located, spec: YAMLMap | undefined, lineOf: Line): void {
    const at = (node: Node | undefined): number => (node === undefined ? located.line : lineOf(node))
    const provider = valueAt(spec, 'provider')
    // The classes spc-lint checks (lintSpcDocument): ours, or the one provider lint was told.
    let flavour: ProviderFlavour | undefined
    if (this.opts.provider === undefined) flavour = flavourOfProvider(provider)
    else if (provider === this.opts.provider) flavour = flavourOfProvider(provider) ?? DEFAULT_FLAVOUR
    const params = new Map<string, string>()
    const paramLines = new Map<string, number>()
    const paramsNode = spec === undefined ? undefined : mapAt(spec, ['parameters'])
    for (const pair of paramsNode?.items ?? []) {
      const key = (pair.key as { value?: unknown } | null)?.value
      const value = (pair.value as { value?: unknown } | null)?.value
      if (typeof key !== 'string' || typeof value !== 'string') continue
      params.set(key, value)
      paramLines.set(key, at(pair.key as Node))
    }
    const secretObjects = nodeAt(spec, 'secretObjects')
    this.classes.push({
      ...located,
      provider: typeof provider === 'string' ? provider : '',
      flavour: flavour ?? DEFAULT_FLAVOUR,
      foreign: flavour === undefined,
      params,
      paramLines,
      parametersLine: at(nodeAt(spec, 'parameters')),
      ...(secretObjects !== undefined && spec?.get('secretObjects') != null
        ? { secretObjectsLine: at(secretObjects) }
        : {}),
    })
  }

  /** The class a SecretSync reads: same name, same namespace (an unnamed namespace matches any). */
  private classOf(s: SyncDoc): ClassDoc | undefined {
    const named = this.classes.filter((c) => c.name === s.className)
    return (
      named.find((c) => c.namespace === s.namespace) ??
      named.find((c) => c.namespace === undefined || s.namespace === undefined)
    )
  }

  /**
   * Every problem of every SecretSync collected, and of the classes they use; `checked`: SecretSyncs whose
   * class is ours or missing, `skipped`: those of another provider's class.
   */
  lint(): { problems: LintProblem[]; checked: number; skipped: number } {
    const problems: LintProblem[] = []
    let checked = 0
    let skipped = 0
    const uses = new Map<ClassDoc, SyncDoc[]>()
    // Who reads what, by the SecretSync's namespace and service account: the controller's identity.
    const requests = new Map<string, SyncDoc>()
    for (const s of this.syncs) {
      const add = (code: LintProblem['code'], severity: LintProblem['severity'], line: number, message: string) =>
        problems.push({ file: s.file, line, severity, code, secretSync: where(s), message })
      const c = this.classOf(s)
      if (c?.foreign === true) {
        skipped += 1
        continue
      }
      checked += 1
      this.manifest(s, add)
      if (typeof s.className !== 'string' || s.className === '') continue
      if (!c) {
        const elsewhere = this.classes.filter((k) => k.name === s.className && !k.foreign)
        add(
          'SECRETSYNC_CLASS',
          'error',
          s.classLine,
          `spec.secretProviderClassName ${q(s.className)}: no SecretProviderClass of that name in namespace ` +
            `${q(s.namespace ?? '(unset)')} among the files linted` +
            (elsewhere.length > 0
              ? ` (there is one in ${elsewhere.map((k) => q(k.namespace ?? '(unset)')).join(', ')}; the controller reads the class of the SecretSync's own namespace)`
              : '; the controller fails every sync of it (ControllerSPCError)'),
        )
        continue
      }
      uses.set(c, [...(uses.get(c) ?? []), s])
      const objects = objectsOf(c)
      if (objects === undefined) continue
      this.sources(s, c, objects, add)
      this.shared(s, c, objects, requests, add)
    }
    for (const [c, syncs] of uses) problems.push(...this.classUnderController(c, syncs))
    return { problems, checked, skipped }
  }

  /** What the API server refuses in a SecretSync (the CRD's schema), and the controller's own rules. */
  private manifest(
    s: SyncDoc,
    add: (code: LintProblem['code'], sev: 'error', line: number, msg: string) => void,
  ): void {
    if (s.apiVersion !== `${GROUP}/${VERSION}`) {
      add(
        'MANIFEST',
        'error',
        s.line,
        `apiVersion ${q(String(s.apiVersion))}: the controller's CRD (v0.0.4) serves ${GROUP}/${VERSION} only`,
      )
    }
    if (s.name === undefined)
      add('MANIFEST', 'error', s.line, 'metadata.name is missing (it is also the name of the Secret)')
    const dnsField = (value: unknown, field: string, line: number, what: string): void => {
      if (typeof value === 'string' && value.length <= MAX_FIELD && DNS_SUBDOMAIN.test(value)) return
      add(
        'MANIFEST',
        'error',
        line,
        value === undefined || value === ''
          ? `${field} is missing: ${what}`
          : `${field} ${q(String(value))} must be a Kubernetes name (lower-case letters, digits, "-" and ".", at most ${MAX_FIELD})`,
      )
    }
    dnsField(s.className, 'spec.secretProviderClassName', s.classLine, 'the SecretProviderClass to read')
    dnsField(
      s.serviceAccount,
      'spec.serviceAccountName',
      s.serviceAccountLine,
      'the service account the provider logs in to Vault as',
    )
    if (typeof s.type !== 'string' || s.type === '') {
      add(
        'MANIFEST',
        'error',
        s.typeLine,
        'spec.secretObject.type is missing: the Secret type (e.g. Opaque or kubernetes.io/tls)',
      )
    }
    if (s.data === undefined || s.data.length === 0) {
      add(
        'MANIFEST',
        'error',
        s.dataLine,
        'spec.secretObject.data is missing: list the files (sourcePath) to copy into the Secret (targetKey)',
      )
      return
    }
    const keys = new Set<string>()
    s.data.forEach((d, i) => {
      for (const [field, value] of [
        ['sourcePath', d.sourcePath],
        ['targetKey', d.targetKey],
      ] as const) {
        if (typeof value === 'string' && value.length <= MAX_FIELD && DATA_KEY.test(value)) continue
        add(
          'MANIFEST',
          'error',
          d.line,
          typeof value !== 'string' || value === ''
            ? `spec.secretObject.data[${i}].${field} is missing`
            : `spec.secretObject.data[${i}].${field} ${q(value)} is refused by the API server: letters, digits, "-", "_" and "." ` +
                `(no "/" except before digits), at most ${MAX_FIELD}` +
                (field === 'sourcePath' && value.includes('/')
                  ? '; so no file inside a directory (format files or tls) can be synced'
                  : ''),
        )
      }
      if (typeof d.targetKey === 'string') {
        if (keys.has(d.targetKey)) {
          add('MANIFEST', 'error', d.line, `spec.secretObject.data[${i}].targetKey ${q(d.targetKey)} is listed twice`)
        }
        keys.add(d.targetKey)
      }
    })
    if (s.type === 'kubernetes.io/tls') {
      const bad = [...keys].filter((k) => k !== 'tls.crt' && k !== 'tls.key')
      if (bad.length > 0) {
        add(
          'SECRETSYNC_TYPE',
          'error',
          s.dataLine,
          `a kubernetes.io/tls Secret: the controller fills only targetKey "tls.crt" and "tls.key" (each from a PEM ` +
            `bundle's certificates or its key), not ${bad.map((k) => q(k)).join(', ')}`,
        )
      }
      for (const need of ['tls.crt', 'tls.key'].filter((k) => !keys.has(k))) {
        add('SECRETSYNC_TYPE', 'error', s.dataLine, `a kubernetes.io/tls Secret needs the targetKey ${q(need)}`)
      }
    }
  }

  /** Each sourcePath names a file the class writes; an optional object's may be missing. */
  private sources(
    s: SyncDoc,
    c: ClassDoc,
    objects: SecretObject[],
    add: (code: LintProblem['code'], sev: LintProblem['severity'], line: number, msg: string) => void,
  ): void {
    const byFile = new Map(objects.flatMap((o) => (fileOf(o) === undefined ? [] : [[fileOf(o)!, o] as const])))
    for (const [i, d] of (s.data ?? []).entries()) {
      if (typeof d.sourcePath !== 'string' || !DATA_KEY.test(d.sourcePath)) continue // reported by manifest()
      const o = byFile.get(d.sourcePath)
      if (o?.optional === true) {
        add(
          'SECRETSYNC_OPTIONAL',
          'warning',
          d.line,
          `spec.secretObject.data[${i}].sourcePath ${q(d.sourcePath)} is the file of optional object ${q(o.objectName)} ` +
            `of SecretProviderClass ${q(where(c))}: while Vault has no such secret, the file is missing and every sync fails`,
        )
      }
      if (o) continue
      const directory = objects.find((k) => k.objectName === d.sourcePath && fileOf(k) === undefined)
      add(
        'SECRETSYNC_SOURCE',
        'error',
        d.line,
        `spec.secretObject.data[${i}].sourcePath ${q(d.sourcePath)} is not a file SecretProviderClass ${q(where(c))} writes: ` +
          (directory
            ? `object ${q(directory.objectName)} writes a directory (format ${directory.format}), whose files no sourcePath can name; ` +
              'write the value with a template (one file) instead'
            : byFile.size > 0
              ? `its files are ${[...byFile.keys()].map((f) => q(f)).join(', ')}`
              : 'it writes no file a sourcePath can name'),
      )
    }
  }

  /**
   * The controller's Mounts carry its own pod for every SecretSync: identities are the SecretSync's namespace
   * and service account, so two SecretSyncs of one service account get one answer for one request.
   */
  private shared(
    s: SyncDoc,
    c: ClassDoc,
    objects: SecretObject[],
    seen: Map<string, SyncDoc>,
    add: (code: LintProblem['code'], sev: LintProblem['severity'], line: number, msg: string) => void,
  ): void {
    if (typeof s.serviceAccount !== 'string') return
    const login = (key: ParameterKey): string => readParameter(c.params, key, c.flavour)?.value ?? ''
    const reported = new Set<SyncDoc>()
    for (const o of objects) {
      if (o.secretPath === '') continue
      const key = canonicalJson([
        s.namespace ?? '',
        s.serviceAccount,
        login('address'),
        login('namespace'),
        login('authNamespace'),
        login('authMountPath'),
        login('kubernetesMountPath'),
        login('roleName'),
        readParameter(c.params, 'audience', c.flavour)?.value ?? FLAVOURS[c.flavour].defaultAudience,
        o.namespace ?? '',
        o.method,
        o.secretPath,
        o.query,
        o.secretArgs ?? null,
      ])
      const first = seen.get(key)
      if (first === undefined) {
        seen.set(key, s)
        continue
      }
      if (first === s || reported.has(first)) continue
      reported.add(first)
      add(
        'SECRETSYNC_SHARED',
        'warning',
        s.serviceAccountLine,
        `reads the same Vault request as SecretSync ${q(where(first))} (object ${q(o.objectName)}, ${o.method} ` +
          `${q(o.secretPath)}) with the same service account ${q(s.serviceAccount)}: under the controller both get one ` +
          'answer, so a dynamic secret (a database credential, an issued certificate) is one credential in both Secrets; ' +
          'give them separate service accounts for separate ones',
      )
    }
  }

  /** Once per class a SecretSync uses: what does not work under the controller. */
  private classUnderController(c: ClassDoc, syncs: SyncDoc[]): LintProblem[] {
    const out: LintProblem[] = []
    const add = (code: LintProblem['code'], line: number, message: string): void => {
      out.push({
        file: c.file,
        line,
        severity: 'warning',
        code,
        secretProviderClass: where(c),
        provider: c.provider,
        message,
      })
    }
    const users = `SecretSync${syncs.length === 1 ? '' : 's'} ${syncs.map((s) => q(where(s))).join(', ')}`
    const audience = readParameter(c.params, 'audience', c.flavour)
    const audienceValue = audience?.value ?? FLAVOURS[c.flavour].defaultAudience
    if (!this.opts.audiences.includes(audienceValue)) {
      add(
        'NO_POD_TOKEN',
        audience === undefined ? c.parametersLine : (c.paramLines.get(audience.name) ?? c.parametersLine),
        `audience ${q(audienceValue)}${audience === undefined ? ` (the default of provider ${q(c.provider)})` : ''}: ` +
          `the Sync Controller requests tokens only for ${this.opts.audiences.map((a) => q(a)).join(', ') || 'no audience'} ` +
          `(its --token-request-audience, as lint's --token-request-audience says), so every sync of ${users} fails ` +
          `with NO_POD_TOKEN; set parameter "audience" to one it requests, or add ${q(audienceValue)} to the chart's ` +
          'tokenRequestAudience',
      )
    }
    if (c.secretObjectsLine !== undefined) {
      add(
        'SECRETSYNC_SECRET_OBJECTS',
        c.secretObjectsLine,
        "spec.secretObjects is the CSI driver's sync, for pods that mount this class: the Sync Controller ignores it " +
          `(${users} write${syncs.length === 1 ? 's' : ''} only what the secretObject lists)`,
      )
    }
    const objects = objectsOf(c)
    if (objects === undefined) return out
    const objectsLine = c.paramLines.get(readParameter(c.params, 'objects', c.flavour)?.name ?? '') ?? c.parametersLine
    if (objects.every((o) => o.optional === true)) {
      add(
        'NO_OBJECT_VERSIONS',
        objectsLine,
        'every object is optional: when Vault has none of their secrets the answer has no object version, which the ' +
          `Sync Controller refuses, so ${users} fail${syncs.length === 1 ? 's' : ''} (NO_OBJECT_VERSIONS); make at least one object required`,
      )
    }
    const used = new Set(syncs.flatMap((s) => (s.data ?? []).map((d) => d.sourcePath)))
    // What a template or a keystore reads writes its own file too, but is needed.
    const read = new Set(
      objects.flatMap((o) => [...(o.template === undefined ? [] : safeRefs(o.template)), o.passwordObject ?? '']),
    )
    const unused = objects.filter((o) => !used.has(o.objectName) && !read.has(o.objectName))
    if (unused.length > 0) {
      add(
        'SECRETSYNC_UNUSED',
        objectsLine,
        `object${unused.length === 1 ? '' : 's'} ${unused.map((o) => q(o.objectName)).join(', ')} ` +
          `${unused.length === 1 ? 'is' : 'are'} in no sourcePath of ${users}: the provider still reads ` +
          `${unused.length === 1 ? 'it' : 'them'} on every sync, and counts ${unused.length === 1 ? 'its file' : 'their files'} ` +
          `toward the ${formatBytes(KUBERNETES_SECRET_MAX_BYTES)} it allows one answer beside the controller ` +
          '(SECRET_TOO_LARGE); drop them, or move them to a class of their own',
      )
    }
    return out
  }
}

function safeRefs(template: string): string[] {
  try {
    return checkTemplate(template)
  } catch {
    return []
  }
}
