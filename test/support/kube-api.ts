// A loopback stand-in for the few Kubernetes API endpoints this project and
// OpenBao's `kubernetes` auth call: TokenRequest, Secret get/create and
// TokenReview. No kube-apiserver can run on these machines; this stub speaks
// the same JSON shapes and signs real service-account JWTs with the test key.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createPublicKey, createVerify } from 'node:crypto'
import { defaultKeyPair, signServiceAccountJwt, type JwtKeyPair } from './jwt.js'

export interface KubeApiCall {
  method: string
  path: string
}

export interface KubeApi {
  url: string
  calls: KubeApiCall[]
  secrets: Map<string, Record<string, string>>
  /** Tokens the stub minted through TokenRequest. */
  issued: string[]
  close(): Promise<void>
}

async function readBody(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  return text === '' ? undefined : JSON.parse(text)
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

function verifyJwt(jwt: string, key: JwtKeyPair): Record<string, any> | undefined {
  const [h, p, s] = jwt.split('.')
  if (!h || !p || !s) return undefined
  const v = createVerify('RSA-SHA256')
  v.update(`${h}.${p}`)
  if (!v.verify(createPublicKey(key.publicKeyPem), Buffer.from(s, 'base64url'))) return undefined
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, any>
  if (typeof claims.exp === 'number' && claims.exp < Date.now() / 1000) return undefined
  return claims
}

export async function startKubeApi(key: JwtKeyPair = defaultKeyPair()): Promise<KubeApi> {
  const calls: KubeApiCall[] = []
  const secrets = new Map<string, Record<string, string>>()
  const issued: string[] = []
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://stub')
      calls.push({ method: req.method ?? '', path: url.pathname })
      const body = await readBody(req)
      let m = /^\/api\/v1\/namespaces\/([^/]+)\/serviceaccounts\/([^/]+)\/token$/.exec(url.pathname)
      if (m && req.method === 'POST') {
        const ref = body?.spec?.boundObjectRef ?? {}
        const audiences: string[] = body?.spec?.audiences ?? []
        const token = signServiceAccountJwt(
          {
            namespace: decodeURIComponent(m[1]!),
            serviceAccount: decodeURIComponent(m[2]!),
            podName: ref.name ?? 'unknown',
            podUid: ref.uid ?? 'unknown',
            audience: audiences,
            expiresInSec: body?.spec?.expirationSeconds ?? 600,
          },
          key,
        )
        issued.push(token)
        send(res, 201, {
          kind: 'TokenRequest',
          apiVersion: 'authentication.k8s.io/v1',
          spec: body?.spec,
          status: { token, expirationTimestamp: new Date(Date.now() + 600_000).toISOString() },
        })
        return
      }
      m = /^\/api\/v1\/namespaces\/([^/]+)\/secrets(?:\/([^/]+))?$/.exec(url.pathname)
      if (m) {
        const ns = decodeURIComponent(m[1]!)
        if (req.method === 'GET' && m[2]) {
          const data = secrets.get(`${ns}/${decodeURIComponent(m[2])}`)
          if (!data)
            return send(res, 404, {
              kind: 'Status',
              status: 'Failure',
              reason: 'NotFound',
              code: 404,
              message: 'secrets not found',
            })
          return send(res, 200, { kind: 'Secret', metadata: { name: m[2], namespace: ns }, data })
        }
        if (req.method === 'POST' && !m[2]) {
          const name = body?.metadata?.name as string
          const id = `${ns}/${name}`
          if (secrets.has(id))
            return send(res, 409, { kind: 'Status', reason: 'AlreadyExists', code: 409, message: 'already exists' })
          secrets.set(id, body?.data ?? {})
          return send(res, 201, body)
        }
      }
      if (url.pathname === '/apis/authentication.k8s.io/v1/tokenreviews' && req.method === 'POST') {
        const claims = verifyJwt(body?.spec?.token ?? '', key)
        const wanted: string[] = body?.spec?.audiences ?? []
        const aud: string[] = claims ? (Array.isArray(claims.aud) ? claims.aud : [claims.aud]) : []
        const ok = claims !== undefined && (wanted.length === 0 || wanted.some((a) => aud.includes(a)))
        const k8s = claims?.['kubernetes.io'] ?? {}
        return send(res, 201, {
          kind: 'TokenReview',
          apiVersion: 'authentication.k8s.io/v1',
          status: ok
            ? {
                authenticated: true,
                audiences: wanted.length ? wanted : aud,
                user: {
                  username: claims!.sub,
                  uid: k8s.serviceaccount?.uid ?? 'uid',
                  groups: ['system:serviceaccounts', `system:serviceaccounts:${k8s.namespace}`],
                },
              }
            : { authenticated: false, error: 'invalid bearer token' },
        })
      }
      send(res, 404, { kind: 'Status', code: 404, message: `stub does not serve ${req.method} ${url.pathname}` })
    })().catch((err: unknown) => send(res, 500, { message: String(err) }))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const addr = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${addr.port}`,
    calls,
    secrets,
    issued,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}
