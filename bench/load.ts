// The load: Mount calls through the Secrets Store CSI driver's own client
// code (test/driver-client, mode mount-many: the driver's PluginClientBuilder
// and MountContent, one gRPC connection shared by all calls, files written by
// the kubelet atomic writer), many at once from one process.
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { DRIVER_CLIENT_BIN } from '../test/support/driver-client.js'
import { AUTH_MOUNT, NAMESPACE, ROLE, SERVICE_ACCOUNT } from './world.js'

export interface SpcObject {
  objectName: string
  secretPath: string
  secretKey?: string
  method?: string
  secretArgs?: Record<string, string>
}

export interface Pod {
  name: string
  uid: string
  jwt: string
  target: string
}

export interface CallResult {
  index: number
  ok: boolean
  errorCode: string
  grpcCode: string
  message?: string
  objects: number
  startUnixMs: number
  rpcStartUnixMs: number
  rpcMs: number
  totalMs: number
}

export interface ManyOutput {
  ok: boolean
  message?: string
  startUnixMs: number
  wallMs: number
  results: CallResult[]
}

/** `count` pods of the bench service account, each with a target directory under `dir`. */
export async function makePods(
  dir: string,
  prefix: string,
  count: number,
  jwtFor: (name: string, uid: string) => string,
): Promise<Pod[]> {
  const pods: Pod[] = []
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${i}`
    const uid = randomUUID()
    const target = join(dir, 'targets', name)
    await mkdir(target, { recursive: true })
    pods.push({ name, uid, jwt: jwtFor(name, uid), target })
  }
  return pods
}

/**
 * The attributes the driver sends for `pod`: the SecretProviderClass parameters (with
 * `audience: vault` for both providers), then the
 * kubelet's pod keys and the driver-minted token for audience `vault` (so neither provider
 * calls TokenRequest). `extra` overrides SPC parameters (e.g. a per-pod vaultAddress).
 */
export function attributesFor(pod: Pod, objects: SpcObject[], extra: Record<string, string> = {}): string {
  const attrs: Record<string, string> = {
    roleName: ROLE,
    vaultKubernetesMountPath: AUTH_MOUNT,
    // Both providers look the driver-minted token up under this audience (openbao-csi-provider's
    // default is `openbao`; without this it would fall back to TokenRequest).
    audience: 'vault',
    objects: stringify(objects),
    secretProviderClass: 'bench-spc',
    ...extra,
    'csi.storage.k8s.io/pod.name': pod.name,
    'csi.storage.k8s.io/pod.namespace': NAMESPACE,
    'csi.storage.k8s.io/pod.uid': pod.uid,
    'csi.storage.k8s.io/serviceAccount.name': SERVICE_ACCOUNT,
    'csi.storage.k8s.io/ephemeral': 'false',
    'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify({
      vault: { token: pod.jwt, expirationTimestamp: new Date(Date.now() + 3_600_000).toISOString() },
    }),
  }
  return JSON.stringify(attrs)
}

export interface ManyCall {
  target: string
  attributes: string
}

/**
 * Runs `calls` through `driver-client mount-many`: `concurrency` workers, worker w runs calls
 * w, w+concurrency, … in order; all workers start together. With `intervalMs`, call i starts no
 * sooner than i × intervalMs after the first (a steady rate).
 */
export async function mountMany(
  socketDir: string,
  calls: ManyCall[],
  concurrency: number,
  specDir: string,
  { timeoutMs = 120_000, intervalMs = 0 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<ManyOutput> {
  const bin = process.env['BENCH_DRIVER_CLIENT_BIN'] ?? DRIVER_CLIENT_BIN
  if (!existsSync(bin)) throw new Error(`driver-client not found at ${bin}: run scripts/setup.sh`)
  const specPath = join(specDir, `spec-${randomUUID()}.json`)
  await writeFile(
    specPath,
    JSON.stringify({
      socketDir,
      provider: 'vault',
      timeoutMs,
      concurrency,
      intervalMs,
      calls: calls.map((c) => ({ target: c.target, attributes: c.attributes, secrets: 'null', permission: '420' })),
    }),
  )
  const stdout = await new Promise<string>((res, rej) =>
    execFile(
      bin,
      ['mount-many', '--spec', specPath],
      {
        encoding: 'utf8',
        maxBuffer: 256 * 1024 * 1024,
        timeout: (timeoutMs + intervalMs) * Math.max(1, Math.ceil(calls.length / concurrency)) + 30_000,
      },
      (err, out, stderr) => (err ? rej(new Error(`driver-client mount-many: ${err.message}\n${stderr}`)) : res(out)),
    ),
  )
  const out = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as ManyOutput
  if (!out.ok) throw new Error(`driver-client mount-many: ${out.message ?? 'failed'}`)
  return out
}

export function failures(out: ManyOutput): { count: number; sample: string | undefined } {
  const bad = out.results.filter((r) => !r.ok)
  return { count: bad.length, sample: bad[0] ? `${bad[0].grpcCode}: ${bad[0].message ?? ''}`.slice(0, 300) : undefined }
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN
  const s = [...values].sort((a, b) => a - b)
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))
  return s[i]!
}
