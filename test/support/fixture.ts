// One integration environment: a real OpenBao with `jwt` auth, the provider
// daemon on a real socket, and Mounts through the driver's own client.
import { randomUUID } from 'node:crypto'
import { stringify } from 'yaml'
import { driverMount, readMountedFiles, type DriverMountResult, type MountedFile } from './driver-client.js'
import { configureJwtAuth, createJwtRole, signServiceAccountJwt } from './jwt.js'
import { startOpenBao, type OpenBao, type OpenBaoAdmin } from './openbao.js'
import { startProvider, type ProviderProcess, type StartProviderOptions } from './provider.js'
import { processTempDir } from './tmp.js'

export const JWT_MOUNT = 'jwt'
export const DEFAULT_ROLE = 'app'
export const DEFAULT_POLICY = 'app-read'

/** `jwt` auth at `jwt/` and the role `app` for the service account default/app (audience `vault`), with `policy`. */
export async function allowDefaultApp(
  bao: OpenBaoAdmin,
  policy = 'path "secret/*" { capabilities = ["read"] }',
): Promise<void> {
  await configureJwtAuth(bao, JWT_MOUNT)
  await bao.writePolicy(DEFAULT_POLICY, policy)
  await createJwtRole(bao, JWT_MOUNT, DEFAULT_ROLE, {
    policies: [DEFAULT_POLICY],
    boundAudiences: ['vault'],
    boundSubject: 'system:serviceaccount:default:app',
    ttl: '1h',
  })
}

export interface PodSpec {
  namespace?: string
  name?: string
  uid?: string
  serviceAccount?: string
  /** Audience of the driver-minted token (default 'vault'); null: no tokens attribute. */
  tokenAudience?: string | null
  /** The pod's JWT (default: signed for the pod and audience). */
  jwt?: string
}

export interface MountOptions {
  pod?: PodSpec
  /** SecretProviderClass parameters; `objects` may be given as an array (YAML-stringified). */
  params: Record<string, unknown>
  permission?: string
  secrets?: string | Record<string, string>
  targetPath?: string
  timeoutMs?: number
}

export interface MountOutcome {
  result: DriverMountResult
  files: Map<string, MountedFile>
  targetPath: string
  attributes: Record<string, string>
}

export class Fixture {
  readonly bao: OpenBao
  provider: ProviderProcess
  /** Every JWT issued to a pod in this fixture, for leak checks. */
  readonly issuedJwts: string[] = []

  private constructor(bao: OpenBao, provider: ProviderProcess) {
    this.bao = bao
    this.provider = provider
  }

  /** A fixture over an OpenBao and a provider the test set up itself. */
  static attach(bao: OpenBao, provider: ProviderProcess): Fixture {
    return new Fixture(bao, provider)
  }

  /** OpenBao with jwt auth at `jwt/`, a role `app` reading `secret/*`, and a provider. */
  static async start(providerOpts: StartProviderOptions = {}): Promise<Fixture> {
    const bao = await startOpenBao()
    await allowDefaultApp(bao, 'path "secret/*" { capabilities = ["read"] }\npath "kv1/*" { capabilities = ["read"] }')
    const provider = await startProvider({
      ...providerOpts,
      args: [`-vault-addr=${bao.addr}`, ...(providerOpts.args ?? [])],
    })
    return new Fixture(bao, provider)
  }

  async restartProvider(signal: NodeJS.Signals = 'SIGTERM', opts: StartProviderOptions = {}): Promise<void> {
    await this.provider.stop(signal)
    this.provider = await startProvider({
      socketDir: this.provider.socketDir,
      ...opts,
      args: [`-vault-addr=${this.bao.addr}`, ...(opts.args ?? [])],
    })
  }

  /** Writes a KV v2 secret at secret/<path> with the root token. */
  async kvPut(path: string, data: Record<string, unknown>): Promise<void> {
    const res = await this.bao.api('POST', `/v1/secret/data/${path}`, { data })
    if (res.status !== 200) throw new Error(`kv put ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  }

  podAttributes(pod: PodSpec = {}): Record<string, string> {
    const namespace = pod.namespace ?? 'default'
    const name = pod.name ?? 'app-0'
    const uid = pod.uid ?? randomUUID()
    const serviceAccount = pod.serviceAccount ?? 'app'
    const attrs: Record<string, string> = {
      'csi.storage.k8s.io/pod.name': name,
      'csi.storage.k8s.io/pod.namespace': namespace,
      'csi.storage.k8s.io/pod.uid': uid,
      'csi.storage.k8s.io/serviceAccount.name': serviceAccount,
      'csi.storage.k8s.io/ephemeral': 'false',
    }
    const audience = pod.tokenAudience === undefined ? 'vault' : pod.tokenAudience
    if (audience !== null) {
      const jwt =
        pod.jwt ??
        signServiceAccountJwt({ namespace, serviceAccount, podName: name, podUid: uid, audience, expiresInSec: 600 })
      this.issuedJwts.push(jwt)
      attrs['csi.storage.k8s.io/serviceAccount.tokens'] = JSON.stringify({
        [audience]: { token: jwt, expirationTimestamp: new Date(Date.now() + 600_000).toISOString() },
      })
    }
    return attrs
  }

  buildAttributes(opts: MountOptions): Record<string, string> {
    const params: Record<string, string> = {
      roleName: DEFAULT_ROLE,
      vaultAuthMountPath: JWT_MOUNT,
      secretProviderClass: 'test-spc',
    }
    for (const [k, v] of Object.entries(opts.params)) {
      params[k] = typeof v === 'string' ? v : stringify(v)
    }
    return { ...params, ...this.podAttributes(opts.pod) }
  }

  async mount(opts: MountOptions): Promise<MountOutcome> {
    const attributes = this.buildAttributes(opts)
    return this.mountRaw(attributes, opts)
  }

  async mountRaw(
    attributes: Record<string, string> | string,
    opts: Omit<MountOptions, 'params'> = {},
  ): Promise<MountOutcome> {
    const targetPath = opts.targetPath ?? (await processTempDir('target-'))
    const result = await driverMount({
      socketDir: this.provider.socketDir,
      provider: 'vault',
      targetPath,
      permission: opts.permission ?? '420',
      attributes,
      secrets: opts.secrets ?? 'null',
      timeoutMs: opts.timeoutMs ?? 30_000,
    })
    const files = result.ok ? await readMountedFiles(targetPath) : new Map<string, MountedFile>()
    return { result, files, targetPath, attributes: typeof attributes === 'string' ? {} : attributes }
  }

  async stop(): Promise<void> {
    await this.provider.stop()
    await this.bao.stop()
  }
}
