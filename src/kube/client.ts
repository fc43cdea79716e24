/**
 * The few Kubernetes API calls the provider makes (TokenRequest, Secret get
 * and create, an access review), with the in-cluster service account, over
 * undici: the same HTTP client as Vault's transport. A full Kubernetes client
 * library would bring hundreds of files into a per-node daemon for these.
 * A call made for a Mount takes the Mount's deadline: its time limit, and its
 * signal that ends the call when the driver cancels the Mount. The client
 * is built at start and opens its pool on its first call.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { Pool } from 'undici'
import { ProviderError, q } from '../errors.js'
import type { Deadline } from '../util/deadline.js'

export const KUBE_REQUEST_TIMEOUT_MS = 10_000
/**
 * How long an idle connection to the API server is kept: as for Vault (DEFAULT_VAULT_IDLE_CONNECTION_MS),
 * the API server sends no Keep-Alive hint, so undici's own 4 s default would make a TokenRequest
 * for a Mount more than 4 s after the last one open a new TLS connection. The API server closes
 * idle connections itself, with a FIN the pool sees, after 90 s (kube-apiserver 1.35, measured).
 */
export const KUBE_IDLE_CONNECTION_MS = 30_000
const SA_TOKEN_REREAD_MS = 60_000
const MAX_KUBE_RESPONSE_BYTES = 4 * 1024 * 1024

export interface KubeClientOptions {
  /** Explicit API URL (e.g. `kubectl proxy`); otherwise KUBERNETES_SERVICE_HOST/PORT. */
  apiUrl?: string
  serviceAccountDir: string
  env: NodeJS.ProcessEnv
}

export interface IssuedToken {
  token: string
  expirationTimestamp?: string
}

/** The Mount's caller left while a call was in flight. */
class KubeCallCancelled extends Error {}
/** No usable answer; the message is the socket code (ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT) or the reason. */
class KubeCallFailed extends Error {}

interface KubeResponse {
  status: number
  body: unknown
}

export class KubeClient {
  private readonly baseUrl: URL
  private readonly saDir: string
  private readonly useServiceAccount: boolean
  private ca: Buffer | undefined
  private cachedToken: { value: string; readAt: number } | undefined
  /** The connection pool, from the first call on. */
  private pool: Pool | undefined
  private closed = false

  private constructor(baseUrl: URL, saDir: string, useServiceAccount: boolean, ca: Buffer | undefined) {
    this.baseUrl = baseUrl
    this.saDir = saDir
    this.useServiceAccount = useServiceAccount
    this.ca = ca
  }

  private connection(): Pool {
    this.pool ??= new Pool(this.baseUrl.origin, {
      connections: 8,
      keepAliveTimeout: KUBE_IDLE_CONNECTION_MS,
      keepAliveMaxTimeout: KUBE_IDLE_CONNECTION_MS,
      ...(this.baseUrl.protocol === 'https:' && this.ca !== undefined ? { connect: { ca: this.ca } } : {}),
    })
    return this.pool
  }

  /** Returns undefined when the process runs neither in a cluster nor with an explicit API URL. */
  static async discover(opts: KubeClientOptions): Promise<KubeClient | undefined> {
    if (opts.apiUrl) {
      const url = new URL(opts.apiUrl)
      const hasToken = await readFile(path.join(opts.serviceAccountDir, 'token')).then(
        () => true,
        () => false,
      )
      // An API server with a cluster-private CA (every real one) is trusted through the same
      // ca.crt as in-cluster; without the file, the system's CAs.
      const ca =
        url.protocol === 'https:'
          ? await readFile(path.join(opts.serviceAccountDir, 'ca.crt')).catch(() => undefined)
          : undefined
      return new KubeClient(url, opts.serviceAccountDir, hasToken && url.protocol === 'https:', ca)
    }
    const host = opts.env.KUBERNETES_SERVICE_HOST
    const port = opts.env.KUBERNETES_SERVICE_PORT
    if (!host || !port) return undefined
    const hostPart = host.includes(':') ? `[${host}]` : host
    const ca = await readFile(path.join(opts.serviceAccountDir, 'ca.crt')).catch(() => undefined)
    return new KubeClient(new URL(`https://${hostPart}:${port}`), opts.serviceAccountDir, true, ca)
  }

