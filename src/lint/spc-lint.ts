/**
 * `vault-csi-provider lint`: SecretProviderClass manifests checked offline, the way a Mount would
 * parse them. The parameters go through collectMountRequest (parseMountRequest, the function the
 * gRPC adapter calls, fails with the first problem it finds) with a stand-in pod, the `objects`
 * through collectObjects (objects-lint.ts), the Vault address through the daemon's allowlist class,
 * and the files the objects will write through the Mount's last check (checkVolume). Each finds
 * every problem in one pass and says in the error's fields which parameter, object or file it is
 * about; so a problem reported here is the Mount's own message, and the two cannot drift. Added on
 * top, because a Mount never sees them: parameters the API server would refuse (not strings),
 * parameters nothing reads (typos), and `secretObjects` naming files the SecretProviderClass does
 * not produce.
 */
import { randomUUID } from 'node:crypto'
import { isMap, isScalar, isSeq, LineCounter, parseAllDocuments, type Document, type Node, type YAMLMap } from 'yaml'
import type { VaultDefaults } from '../config/config.js'
import { isProviderError, q, type ErrorCode } from '../errors.js'
import { checkVolume, type RenderedObject } from '../render/render.js'
import { TLS_FILES } from '../render/certificates.js'
import { DEFAULT_FLAVOUR, flavourOfProvider, type ProviderFlavour } from '../config/flavour.js'
import { knownParameterNames, legacyParameterNames, resolveParameters } from '../request/parameters.js'
import { ATTR, collectMountRequest, type ObjectsParser } from '../request/parse-request.js'
import type { SecretObject } from '../request/types.js'
import type { AddressAllowlist } from '../vault/transport/address-allowlist.js'
import { lintObjects } from './objects-lint.js'
import type { SecretSyncCollector, SecretSyncLintCode } from './secretsync-lint.js'

export type Severity = 'error' | 'warning'

/** Codes of the findings a Mount cannot make (the others are the Mount's ErrorCodes). */
export const LINT_CODES = {
  /** The file or document is not valid YAML. */
  YAML: 'error',
  /** The API server would refuse the manifest (a parameter that is not a string, no name). */
  MANIFEST: 'error',
  /** A parameter nothing reads: a misspelling, or a key kubelet overwrites. */
  UNKNOWN_PARAMETER: 'warning',
  /** No vaultAddress, and lint was not told the provider's -vault-addr. */
  NO_VAULT_ADDRESS: 'warning',
  /** A secretObjects entry the driver cannot sync. */
  SECRET_OBJECTS: 'error',
  /** A secretObjects entry that works only when the secret has a CA (format tls's ca.crt). */
  SECRET_OBJECTS_MAYBE: 'warning',
} as const satisfies Record<string, Severity>

export interface LintProblem {
  file: string
  /** 1-based line in the file. */
  line: number
  severity: Severity
  /** The Mount's error code, or one of LINT_CODES. */
  code: ErrorCode | keyof typeof LINT_CODES | SecretSyncLintCode
  /** `namespace/name` (or `name`) of the SecretProviderClass. */
  secretProviderClass?: string
  /** `namespace/name` (or `name`) of the SecretSync (secretsync-lint.ts). */
  secretSync?: string
  /** Its `spec.provider`, whose parameter names and defaults it was checked with. */
  provider?: string
  parameter?: string
  object?: string
  message: string
}

export interface LintOptions {
  /** The provider's defaults (its -vault-addr, -vault-mount, TLS flags), as the daemon parses them. */
  vaultDefaults: VaultDefaults
  /** The provider's -vault-addr-allowlist, when lint is told it. */
  allowlist?: AddressAllowlist
  /**
   * spec.provider of the SecretProviderClasses to check; others are skipped. Default: both of
   * ours, `vault` and `openbao`, each with its flavour's parameter names. Any other name is
   * checked as `vault` (a provider deployed under a socket name of its own).
   */
  provider?: string
  /** Keeps the SecretSyncs and classes seen, for secretsync-lint.ts once every file is read. */
  secretSyncs?: SecretSyncCollector
}

