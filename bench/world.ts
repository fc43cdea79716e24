// Everything the providers talk to, started once per benchmark run and shared
// by both providers: a real OpenBao (dev mode, file audit device, `jwt` auth),
// a real PostgreSQL behind OpenBao's database engine, a PKI engine, the KV
// values of every scenario, and a real kube-apiserver (+ etcd; the provider's
// namespace, ServiceAccount and RBAC from daemonset/, the HMAC key Secret)
// behind a timing HTTPS front with a self-signed certificate.
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { configureJwtAuth, createJwtRole, signServiceAccountJwt } from '../test/support/jwt.js'
import { PACKAGE_ROOT } from '../src/package-info.js'
import { applyObjects, refusals } from '../test/support/kube-apply.js'
import { requestToken, startKubeCluster, type KubeCluster } from '../test/support/kube-cluster.js'
import { kustomizeBuild } from '../test/support/manifests.js'
import { configurePki } from '../test/support/pki.js'
import { mustSucceed, startOpenBao, type OpenBao } from '../test/support/openbao.js'
import { configurePostgresSecretsEngine, startPostgres, type Postgres } from '../test/support/postgres.js'
import { startTimingProxy, type TimingProxy } from './proxy.js'

export const NAMESPACE = 'bench'
export const SERVICE_ACCOUNT = 'app'
export const AUTH_MOUNT = 'jwt'
export const ROLE = 'bench'
export const HMAC_SECRET_NAME = 'vault-csi-provider-hmac-key'
/** Provider's own namespace (where the HMAC Secret lives), as daemonset/ creates it. */
export const PROVIDER_NAMESPACE = 'vault-csi-provider'

/**
 * Time-to-live choices. The churn scenario compresses time (one simulated
 * minute = a few real seconds) but keeps these production-like TTLs unscaled:
 * ten simulated minutes end far before two thirds of any of them, in simulated
 * and in real time alike, so the counts equal those of an uncompressed run.
 */
export const TTL = { token: '1h', dbCreds: '1h', dbMax: '24h', cert: '24h', pkiMax: '72h' }

export interface World {
  bao: OpenBao
  auditFile: string
  pg: Postgres | undefined
  kube: KubeCluster
  /** Timing HTTPS front of the API server (what KUBERNETES_SERVICE_HOST/PORT name). */
  kubeTls: TimingProxy
  /** The provider's service-account files: a real token, namespace, the front's ca.crt. */
  saDir: string
  /** With WorldOptions.vaultTls: the certificate the latency scenario's timing proxies in front of OpenBao serve. */
  vaultFrontTls: FrontTls | undefined
  dir: string
  podJwt(podName: string, podUid: string): string
  stop(): Promise<void>
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((res, rej) =>
    execFile(cmd, args, { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) =>
      err ? rej(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`)) : res(stdout),
    ),
  )
}

export interface FrontTls {
  key: string
  cert: string
  /** The certificate's file: a provider's CA file for this front. */
  certPath: string
}

/** A self-signed certificate for 127.0.0.1 (a timing front: `name` says whose), made by openssl. */
async function selfSigned(dir: string, name: string): Promise<FrontTls> {
  const keyPath = join(dir, `${name}.key`)
  const certPath = join(dir, `${name}.crt`)
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyPath,
    '-out',
    certPath,
    '-days',
    '2',
    '-subj',
    `/CN=${name}-bench-front`,
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc',
  ])
  return { key: await readFile(keyPath, 'utf8'), cert: await readFile(certPath, 'utf8'), certPath }
}

export interface WorldOptions {
  /** Start PostgreSQL and the database engine (churn scenario). */
  database: boolean
  /** Make a certificate for HTTPS timing proxies in front of OpenBao (--vault-tls). */
  vaultTls: boolean
  log: (msg: string) => void
}

export async function startWorld(o: WorldOptions): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), 'vcp-bench-'))
  const auditFile = join(dir, 'audit.log')
  const stack: Array<() => Promise<void>> = []
  const stopAll = async (): Promise<void> => {
    while (stack.length > 0) await stack.pop()!().catch(() => undefined)
    await rm(dir, { recursive: true, force: true })
  }
  try {
    o.log('starting OpenBao (dev mode, file audit device)')
    const bao = await startOpenBao({ auditFile })
    stack.push(() => bao.stop())

    await configureJwtAuth(bao, AUTH_MOUNT)
    await bao.writePolicy(
      'bench',
      [
        'path "secret/data/*" { capabilities = ["read"] }',
        'path "database/creds/app" { capabilities = ["read"] }',
        'path "pki/issue/app" { capabilities = ["create", "update"] }',
      ].join('\n'),
    )
    await createJwtRole(bao, AUTH_MOUNT, ROLE, {
      policies: ['bench'],
      boundAudiences: ['vault'],
      boundSubject: `system:serviceaccount:${NAMESPACE}:${SERVICE_ACCOUNT}`,
      ttl: TTL.token,
    })

    // PKI: EC P-256 keys, so that issuing 1,100 certificates does not turn the run into an RSA
    // key-generation benchmark on two cores; the same for both providers.
    await configurePki(bao, {
      rootCommonName: 'Bench Root',
      rootTtl: '87600h',
      role: 'app',
      allowedDomains: ['bench.test'],
      maxTtl: TTL.pkiMax,
    })

    // KV values: storm/latency (5 small values) and footprint (10 values of 10 KiB).
    for (let i = 1; i <= 5; i++) {
      mustSucceed(
        `kv small ${i}`,
        await bao.api('POST', `/v1/secret/data/bench/small-${i}`, {
          data: { value: `value-${i}-${randomBytes(8).toString('hex')}` },
        }),
      )
    }
    for (let i = 1; i <= 10; i++) {
      mustSucceed(
        `kv big ${i}`,
        await bao.api('POST', `/v1/secret/data/bench/big-${i}`, {
          data: { value: randomBytes(5 * 1024).toString('hex') },
        }),
      )
    }

    let pg: Postgres | undefined
    if (o.database) {
      o.log('starting PostgreSQL and the database secrets engine')
      pg = await startPostgres()
      stack.push(() => pg!.stop())
      await configurePostgresSecretsEngine(bao, pg, { role: 'app', defaultTtl: TTL.dbCreds, maxTtl: TTL.dbMax })
    }

    o.log('starting etcd and kube-apiserver; the provider’s namespace and RBAC from daemonset/')
    const kube = await startKubeCluster({ nodes: [] })
    stack.push(() => kube.stop())
    const applied = await applyObjects(kube.admin, await kustomizeBuild(join(PACKAGE_ROOT, 'daemonset')))
    if (refusals(applied).length > 0) throw new Error(`daemonset/ refused: ${refusals(applied).join('; ')}`)
    // The HMAC key Secret exists beforehand (as after the first node created it), so both
    // providers read the same key and neither races to create it.
    await kube.admin.must('POST', `/api/v1/namespaces/${PROVIDER_NAMESPACE}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: HMAC_SECRET_NAME },
      immutable: true,
      data: { key: randomBytes(32).toString('base64') },
    })
    const tls = await selfSigned(dir, 'kube-api')
    const vaultFrontTls = o.vaultTls ? await selfSigned(dir, 'vault') : undefined
    const kubeTls = await startTimingProxy(kube.url, { tls, upstreamCa: kube.caPem })
    stack.push(() => kubeTls.close())

