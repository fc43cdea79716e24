/**
 * A SecretProviderClass file and a pod identity → the MountRequest the driver
 * would send: the SPC's parameters, the pod's keys as kubelet writes them,
 * and the pod's service-account token under `serviceAccount.tokens`.
 */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { parseAllDocuments } from 'yaml'
import { ATTR } from '../request/parse-request.js'
import { UsageError } from './output.js'

export interface SecretProviderClassFile {
  name: string
  namespace?: string
  provider: string
  parameters: Record<string, string>
}

/** Reads the first SecretProviderClass (or the one named `name`) of a YAML file. */
export async function readSecretProviderClass(file: string, name?: string): Promise<SecretProviderClassFile> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`)
  }
  const docs = parseAllDocuments(text)
  const found: SecretProviderClassFile[] = []
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    if (doc.errors.length > 0)
      throw new UsageError(`${file} is not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`)
    const obj = doc.toJS() as Record<string, unknown> | null
    if (!obj || typeof obj !== 'object' || obj.kind !== 'SecretProviderClass') continue
    const meta = (obj.metadata ?? {}) as Record<string, unknown>
    const spec = (obj.spec ?? {}) as Record<string, unknown>
    const params = (spec.parameters ?? {}) as Record<string, unknown>
    const parameters: Record<string, string> = {}
    for (const [k, v] of Object.entries(params)) {
      // The API server stores parameters as strings; YAML may have read `true` or `8200` as other types.
      parameters[k] = typeof v === 'string' ? v : String(v)
    }
    found.push({
      name: typeof meta.name === 'string' ? meta.name : '',
      namespace: typeof meta.namespace === 'string' ? meta.namespace : undefined,
      provider: typeof spec.provider === 'string' ? spec.provider : '',
      parameters,
    })
  }
  const spc = name === undefined ? found[0] : found.find((s) => s.name === name)
  if (!spc) {
    throw new UsageError(
      name === undefined
        ? `${file} holds no SecretProviderClass (kind: SecretProviderClass)`
        : `${file} holds no SecretProviderClass named ${JSON.stringify(name)}`,
    )
  }
  return spc
}

export interface PodIdentityInput {
  namespace: string
  name: string
  uid?: string
  serviceAccount: string
}

/** The `attributes` JSON object the driver would build for this pod. */
export function buildAttributes(
  spc: SecretProviderClassFile,
  pod: PodIdentityInput,
  token: { audience: string; jwt: string } | undefined,
  overrides: Record<string, string> = {},
): Record<string, string> {
  const attrs: Record<string, string> = { ...spc.parameters, ...overrides }
  attrs[ATTR.secretProviderClass] = spc.name
  attrs[ATTR.podName] = pod.name
  attrs[ATTR.podNamespace] = pod.namespace
  attrs[ATTR.podUid] = pod.uid ?? randomUUID()
  attrs[ATTR.serviceAccount] = pod.serviceAccount
  attrs['csi.storage.k8s.io/ephemeral'] = 'false'
  if (token) {
    attrs[ATTR.tokens] = JSON.stringify({
      [token.audience]: { token: token.jwt, expirationTimestamp: new Date(Date.now() + 600_000).toISOString() },
    })
  }
  return attrs
}

export async function readTokenFile(file: string): Promise<string> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read the token file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`)
  }
  const jwt = text.trim()
  if (jwt === '') throw new UsageError(`the token file ${file} is empty`)
  return jwt
}

/** `kubectl create token` for the service account, with the audience Vault expects. */
export function tokenFromKubectl(
  namespace: string,
  serviceAccount: string,
  audience: string,
  kubectl = process.env.KUBECTL ?? 'kubectl',
): Promise<string> {
  const args = ['create', 'token', serviceAccount, '-n', namespace, `--audience=${audience}`, '--duration=10m']
  return new Promise((resolve, reject) => {
    execFile(kubectl, args, { timeout: 30_000, maxBuffer: 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        const reason = String(stderr || err.message)
          .trim()
          .split('\n')[0]
        reject(new UsageError(`kubectl ${args.slice(0, 3).join(' ')} -n ${namespace} failed: ${reason}`))
        return
      }
      const jwt = stdout.trim()
      if (jwt === '') reject(new UsageError('kubectl create token printed no token'))
      else resolve(jwt)
    })
  })
}