export interface LintResult {
  problems: LintProblem[]
  /** SecretProviderClasses (and Markdown `objects` fragments) checked. */
  checked: number
  /** Documents skipped: other kinds, other providers. */
  skipped: number
  /** SecretProviderClasses checked, by spec.provider (absent until one is). */
  providers?: Record<string, number>
}

interface Source {
  file: string
  /** Added to every line (a Markdown code block's position in its file). */
  lineOffset: number
  lineCounter: LineCounter
}

function lineOf(src: Source, node: Node | null | undefined, fallback = 1): number {
  const offset = node?.range?.[0]
  return offset === undefined ? fallback + src.lineOffset : src.lineCounter.linePos(offset).line + src.lineOffset
}

function pairKey(map: YAMLMap, key: string): Node | undefined {
  const pair = map.items.find((p) => isScalar(p.key) && p.key.value === key)
  return pair?.key as Node | undefined
}

/** Where in the file line N of a block scalar's text is; undefined when lines do not map one to one. */
function blockLine(src: Source, node: Node | undefined, textLine: number | undefined): number | undefined {
  if (!isScalar(node) || textLine === undefined) return undefined
  if (node.type !== 'BLOCK_LITERAL') return undefined
  // The indicator (`|`) is on the key's line; the text starts on the next one.
  return lineOf(src, node) + textLine
}

/** A Mount request as the driver would send it for a pod using these parameters. */
function rawRequest(
  params: Record<string, string>,
  spcName: string,
): { attributes: string; secrets: string; permission: string } {
  const attrs: Record<string, string> = { ...params }
  // Written by the driver and kubelet last: whatever the SecretProviderClass says is overwritten.
  attrs[ATTR.secretProviderClass] = spcName
  attrs[ATTR.podName] = 'lint'
  attrs[ATTR.podNamespace] = 'lint'
  attrs[ATTR.podUid] = randomUUID()
  attrs[ATTR.serviceAccount] = 'lint'
  return { attributes: JSON.stringify(attrs), secrets: 'null', permission: '420' }
}

/** Where each object's files will be, as far as the SecretProviderClass alone tells. */
interface ObjectFiles {
  name: string
  /** Files it always writes. */
  files: string[]
  /** Files it writes only for some secrets (tls: ca.crt). */
  maybe: string[]
  /** A directory whose file names come from the secret (format files). */
  openDirectory: boolean
}

function filesOf(obj: SecretObject): ObjectFiles {
  if (obj.template === undefined && obj.format === 'tls') {
    return {
      name: obj.objectName,
      files: TLS_FILES.filter((f) => f !== 'ca.crt').map((f) => `${obj.objectName}/${f}`),
      maybe: [`${obj.objectName}/ca.crt`],
      openDirectory: false,
    }
  }
  if (obj.template === undefined && obj.format === 'files') {
    return { name: obj.objectName, files: [], maybe: [], openDirectory: true }
  }
  return { name: obj.objectName, files: [obj.objectName], maybe: [], openDirectory: false }
}

type Params = Map<string, { value: string; line: number; node?: Node; refused?: boolean }>

/** mountParse leaves the objects out: objects() reports theirs, each on its own line. */
const OBJECTS_LINTED_APART: ObjectsParser = () => []

class SpcLinter {
  readonly problems: LintProblem[] = []

  constructor(
    private readonly src: Source,
    private readonly opts: LintOptions,
    private readonly spcName: string | undefined,
    /** spec.provider of the class; undefined for a Markdown fragment. */
    private readonly provider: string | undefined = undefined,
    private readonly flavour: ProviderFlavour = DEFAULT_FLAVOUR,
  ) {}

  add(p: Omit<LintProblem, 'file' | 'secretProviderClass' | 'provider'>): void {
    const where = { file: this.src.file, secretProviderClass: this.spcName }
    this.problems.push(this.provider === undefined ? { ...where, ...p } : { ...where, provider: this.provider, ...p })
  }