    const saDir = join(dir, 'serviceaccount')
    await run('mkdir', ['-p', saDir])
    await writeFile(join(saDir, 'ca.crt'), tls.cert)
    await writeFile(join(saDir, 'namespace'), PROVIDER_NAMESPACE)
    // The provider's own token, from the API server, with the RBAC of daemonset/base.
    const own = await requestToken(kube.admin, PROVIDER_NAMESPACE, 'vault-csi-provider', {
      expirationSeconds: 24 * 3600,
    })
    await writeFile(join(saDir, 'token'), own.token)

    // Warm OpenBao up (first logins and reads of a fresh server are slower), so that the
    // variant that happens to run first is not penalised. Before any scenario: not counted.
    for (let i = 0; i < 10; i++) {
      const jwt = signServiceAccountJwt({
        namespace: NAMESPACE,
        serviceAccount: SERVICE_ACCOUNT,
        podName: `warm-up-${i}`,
        podUid: `warm-up-${i}`,
        audience: 'vault',
      })
      const login = await bao.api('POST', `/v1/auth/${AUTH_MOUNT}/login`, { jwt, role: ROLE }, { token: '' })
      mustSucceed('warm-up login', login)
      const token = (login.body as { auth: { client_token: string } }).auth.client_token
      for (let k = 1; k <= 5; k++)
        mustSucceed('warm-up read', await bao.api('GET', `/v1/secret/data/bench/small-${k}`, undefined, { token }))
      mustSucceed('warm-up revoke', await bao.api('POST', '/v1/auth/token/revoke-self', undefined, { token }))
    }

    return {
      bao,
      auditFile,
      pg,
      kube,
      kubeTls,
      saDir,
      vaultFrontTls,
      dir,
      podJwt: (podName, podUid) =>
        signServiceAccountJwt({
          namespace: NAMESPACE,
          serviceAccount: SERVICE_ACCOUNT,
          podName,
          podUid,
          audience: 'vault',
          expiresInSec: 3600,
        }),
      stop: stopAll,
    }
  } catch (err) {
    await stopAll()
    throw err
  }
}
