/**
 * node-vault, the Vault API client, with the Vault transport as its request hook.
 *
 * node-vault builds every call — the path of each API method, the JSON body,
 * the X-Vault-Token header from the token its client holds (set by its own
 * login and renew-self methods) — and hands it to the function given in its
 * documented `request-promise` option. That function is `transportHook` below:
 * it sends the call through the transport (transport/transport.ts), the one
 * place that knows HTTP, TLS and the address allow-list.
 *
 * A client is one identity (sessions/session.ts makes one per session, the
 * health probe one per transport without a token). node-vault falls back to
 * the provider's own environment (VAULT_TOKEN, VAULT_NAMESPACE, VAULT_PREFIX)
 * when its settings are empty; a pod must never borrow those, so the client
 * starts with an empty token and the hook takes the namespace and address
 * from the session, never from node-vault's settings.
 *
 * Calls that node-vault has no method for (a PUT to a secret path) go through
 * `client.request()`, node-vault's documented generic call: see `sendRequest`.
 */
import nodeVault from 'node-vault'
import type { VaultCall, VaultCaller } from './transport/transport.js'

export type VaultClient = nodeVault.client

/** What a call states besides what node-vault builds; passed as `requestOptions.vault` (or `{ vault }` to read and write). */
export type CallOptions = Pick<
  VaultCall,
  'timeoutMs' | 'cancel' | 'maxResponseBytes' | 'anyStatus' | 'operation' | 'namespace'
>

/** What node-vault hands the request hook: its own fields, and ours under `vault`. */
interface NodeVaultRequest {
  method: string
  /** After /v1, with a leading slash and the query. */
  path: string
  json?: unknown
  headers?: Record<string, string>
  vault?: CallOptions
}

/** The answer shape node-vault's response handling reads. */
interface NodeVaultResponse {
  statusCode: number
  body: unknown
  request: { path: string }
}

function transportHook(
  transport: VaultCaller,
  namespace: string | undefined,
  defaults: CallOptions,
): (options: NodeVaultRequest) => Promise<NodeVaultResponse> {
  return async (options) => {
    const call = options.vault ?? defaults
    // A call may name its own namespace (a read in another one than the login's); '' is the root.
    const ns = call.namespace === undefined ? namespace : call.namespace === '' ? undefined : call.namespace
    const answer = await transport.call({
      method: options.method,
      path: options.path.replace(/^\/+/, ''),
      token: options.headers?.['X-Vault-Token'],
      namespace: ns,
      body: options.json,
      timeoutMs: call.timeoutMs,
      cancel: call.cancel,
      maxResponseBytes: call.maxResponseBytes,
      anyStatus: call.anyStatus,
      operation: call.operation,
    })
    // The transport throws for every status but 200 and 204 unless the call allows any (sys/health).
    return { statusCode: answer.status, body: answer.body, request: { path: options.path } }
  }
}

/**
 * A node-vault client whose calls go through `transport` with `namespace` (none: the root
 * namespace) unless a call names its own (CallOptions.namespace). `defaults` bound the calls that state no options of their own: node-vault sends
 * revoke-self without a schema, so its arguments would become the request body.
 */
export function createVaultClient(
  transport: VaultCaller,
  namespace: string | undefined,
  defaults: CallOptions,
): VaultClient {
  const client = nodeVault({
    apiVersion: 'v1',
    // Never used for sending: the hook sends to the transport's own address.
    endpoint: transport.address,
    // node-vault's debug output includes request bodies (the login JWT).
    debug: () => undefined,
    'request-promise': { defaults: () => transportHook(transport, namespace, defaults) },
  })
  // Not the provider's own VAULT_TOKEN, which node-vault takes when it is given no token.
  client.token = ''
  return client
}

/** A call node-vault has no method for (PUT to a secret path): its generic `request`, with the same hook. */
export function sendRequest(
  client: VaultClient,
  method: string,
  path: string,
  body: unknown,
  vault: CallOptions,
): Promise<unknown> {
  return client.request({ method, path: `/${path}`, json: body, vault })
}