  /** The parameters map as strings, reporting what the API server would refuse. */
  strings(params: YAMLMap): Params {
    const out: Params = new Map()
    for (const pair of params.items) {
      const keyNode = pair.key as Node
      const key = isScalar(keyNode) ? String(keyNode.value) : String(keyNode)
      const line = lineOf(this.src, keyNode)
      const value = pair.value as Node | null
      if (isScalar(value) && typeof value.value === 'string') {
        out.set(key, { value: value.value, line, node: value })
        continue
      }
      let got: string
      let fix: string
      if (isScalar(value) && value.value !== null) {
        const text = value.source ?? String(value.value)
        got = `${text} (a YAML ${typeof value.value === 'boolean' ? 'boolean' : typeof value.value})`
        fix = `quote it: "${text}"`
      } else if (isScalar(value) || value === null) {
        got = 'nothing'
        fix = 'give it a value, or remove it'
      } else {
        got = `a YAML ${isSeq(value) ? 'list' : 'map'}`
        fix = `write it as a block string (${key}: |)`
      }
      this.add({
        line,
        severity: 'error',
        code: 'MANIFEST',
        parameter: key,
        message: `parameter ${q(key)} must be a string, got ${got}: the API server refuses other types; ${fix}`,
      })
      // A Mount would see the scalar's text (had the API server let it through); not a collection.
      out.set(key, { value: isScalar(value) && value.value !== null ? String(value.value) : '', line, refused: true })
    }
    return out
  }

  unknownParameters(params: Params): void {
    const known = new Set<string>([...knownParameterNames(this.flavour), ...legacyParameterNames(this.flavour)])
    for (const [key, { line }] of params) {
      if (known.has(key)) continue
      const driverOwned = key === ATTR.secretProviderClass || key.startsWith('csi.storage.k8s.io/')
      this.add({
        line,
        severity: 'warning',
        code: 'UNKNOWN_PARAMETER',
        parameter: key,
        message: driverOwned
          ? `parameter ${q(key)} is set by the driver for each pod; the value here is ignored`
          : `parameter ${q(key)} is not read by the provider (a misspelling? known parameters: ${knownParameterNames(this.flavour).join(', ')})`,
      })
    }
  }

  /**
   * Every problem collectMountRequest finds in the parameters (objects aside: see objects()), each
   * on the line of the parameter it names; then the address a Mount would use against the allowlist.
   */
  mountParse(params: Params, fallbackLine: number): void {
    const values = new Map([...params].map(([k, { value }]) => [k, value]))
    const defaults = this.opts.vaultDefaults
    const classParameters = resolveParameters(values, this.flavour)
    const addressParameter = classParameters.nameOf('address')
    const noAddress = defaults.address === undefined && classParameters.given('address') === undefined
    if (noAddress) {
      this.add({
        line: fallbackLine,
        severity: 'warning',
        code: 'NO_VAULT_ADDRESS',
        parameter: addressParameter,
        message: `no parameter ${q(addressParameter)}: Mounts use the provider's ${classParameters.addressFlags}, and fail without one (lint --vault-addr=… checks against yours)`,
      })
    }
    const request = rawRequest(Object.fromEntries(values), this.spcName ?? '')
    const { issues, address } = collectMountRequest(request, defaults, OBJECTS_LINTED_APART, this.flavour)
    for (const issue of issues) {
      const name = issue.fields.parameter
      // Warned about above; and a parameter the API server refuses was reported as such already.
      if (noAddress && name === addressParameter) continue
      if (name !== undefined && params.get(name)?.refused) continue
      this.add({
        line: (name === undefined ? undefined : params.get(name)?.line) ?? fallbackLine,
        severity: 'error',
        code: issue.code,
        ...(name === undefined ? {} : { parameter: name }),
        message: issue.message,
      })
    }
    if (address !== undefined)
      this.allowlist(address, addressParameter, params.get(addressParameter)?.line ?? fallbackLine)
  }

  /** The Mount's refusal of an address outside -vault-addr-allowlist, before any token is sent. */
  private allowlist(address: string, parameter: string, line: number): void {
    if (!this.opts.allowlist) return
    try {
      this.opts.allowlist.check(address)
    } catch (err) {
      if (!isProviderError(err)) throw err
      this.add({ line, severity: 'error', code: err.code, parameter, message: err.message })
    }
  }

