// Offline checks of the deployment files: kustomize builds, Kubernetes JSON schemas
// (kubernetes-validate, which bundles the upstream OpenAPI schemas per Kubernetes version;
// the driver's CRDs for its kinds), hadolint and dockerfile-parse. scripts/setup.sh installs
// all of them into .cache/. The same objects also go to a real API server as a server-side
// dry run (kube-apply.ts, test/deploy/server-dry-run.test.ts).
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { PACKAGE_ROOT } from '../../src/package-info.js'

export const DEPLOY_VENV = join(PACKAGE_ROOT, '.cache', 'deploy')
export const DEPLOY_PYTHON = join(DEPLOY_VENV, 'bin', 'python')
export const HADOLINT = join(DEPLOY_VENV, 'bin', 'hadolint')
export const KUSTOMIZE = join(PACKAGE_ROOT, '.cache', 'bin', 'kustomize')

/** Oldest and newest Kubernetes minor the manifests are checked against. */
export const KUBERNETES_VERSIONS = ['1.29.0', '1.37.0'] as const

export type K8sObject = {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; [k: string]: unknown }
  [k: string]: unknown
}

export interface RunResult {
  code: number
  stdout: string
  stderr: string
}

export function run(
  cmd: string,
  args: string[],
  opts: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv; uid?: number; gid?: number } = {},
): Promise<RunResult> {
  if (cmd.startsWith('/') && !existsSync(cmd)) {
    return Promise.reject(new Error(`${cmd} is missing: run scripts/setup.sh first`))
  }
  return new Promise((resolve, reject) => {
    const child = execFile(
      cmd,
      args,
      {
        cwd: opts.cwd ?? PACKAGE_ROOT,
        env: opts.env ?? process.env,
        maxBuffer: 32 * 1024 * 1024,
        encoding: 'utf8',
        timeout: 120_000,
        ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
        ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        if (err && typeof err.code !== 'number') {
          reject(new Error(`${cmd} failed to run: ${err.message}`))
          return
        }
        resolve({ code, stdout, stderr })
      },
    )
    if (opts.input !== undefined) child.stdin?.end(opts.input)
  })
}

/** Every non-empty document of a multi-document YAML text. */
export function parseYamlDocuments(text: string, where: string): K8sObject[] {
  const out: K8sObject[] = []
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors[0]!.message}`)
    const value = doc.toJS() as unknown
    if (value !== null && value !== undefined) out.push(value as K8sObject)
  }
  return out
}

/** `kustomize build DIR`, parsed. */
export async function kustomizeBuild(dir: string): Promise<K8sObject[]> {
  const res = await run(KUSTOMIZE, ['build', dir])
  if (res.code !== 0) throw new Error(`kustomize build ${dir} failed: ${res.stderr}`)
  return parseYamlDocuments(res.stdout, `kustomize build ${dir}`)
}

/** The CRDs whose kinds are checked offline with their own schema (the driver's deploy/ files). */
export const DRIVER_CRD_FILES = [
  'secrets-store.csi.x-k8s.io_secretproviderclasses.yaml',
  'secrets-store.csi.x-k8s.io_secretproviderclasspodstatuses.yaml',
]

/**
 * A CRD's served schema as strict JSON Schema: every object that lists its properties and
 * neither allows others nor preserves unknown fields gets additionalProperties: false, which is
 * what the API server's fieldValidation=Strict enforces (without it, it prunes them silently).
 */
export function strictCrdSchema(crd: any): { kind: string; schema: unknown } {
  const version = (crd.spec.versions as any[]).find((v) => v.storage) ?? crd.spec.versions[0]
  const strict = (node: any): any => {
    if (Array.isArray(node)) return node.map(strict)
    if (node === null || typeof node !== 'object') return node
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(node)) out[k] = strict(v)
    if (
      out.properties !== undefined &&
      out.additionalProperties === undefined &&
      out['x-kubernetes-preserve-unknown-fields'] !== true
    ) {
      out.additionalProperties = false
    }
    return out
  }
  return { kind: crd.spec.names.kind, schema: strict(version.schema.openAPIV3Schema) }
}

async function driverCrdSchemas(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {}
  for (const f of DRIVER_CRD_FILES) {
    const path = join(PACKAGE_ROOT, '.cache', 'kube-deploy', f)
    if (!existsSync(path)) throw new Error(`${path} is missing: run scripts/setup.sh first`)
    for (const crd of parseYamlDocuments(await readFile(path, 'utf8'), f)) {
      const { kind, schema } = strictCrdSchema(crd)
      out[kind] = schema
    }
  }
  return out
}

export interface ValidationResult {
  kind: string
  name: string
  version: string
  ok: boolean
  /** 'kubernetes' (bundled upstream schema) or 'crd' (the driver's CRD, strictCrdSchema). */
  schema: string
  errors: string[]
}

// Runs in .cache/deploy's Python: built-in kinds against kubernetes-validate's strict
// schemas (unknown fields are errors), the driver's kinds against their CRD's own schema.
// A kind without a schema is a failure, never a silent skip.
const VALIDATOR = String.raw`
import json, sys
import jsonschema
import kubernetes_validate
from kubernetes_validate.utils import SchemaNotFoundError

