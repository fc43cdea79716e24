/**
 * node-vault, the Vault API client, with the Vault transport as its request function.
 *
 * node-vault builds every call — the path of each API method, the JSON body, the X-Vault-Token
 * header from the token its client holds (set by its own login and renew-self methods) — and hands
 * it to the function given in its `request-promise` option. That function is `transportHook`
 * below: it sends the call through the transport (transport/transport.ts), the one place that
 * knows HTTP, TLS and the address allow-list.
 *
 * Each call states its options in the per-call `requestOptions` node-vault documents (its README:
 * axios request options, `timeout` and `headers` among them): see CallOptions. What node-vault has
 * no slot for is bound per client: the tenant, and whether any status is an answer (a health probe's);
 * but for the Mount's deadline (`dueAt`), which is per call and rides along with the others.
 *
 * A client is one identity (sessions/identity-client.ts makes one per session, the health probe one per
 * probe, without a token). node-vault falls back to the provider's own environment (VAULT_TOKEN,
 * VAULT_NAMESPACE) when its settings are empty; a pod must never borrow those, so the client
 * starts with neither.
 */
import nodeVault from 'node-vault'
import type { CallConsistency } from './transport/consistency.js'
import type { VaultCaller } from './transport/transport.js'

export type VaultClient = nodeVault.client

/** One call's options, in node-vault's documented per-call `requestOptions`. */
export interface CallOptions {
  /** The whole call, in ms. */
  timeout: number
  /** X-Vault-Namespace, unless the call goes to the root namespace. */
  headers: Record<string, string>
  /** Aborted when the caller gave up (axios's `signal`, which node-vault passes on to the request function). */
  signal?: AbortSignal
  /** axios's `maxContentLength`: a tighter cap than -max-vault-response-size (token answers, health). */
  maxContentLength?: number
  /**
   * Not axios's: which node of a cluster may answer, and who is told the answer's X-Vault-Index
   * (transport/consistency.ts). node-vault passes every option on to our hook; the transport makes
   * the headers, from what its address answered before.
   */
  consistency?: CallConsistency
  /** Not axios's: a connection of the call's own (transport/fresh-connection.ts), after one node's answer. */
  freshConnection?: boolean
  /** Not axios's: the Mount's deadline (ms since the epoch), which orders its namespace's waiting calls. */
  dueAt?: number
}

/** What a call states besides its time, namespace and size cap. */
export interface MoreCallOptions {
  consistency?: CallConsistency
  freshConnection?: boolean
  /**
   * The Mount's deadline (ms since the epoch), which orders its namespace's waiting calls
   * (transport/tenant-slots.ts). Not an axios option: node-vault hands it to the hook with the rest.
   */
  dueAt?: number
}

/**
 * The options of one call to `namespace` ('' the root namespace), its answer held to `maxBytes` if
 * given; `dueAt`: the deadline of the Mount it serves, if any.
 */
export function callOptions(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  namespace: string,
  maxBytes?: number,
  more: MoreCallOptions = {},
): CallOptions {
  const headers: Record<string, string> = namespace === '' ? {} : { 'X-Vault-Namespace': namespace }
  return { timeout: timeoutMs, headers, signal, maxContentLength: maxBytes, ...more }
}

/** A call that states no timeout (none of ours) is held to this. */
const DEFAULT_TIMEOUT_MS = 30_000

/** What node-vault hands the request function: what it built, and the call's own options. */
interface NodeVaultRequest extends Partial<CallOptions> {
  method: string
  /** After /v1, with a leading slash and the query. */
  path: string
  json?: unknown
  headers?: Record<string, string>
}

/** The answer shape node-vault's response handling reads. */
interface NodeVaultResponse {
  statusCode: number
  body: unknown
  request: { path: string }
}

function transportHook(
  transport: VaultCaller,
  tenant: string,
  anyStatus: boolean,
): (options: NodeVaultRequest) => Promise<NodeVaultResponse> {
  return async (options) => {
    const answer = await transport.call({
      method: options.method,
      path: options.path.replace(/^\/+/, ''),
      token: options.headers?.['X-Vault-Token'],
      namespace: options.headers?.['X-Vault-Namespace'],
      body: options.json,
      timeoutMs: options.timeout ?? DEFAULT_TIMEOUT_MS,
      signal: options.signal,
      maxResponseBytes: options.maxContentLength,
      dueAt: options.dueAt,
      tenant,
      anyStatus,
      consistency: options.consistency,
      freshConnection: options.freshConnection,
    })
    // The transport throws for every status but 200 and 204 unless the call allows any (sys/health).
    return { statusCode: answer.status, body: answer.body, request: { path: options.path } }
  }
}

/**
 * A node-vault client whose calls go through `transport`, held by `tenant` (the namespace whose
 * Mounts make them, or PROVIDER_TENANT). `anyStatus`: every status is an answer, for the health
 * probe's own client only (sys/health speaks in statuses; a Mount naming that path must not get a
 * 503 as its secret). Both bound per client: node-vault has no option for either.
 */
export function createVaultClient(transport: VaultCaller, tenant: string, anyStatus = false): VaultClient {
  const client = nodeVault({
    apiVersion: 'v1',
    // Never used for sending: the hook sends to the transport's own address.
    endpoint: transport.address,
    // node-vault's debug output includes request bodies (the login JWT).
    debug: () => undefined,
    'request-promise': { defaults: () => transportHook(transport, tenant, anyStatus) },
  })
  // Not the provider's own VAULT_TOKEN, which node-vault takes when it is given no token.
  client.token = ''
  // Nor VAULT_NAMESPACE, which would also replace the namespace each call names in its headers.
  ;(client as VaultClient & { namespace: string }).namespace = ''
  return client
}

/** A call node-vault has no method for (PUT to a secret path): its generic `request`. */
export function sendRequest(
  client: VaultClient,
  method: string,
  path: string,
  body: unknown,
  options: CallOptions,
): Promise<unknown> {
  return client.request({ method, path: `/${path}`, json: body, ...options })
}

/**
 * revoke-self with the token the client holds. node-vault's tokenRevokeSelf() sends its arguments
 * as the body (it has no schema), so its options cannot be given there: the same POST, through
 * its documented write().
 */
export function revokeSelf(client: VaultClient, options: CallOptions): Promise<unknown> {
  return client.write('auth/token/revoke-self', {}, options)
}