  /** Every bad object (the Mount's messages), then the volume the good ones would write. */
  objects(text: string, node: Node | undefined, keyLine: number): ObjectFiles[] | undefined {
    const result = lintObjects(text)
    for (const p of result.problems) {
      this.add({
        line: blockLine(this.src, node, p.line) ?? keyLine,
        severity: 'error',
        code: p.code,
        parameter: 'objects',
        object: p.object,
        message: p.message,
      })
    }
    if (!result.objects) return undefined
    const files = result.objects.map(filesOf)
    // The Mount's last check, on the files each object is sure to write.
    const predicted: RenderedObject[] = files.map((f) => ({
      id: f.name,
      version: '',
      files: f.files.map((path) => ({ path, mode: 0o644, contents: Buffer.alloc(0) })),
    }))
    try {
      checkVolume(predicted)
    } catch (err) {
      if (!isProviderError(err)) throw err
      // The error names the object, or a file: the later of its writers is the one to blame.
      const file = err.fields.file
      const writers = file === undefined ? [] : files.filter((f) => f.files.includes(file))
      const index = err.fields.object?.index ?? result.objects.findIndex((o) => o.objectName === writers.at(-1)?.name)
      const object = result.objects[index]?.objectName
      this.add({
        line: blockLine(this.src, node, index === -1 ? undefined : result.lines[index]) ?? keyLine,
        severity: 'error',
        code: err.code,
        parameter: 'objects',
        object,
        message: err.message,
      })
    }
    return files
  }

  /** secretObjects: what the driver needs to sync a Kubernetes Secret from the volume's files. */
  secretObjects(spec: YAMLMap, files: ObjectFiles[] | undefined): void {
    const node = spec.get('secretObjects', true) as Node | undefined
    if (node === undefined || node === null) return
    const at = lineOf(this.src, pairKey(spec, 'secretObjects'))
    if (!isSeq(node)) {
      this.add({ line: at, severity: 'error', code: 'SECRET_OBJECTS', message: 'spec.secretObjects must be a list' })
      return
    }
    node.items.forEach((raw, i) => {
      const entry = raw as Node
      const line = lineOf(this.src, entry, at)
      const where = `spec.secretObjects[${i}]`
      if (!isMap(entry)) {
        this.add({
          line,
          severity: 'error',
          code: 'SECRET_OBJECTS',
          message: `${where} must be a map with secretName, type and data`,
        })
        return
      }
      const secretName = entry.get('secretName')
      if (
        typeof secretName !== 'string' ||
        !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(secretName) ||
        secretName.length > 253
      ) {
        this.add({
          line,
          severity: 'error',
          code: 'SECRET_OBJECTS',
          message: `${where}.secretName must be the name of a Kubernetes Secret (lower-case letters, digits, "-" and "."), got ${q(String(secretName ?? ''))}`,
        })
      }
      const type = entry.get('type')
      if (typeof type !== 'string' || type === '') {
        this.add({
          line,
          severity: 'error',
          code: 'SECRET_OBJECTS',
          message: `${where}.type is missing: the driver needs the Secret type (e.g. Opaque or kubernetes.io/tls)`,
        })
      }
      const data = entry.get('data', true) as Node | undefined
      if (!isSeq(data) || data.items.length === 0) {
        this.add({
          line,
          severity: 'error',
          code: 'SECRET_OBJECTS',
          message: `${where}.data is missing: list the files to copy into the Secret`,
        })
        return
      }
      const keys = new Set<string>()
      data.items.forEach((rawItem, j) => {
        const item = rawItem as Node
        const itemLine = lineOf(this.src, item, line)
        const w = `${where}.data[${j}]`
        const objectName = isMap(item) ? item.get('objectName') : undefined
        const key = isMap(item) ? item.get('key') : undefined
        if (typeof key !== 'string' || key === '') {
          this.add({
            line: itemLine,
            severity: 'error',
            code: 'SECRET_OBJECTS',
            message: `${w}.key is missing: the key of the Secret to write`,
          })
        } else {
          keys.add(key)
        }
        if (typeof objectName !== 'string' || objectName === '') {
          this.add({
            line: itemLine,
            severity: 'error',
            code: 'SECRET_OBJECTS',
            message: `${w}.objectName is missing: the file of the volume to copy`,
          })
          return
        }
        if (files === undefined) return // the objects themselves are wrong: reported above
        this.fileReference(objectName, files, itemLine, w)
      })
      if (type === 'kubernetes.io/tls') {
        for (const need of ['tls.crt', 'tls.key']) {
          if (!keys.has(need)) {
            this.add({
              line,
              severity: 'error',
              code: 'SECRET_OBJECTS',
              message: `${where}: a kubernetes.io/tls Secret needs the key ${q(need)} in data`,
            })
          }
        }
      }
    })
  }