req = json.load(sys.stdin)
crds = req["crdSchemas"]
out = []
for res in req["resources"]:
    kind = res.get("kind", "?")
    name = (res.get("metadata") or {}).get("name", "?")
    for version in req["versions"]:
        item = {"kind": kind, "name": name, "version": version, "ok": True, "errors": []}
        if kind in crds:
            item["schema"] = "crd"
            v = jsonschema.Draft202012Validator(crds[kind])
            for e in sorted(v.iter_errors(res), key=lambda e: list(e.path)):
                item["errors"].append(".".join(str(p) for p in e.path) + ": " + e.message)
        else:
            item["schema"] = "kubernetes"
            try:
                kubernetes_validate.validate(res, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                item["errors"].append(".".join(str(p) for p in e.path) + ": " + e.message)
            except SchemaNotFoundError as e:
                item["errors"].append(e.message)
        item["ok"] = not item["errors"]
        out.append(item)
json.dump(out, sys.stdout)
`

export async function validateObjects(
  resources: readonly K8sObject[],
  versions: readonly string[] = KUBERNETES_VERSIONS,
): Promise<ValidationResult[]> {
  const input = JSON.stringify({
    resources,
    versions,
    crdSchemas: await driverCrdSchemas(),
  })
  const res = await run(DEPLOY_PYTHON, ['-c', VALIDATOR], { input })
  if (res.code !== 0) throw new Error(`schema validation crashed: ${res.stderr}`)
  return JSON.parse(res.stdout) as ValidationResult[]
}

export interface DockerInstruction {
  instruction: string
  value: string
  startline: number
}

export interface ParsedDockerfile {
  instructions: DockerInstruction[]
  /** LABELs of the final stage, ARG defaults substituted. */
  labels: Record<string, string>
}

/** The Dockerfile as dockerfile-parse sees it (continuations joined, comments dropped). */
export async function parseDockerfile(path: string): Promise<ParsedDockerfile> {
  const script = String.raw`
import json, sys
from dockerfile_parse import DockerfileParser
p = DockerfileParser(path=sys.argv[1])
json.dump({"instructions": [{"instruction": i["instruction"], "value": i["value"], "startline": i["startline"]}
                            for i in p.structure if i["instruction"] != "COMMENT"],
           "labels": p.labels}, sys.stdout)
`
  const res = await run(DEPLOY_PYTHON, ['-c', script, path])
  if (res.code !== 0) throw new Error(`dockerfile-parse failed: ${res.stderr}`)
  return JSON.parse(res.stdout) as ParsedDockerfile
}

export interface DockerStage {
  /** `AS name`, or the stage's index when unnamed. */
  name: string
  image: string
  instructions: DockerInstruction[]
}

/** Splits the instructions at each FROM. */
export function dockerStages(instructions: readonly DockerInstruction[]): DockerStage[] {
  const stages: DockerStage[] = []
  for (const ins of instructions) {
    if (ins.instruction === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.value.trim())
      if (!m) throw new Error(`FROM not understood: ${ins.value}`)
      stages.push({ name: m[2] ?? String(stages.length), image: m[1]!, instructions: [] })
    } else if (stages.length > 0) {
      stages[stages.length - 1]!.instructions.push(ins)
    }
  }
  return stages
}

/** A JSON-form (exec form) ENTRYPOINT/CMD value; shell form is refused (it would run under sh, which swallows signals). */
export function execForm(value: string, what: string): string[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    throw new Error(`${what} is not in exec (JSON array) form: ${value}`)
  }
  if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === 'string')) {
    throw new Error(`${what} is not a JSON array of strings: ${value}`)
  }
  return parsed
}