  /** The namespace the provider itself runs in (where its HMAC Secret lives). */
  async ownNamespace(env: NodeJS.ProcessEnv): Promise<string> {
    if (env.POD_NAMESPACE) return env.POD_NAMESPACE
    const ns = await readFile(path.join(this.saDir, 'namespace'), 'utf8').catch(() => '')
    return ns.trim() || 'default'
  }

  private async bearer(): Promise<string | undefined> {
    if (!this.useServiceAccount) return undefined
    const now = Date.now()
    // Projected tokens rotate on disk; re-read them periodically, not per call.
    if (!this.cachedToken || now - this.cachedToken.readAt > SA_TOKEN_REREAD_MS) {
      const value = (await readFile(path.join(this.saDir, 'token'), 'utf8')).trim()
      this.cachedToken = { value, readAt: now }
    }
    return this.cachedToken.value
  }

  private async call(
    method: string,
    apiPath: string,
    body: unknown,
    deadline: Deadline | undefined,
  ): Promise<KubeResponse> {
    const url = new URL(apiPath, this.baseUrl)
    const headers: Record<string, string> = { accept: 'application/json' }
    const token = await this.bearer().catch(() => undefined)
    if (token) headers.authorization = `Bearer ${token}`
    const payload = body === undefined ? undefined : JSON.stringify(body)
    if (payload !== undefined) headers['content-type'] = 'application/json'
    const timeoutMs = Math.max(1, Math.min(KUBE_REQUEST_TIMEOUT_MS, deadline?.remainingMs() ?? KUBE_REQUEST_TIMEOUT_MS))
    const signals = [AbortSignal.timeout(timeoutMs), ...(deadline?.signal ? [deadline.signal] : [])]
    const signal = AbortSignal.any(signals)
    try {
      // A closed client opens no pool: its calls fail as on undici's destroyed pool (UND_ERR_DESTROYED).
      if (this.closed) throw new KubeCallFailed('UND_ERR_DESTROYED')
      const res = await this.connection().request({
        path: `${url.pathname}${url.search}`,
        method: method as 'GET',
        headers,
        body: payload,
        signal,
        headersTimeout: 0,
        bodyTimeout: 0,
      })
      const chunks: Buffer[] = []
      let size = 0
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length
        if (size > MAX_KUBE_RESPONSE_BYTES) {
          res.body.on('error', () => undefined)
          res.body.destroy()
          throw new KubeCallFailed('response too large')
        }
        chunks.push(chunk)
      }
      const text = Buffer.concat(chunks).toString('utf8')
      let parsed: unknown
      try {
        parsed = text === '' ? undefined : JSON.parse(text)
      } catch {
        parsed = undefined
      }
      return { status: res.statusCode, body: parsed }
    } catch (err) {
      if (err instanceof KubeCallFailed) throw err
      if (deadline?.cancelled) throw new KubeCallCancelled('cancelled', { cause: err })
      if (signals[0]!.aborted) throw new KubeCallFailed(`timed out after ${timeoutMs} ms`, { cause: err })
      // undici reports a closed socket as UND_ERR_SOCKET, with the system error (if any) as its cause.
      const code = (err as NodeJS.ErrnoException).code
      const causeCode = (err as { cause?: { code?: unknown } }).cause?.code
      const reason = code === 'UND_ERR_SOCKET' && typeof causeCode === 'string' ? causeCode : code
      throw new KubeCallFailed(reason ?? (err as Error).message, { cause: err })
    }
  }

  private async request(
    method: string,
    apiPath: string,
    what: string,
    body?: unknown,
    deadline?: Deadline,
  ): Promise<KubeResponse> {
    try {
      return await this.call(method, apiPath, body, deadline)
    } catch (err) {
      if (err instanceof KubeCallCancelled) {
        throw new ProviderError('CANCELLED', `${what}: the driver cancelled the Mount before the API answered`)
      }
      const reason = err instanceof KubeCallFailed ? err.message : 'error'
      throw new ProviderError(
        'KUBERNETES_API',
        `${what}: Kubernetes API at ${this.baseUrl.origin} unreachable (${reason})`,
      )
    }
  }

  private static statusMessage(res: KubeResponse): string {
    const b = res.body as { message?: unknown } | undefined
    return typeof b?.message === 'string' ? `${res.status}: ${b.message}` : String(res.status)
  }

  /** TokenRequest for the pod's service account, bound to the pod. */
  async createPodToken(
    namespace: string,
    serviceAccount: string,
    opts: { audience: string; podName: string; podUid: string; expirationSeconds: number; deadline?: Deadline },
  ): Promise<IssuedToken> {
    const what = `TokenRequest for service account ${namespace}/${serviceAccount} (audience ${q(opts.audience)})`
    const res = await this.request(
      'POST',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(serviceAccount)}/token`,
      what,
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: [opts.audience],
          expirationSeconds: opts.expirationSeconds,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: opts.podName, uid: opts.podUid },
        },
      },
      opts.deadline,
    )
    const status = (res.body as { status?: { token?: unknown; expirationTimestamp?: unknown } } | undefined)?.status
    if (res.status !== 201 && res.status !== 200) {
      throw new ProviderError('KUBERNETES_API', `${what} failed with ${KubeClient.statusMessage(res)}`)
    }
    if (typeof status?.token !== 'string' || status.token === '') {
      throw new ProviderError('KUBERNETES_API', `${what}: the answer carries no token`)
    }
    return {
      token: status.token,
      expirationTimestamp: typeof status.expirationTimestamp === 'string' ? status.expirationTimestamp : undefined,
    }
  }

  /** The Secret's data (base64-decoded), or undefined when it does not exist. */
  async getSecret(namespace: string, name: string, deadline?: Deadline): Promise<Map<string, Buffer> | undefined> {
    const what = `reading Secret ${namespace}/${name}`
    const res = await this.request(
      'GET',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
      what,
      undefined,
      deadline,
    )
    if (res.status === 404) return undefined
    if (res.status !== 200)
      throw new ProviderError('KUBERNETES_API', `${what} failed with ${KubeClient.statusMessage(res)}`)
    const data = (res.body as { data?: Record<string, unknown> } | undefined)?.data ?? {}
    const out = new Map<string, Buffer>()
    for (const [k, v] of Object.entries(data)) {
      if (typeof v === 'string') out.set(k, Buffer.from(v, 'base64'))
    }
    return out
  }

  /** Creates an immutable Secret; returns false if it already exists (someone else won the race). */
  async createSecret(
    namespace: string,
    name: string,
    data: Map<string, Buffer>,
    deadline?: Deadline,
  ): Promise<boolean> {
    const what = `creating Secret ${namespace}/${name}`
    const res = await this.request(
      'POST',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`,
      what,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'vault-csi-provider' } },
        immutable: true,
        type: 'Opaque',
        data: Object.fromEntries([...data].map(([k, v]) => [k, v.toString('base64')])),
      },
      deadline,
    )
    if (res.status === 409) return false
    if (res.status !== 201 && res.status !== 200) {
      throw new ProviderError('KUBERNETES_API', `${what} failed with ${KubeClient.statusMessage(res)}`)
    }
    return true
  }

  /**
   * SelfSubjectAccessReview: whether the provider's own identity may do `verb` on `resource`
   * (namespace '' means every namespace). Any authenticated identity may ask this.
   */
  async canI(
    namespace: string,
    verb: string,
    resource: string,
    opts: { name?: string; subresource?: string } = {},
  ): Promise<boolean> {
    const what = `checking whether the provider may ${verb} ${resource}${opts.subresource ? `/${opts.subresource}` : ''}`
    const res = await this.request('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', what, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { namespace, verb, group: '', resource, ...opts } },
    })
    if (res.status !== 201 && res.status !== 200) {
      throw new ProviderError('KUBERNETES_API', `${what} failed with ${KubeClient.statusMessage(res)}`)
    }
    return (res.body as { status?: { allowed?: unknown } } | undefined)?.status?.allowed === true
  }

  close(): void {
    this.closed = true
    this.pool?.destroy().catch(() => undefined)
  }
}