  private fileReference(path: string, files: ObjectFiles[], line: number, where: string): void {
    const known = [...new Set(files.flatMap((f) => f.files))]
    if (known.includes(path)) return
    const object = (name: string): string => `object ${q(name)}`
    if (files.some((f) => f.maybe.includes(path))) {
      this.add({
        line,
        severity: 'warning',
        code: 'SECRET_OBJECTS_MAYBE',
        object: path.slice(0, path.lastIndexOf('/')),
        message: `${where}.objectName ${q(path)} is written only when the certificate material holds a CA; the Secret cannot be synced for secrets without one`,
      })
      return
    }
    if (files.some((f) => f.openDirectory && path.startsWith(`${f.name}/`) && path.length > f.name.length + 1)) return
    const dir = files.find((f) => f.name === path && (f.openDirectory || f.maybe.length > 0))
    const hint = dir
      ? `${object(path)} is a directory; name a file in it${dir.files.length > 0 ? ` (${dir.files.map((p) => q(p)).join(', ')})` : ` (${q(`${path}/<key>`)})`}`
      : `the files of this SecretProviderClass are ${[...known, ...files.filter((f) => f.openDirectory).map((f) => `${f.name}/<key>`)].map((p) => q(p)).join(', ')}`
    this.add({
      line,
      severity: 'error',
      code: 'SECRET_OBJECTS',
      message: `${where}.objectName ${q(path)} is not a file this SecretProviderClass writes: ${hint}`,
    })
  }
}

function isSpc(value: unknown): value is { kind: string } {
  return value !== null && typeof value === 'object' && (value as { kind?: unknown }).kind === 'SecretProviderClass'
}

function lintSpcDocument(doc: Document, src: Source, opts: LintOptions, result: LintResult): void {
  const root = doc.contents as Node
  const spec = doc.getIn(['spec'], true) as Node | undefined
  const metadata = doc.getIn(['metadata'], true) as Node | undefined
  const name = isMap(metadata) ? metadata.get('name') : undefined
  const namespace = isMap(metadata) ? metadata.get('namespace') : undefined
  const spcName = typeof name === 'string' ? (typeof namespace === 'string' ? `${namespace}/${name}` : name) : undefined
  const provider = isMap(spec) ? spec.get('provider') : undefined
  // Ours are `vault` and `openbao`, or the one provider name lint was told to check.
  let flavour: ProviderFlavour | undefined
  if (opts.provider === undefined) flavour = flavourOfProvider(provider)
  else if (provider === opts.provider) flavour = flavourOfProvider(provider) ?? DEFAULT_FLAVOUR
  if (typeof provider !== 'string' || flavour === undefined) {
    result.skipped += 1
    return
  }
  result.checked += 1
  result.providers ??= {}
  result.providers[provider] = (result.providers[provider] ?? 0) + 1
  const linter = new SpcLinter(src, opts, spcName, provider, flavour)
  const docLine = lineOf(src, root)
  if (typeof name !== 'string' || name === '') {
    linter.add({ line: docLine, severity: 'error', code: 'MANIFEST', message: 'metadata.name is missing' })
  }
  const specMap = spec as YAMLMap
  const paramsNode = specMap.get('parameters', true) as Node | undefined
  const paramsLine = lineOf(src, pairKey(specMap, 'parameters') ?? (spec as Node), docLine)
  if (paramsNode !== undefined && paramsNode !== null && !isMap(paramsNode)) {
    linter.add({
      line: paramsLine,
      severity: 'error',
      code: 'MANIFEST',
      message: 'spec.parameters must be a map of strings',
    })
  }
  const params: Params = isMap(paramsNode) ? linter.strings(paramsNode) : new Map()
  linter.unknownParameters(params)
  linter.mountParse(params, paramsLine)
  const objects = params.get('objects')
  const files =
    objects !== undefined && objects.value.trim() !== ''
      ? linter.objects(objects.value, objects.node, objects.line)
      : undefined
  linter.secretObjects(specMap, files)
  result.problems.push(...linter.problems.sort((a, b) => a.line - b.line))
}

