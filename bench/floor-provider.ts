/**
 * The floor of the latency and footprint scenarios: the least a provider on Node can do for one
 * Mount with the libraries ours loads (grpc-js with the provider's .proto files through
 * @grpc/proto-loader on a unix socket, undici to Vault, yaml for `objects`) and none of the
 * provider's own work: no validation, limits, caches but the pod's Vault token and the parsed
 * `objects` (both of which ours caches too), retries, metrics, logs or error texts. It answers the
 * benchmark's Mounts (5 KV objects, pod tokens from the driver) and nothing else.
 *
 * What it costs per Mount and the memory it holds are what Node and these libraries cost on this
 * machine; ours minus the floor is what the provider's own work costs. It is a measuring stick for
 * `npm run bench`, not a provider: it skips every check a real one must make. The bench runs it as
 * the image runs ours: one file built by bench/build-floor.mjs with the daemon's bundle options
 * (dist/bench/floor-provider.bundle.js), with the ENTRYPOINT's Node flags.
 *
 *   node dist/bench/floor-provider.bundle.js -endpoint=/path/vault.sock [-vault-addr=URL] [other flags, ignored]
 */
import { readFileSync, realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import * as grpc from '@grpc/grpc-js'
import * as asn1js from 'asn1js'
import { LRUCache } from 'lru-cache'
import mustache from 'mustache'
import nodeVault from 'node-vault'
import { pino } from 'pino'
import { Registry } from 'prom-client'
import { Pool } from 'undici'
import { parse } from 'yaml'
import { loadProviderClient } from '../src/server/proto.js'

/**
 * Loaded at start because the daemon's bundle loads them at start, though the floor calls none of
 * them: its start-up and memory then hold the same libraries, and ours minus the floor is our code.
 */
export const LOADED_AS_THE_DAEMON_LOADS_THEM = [asn1js, mustache, nodeVault, pino, Registry] as const

interface FloorObject {
  objectName: string
  secretPath: string
  secretKey: string
}

interface MountRequest {
  attributes: string
}

/** As ours by default (DEFAULT_VAULT_IDLE_CONNECTION_MS, -vault-idle-connection-timeout); undici's own is 4 s. */
const IDLE_CONNECTION_MS = 30_000
/** Entries of each cache: the bench's pods and `objects` texts are far fewer. */
const CACHE_ENTRIES = 1000

const pools = new Map<string, Pool>()
/** Parsed `objects` per text: ours caches the parse too, and parsing it on every Mount was 18 % of the floor's CPU. */
const parsedObjects = new LRUCache<string, FloorObject[]>({ max: CACHE_ENTRIES })
/** Vault token per pod JWT: ours (pod) serves warm Mounts from its cached token too. */
const tokens = new LRUCache<string, Promise<string>>({ max: CACHE_ENTRIES })

/** A pool per address and CA file (`vaultCACertPath`, read once, as ours reads it once per transport). */
function pool(address: string, caPath: string | undefined): Pool {
  const key = `${address}\n${caPath ?? ''}`
  let p = pools.get(key)
  if (p === undefined) {
    p = new Pool(address, {
      connections: 64,
      keepAliveTimeout: IDLE_CONNECTION_MS,
      keepAliveMaxTimeout: IDLE_CONNECTION_MS,
      ...(caPath === undefined ? {} : { connect: { ca: readFileSync(caPath) } }),
    })
    pools.set(key, p)
  }
  return p
}

interface Target {
  address: string
  caPath: string | undefined
}

async function vault(to: Target, method: 'GET' | 'POST', path: string, token?: string, body?: unknown) {
  const res = await pool(to.address, to.caPath).request({
    method,
    path: `/v1/${path}`,
    headers: { ...(token ? { 'x-vault-token': token } : {}), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const answer = (await res.body.json()) as Record<string, unknown>
  if (res.statusCode !== 200) throw new Error(`Vault answered ${res.statusCode} to ${method} ${path}`)
  return answer
}

function login(to: Target, mount: string, role: string, jwt: string): Promise<string> {
  let t = tokens.get(jwt)
  if (t === undefined) {
    t = vault(to, 'POST', `auth/${mount}/login`, undefined, { role, jwt }).then(
      (a) => (a['auth'] as { client_token: string }).client_token,
    )
    tokens.set(jwt, t)
    // A refused login is not kept: the pod's next Mount logs in again.
    t.catch(() => tokens.delete(jwt))
  }
  return t
}

async function mount(req: MountRequest, argv: readonly string[]): Promise<object> {
  const attrs = JSON.parse(req.attributes) as Record<string, string>
  // The pod's vaultAddress, else the address the provider was started with, as ours does.
  const to: Target = { address: attrs['vaultAddress'] ?? defaultVaultAddress(argv), caPath: attrs['vaultCACertPath'] }
  const jwt = (JSON.parse(attrs['csi.storage.k8s.io/serviceAccount.tokens']!) as { vault: { token: string } }).vault
    .token
  const token = await login(to, attrs['vaultKubernetesMountPath'] ?? 'kubernetes', attrs['roleName']!, jwt)
  const text = attrs['objects']!
  let objects = parsedObjects.get(text)
  if (objects === undefined) {
    objects = parse(text) as FloorObject[]
    parsedObjects.set(text, objects)
  }
  const files = await Promise.all(
    objects.map(async (o) => {
      const answer = await vault(to, 'GET', o.secretPath, token)
      const data = (answer['data'] as { data: Record<string, unknown> }).data
      return { path: o.objectName, mode: 0o644, contents: Buffer.from(String(data[o.secretKey])) }
    }),
  )
  return { object_version: objects.map((o) => ({ id: o.objectName, version: '0' })), files }
}

function flag(argv: readonly string[], name: string): string | undefined {
  return argv.find((a) => a.startsWith(`-${name}=`))?.slice(name.length + 2)
}

function defaultVaultAddress(argv: readonly string[]): string {
  const address = flag(argv, 'vault-addr')
  if (address === undefined) throw new Error('no vaultAddress and no -vault-addr')
  return address
}

/** Serves until SIGTERM; resolves once the socket is bound. */
export async function startDaemon(argv: readonly string[]): Promise<void> {
  if (argv.includes('-version')) {
    process.stdout.write('floor-provider\n')
    return
  }
  const endpoint = flag(argv, 'endpoint')
  if (endpoint === undefined) throw new Error('usage: floor-provider.bundle.js -endpoint=<socket path>')
  const server = new grpc.Server()
  server.addService(loadProviderClient().service, {
    Version: (_call: unknown, cb: grpc.sendUnaryData<object>) =>
      cb(null, { version: 'v1alpha1', runtimeName: 'floor', runtimeVersion: '0' }),
    Mount: (call: grpc.ServerUnaryCall<MountRequest, object>, cb: grpc.sendUnaryData<object>) => {
      mount(call.request, argv).then(
        (r) => cb(null, r),
        (err: unknown) => cb({ code: grpc.status.INTERNAL, details: err instanceof Error ? err.message : String(err) }),
      )
    },
  })
  process.once('SIGTERM', () => server.tryShutdown(() => process.exit(0)))
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${endpoint}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  )
}

/** True when this file is the process's entry, not imported. */
function isEntryPoint(): boolean {
  const entry = process.argv[1]
  return entry !== undefined && realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url))
}

if (isEntryPoint()) void startDaemon(process.argv.slice(2))