/** A Markdown snippet that is a parameters map with `objects` (docs show them without the rest). */
function lintFragment(doc: Document, src: Source, opts: LintOptions, result: LintResult): boolean {
  const root = doc.contents as Node
  if (!isMap(root) || root.has('kind')) return false
  const objects = root.get('objects', true) as Node | undefined
  if (!isScalar(objects) || typeof objects.value !== 'string') return false
  result.checked += 1
  const linter = new SpcLinter(src, opts, undefined)
  linter.objects(objects.value, objects, lineOf(src, pairKey(root, 'objects')))
  result.problems.push(...linter.problems)
  return true
}

export interface LintTextOptions extends LintOptions {
  /** Report a YAML syntax error (files named on the command line: yes; found in a directory or a Markdown block: only when it mentions SecretProviderClass). */
  strictYaml?: boolean
  /** Markdown code blocks may be bare parameter maps with `objects`. */
  fragments?: boolean
  lineOffset?: number
}

/** Every SecretProviderClass in a (multi-document) YAML text. */
export function lintYaml(text: string, file: string, opts: LintTextOptions, into?: LintResult): LintResult {
  const result = into ?? { problems: [], checked: 0, skipped: 0 }
  const lineCounter = new LineCounter()
  const src: Source = { file, lineOffset: opts.lineOffset ?? 0, lineCounter }
  // YAML 1.1, as kubectl reads manifests: `yes` and `on` are booleans there, so the API server sees them as such.
  const docs = parseAllDocuments(text, { version: '1.1', lineCounter, prettyErrors: false })
  const reportYaml = opts.strictYaml === true || text.includes('SecretProviderClass')
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    if (doc.errors.length > 0) {
      if (reportYaml) {
        const err = doc.errors[0]!
        result.problems.push({
          file,
          line: lineCounter.linePos(err.pos[0]).line + src.lineOffset,
          severity: 'error',
          code: 'YAML',
          message: `not valid YAML (${err.code}): ${err.message.split('\n')[0]}`,
        })
      }
      continue
    }
    if (doc.contents === null) continue
    let value: unknown
    try {
      value = doc.toJS({ maxAliasCount: 50 })
    } catch {
      if (reportYaml) {
        result.problems.push({
          file,
          line: lineOf(src, doc.contents as Node),
          severity: 'error',
          code: 'YAML',
          message: 'not valid YAML: more than 50 aliases',
        })
      }
      continue
    }
    const secretSync = opts.secretSyncs?.collect(value, doc, file, (node) => lineOf(src, node)) === true
    if (isSpc(value)) lintSpcDocument(doc, src, opts, result)
    else if (!secretSync && !(opts.fragments === true && lintFragment(doc, src, opts, result))) result.skipped += 1
  }
  return result
}

/** The ```yaml blocks of a Markdown text, each linted where it stands. */
export function lintMarkdown(text: string, file: string, opts: LintOptions, into?: LintResult): LintResult {
  const result = into ?? { problems: [], checked: 0, skipped: 0 }
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(ya?ml)\s*$/.exec(lines[i]!)
    if (!open) continue
    const [, indent, fence] = open
    const body: string[] = []
    let j = i + 1
    for (; j < lines.length; j++) {
      if (lines[j]!.trim().startsWith(fence!) && lines[j]!.trim().replace(/[`~]/g, '') === '') break
      body.push(lines[j]!.startsWith(indent!) ? lines[j]!.slice(indent!.length) : lines[j]!)
    }
    lintYaml(body.join('\n'), file, { ...opts, fragments: true, lineOffset: i + 1 }, result)
    i = j
  }
  return result
}
