/**
 * node-vault's request layer: node-vault stays the Vault API layer (it
 * validates each request and reads Vault's answers), and hands every HTTP
 * call to the function given in its documented `request-promise` option.
 * This is that function, and it sends everything through the Vault transport
 * (transport.ts), the one place that knows HTTP.
 *
 * node-vault fills the URL and the token and namespace headers from the
 * provider's own environment (VAULT_ADDR, VAULT_PREFIX, VAULT_TOKEN,
 * VAULT_NAMESPACE) whenever its own settings are empty. A pod must never
 * borrow the provider's identity, so this layer builds each call only from
 * what the session states explicitly (`call`: token, namespace, time limit,
 * signal) and the transport's own address: node-vault's `uri` and
 * `headers` are never read.
 */
import type NodeVault from 'node-vault'
import type { SchemaValidator } from './request-validator.js'
import type { VaultAnswer, VaultCall, VaultCaller } from './transport/transport.js'

export type NodeVaultFactory = typeof NodeVault
export type NodeVaultClient = ReturnType<NodeVaultFactory>
type NodeVaultOptions = NonNullable<Parameters<NodeVaultFactory>[0]>

/** The answer shape node-vault's response handling expects. */
export interface RawVaultResponse {
  statusCode: number
  body: unknown
  request: { path: string }
}

/** What the session passes to node-vault's client.request(); node-vault hands the same object down. */
export interface NodeVaultRequest {
  /** API path after /v1, with a leading slash and its query (node-vault's convention). */
  path: string
  method: string
  json?: unknown
  /** Everything about the call that is not node-vault's business. */
  call: Omit<VaultCall, 'method' | 'path' | 'body'>
}

export type VaultRequester = (options: NodeVaultRequest) => Promise<RawVaultResponse>

function toRaw(answer: VaultAnswer, path: string): RawVaultResponse {
  // The transport throws for anything but 200 and 204, which node-vault knows as success.
  return { statusCode: answer.status, body: answer.body, request: { path: `/v1${path}` } }
}

/**
 * The transport's call, field by field. Not `{ ...options.call, method, path, body }`: on Node 20's
 * V8 an object made by a spread and then given more properties gets a hidden class of its own
 * (~4 µs to build, and every later read of it misses V8's inline caches); this is on every Vault
 * request (npm run bench: CPU per Mount). A field added to VaultCall is added here, or TypeScript
 * says so (`Required` below lists every field).
 */
function vaultCall(options: NodeVaultRequest, c: NodeVaultRequest['call']): VaultCall {
  const call: { [K in keyof Required<VaultCall>]: VaultCall[K] } = {
    method: options.method,
    path: options.path.replace(/^\/+/, ''),
    token: c.token,
    namespace: c.namespace,
    body: options.json,
    timeoutMs: c.timeoutMs,
    cancel: c.cancel,
    maxResponseBytes: c.maxResponseBytes,
    anyStatus: c.anyStatus,
    operation: c.operation,
  }
  return call
}

export function createVaultRequester(transport: VaultCaller): VaultRequester {
  return async (options) => {
    if (options.call === undefined) {
      throw new Error('a Vault call through node-vault must state its token and time limit (NodeVaultRequest.call)')
    }
    const answer = await transport.call(vaultCall(options, options.call))
    return toRaw(answer, options.path)
  }
}

/** node-vault's `request-promise` option: it calls defaults() once and uses the result for every call. */
export function nodeVaultRequestLayer(requester: VaultRequester): { defaults: () => VaultRequester } {
  return { defaults: () => requester }
}

/**
 * The node-vault client of a transport, shared by every session on it. Sharing
 * is safe because a client here holds no identity: sessions call only
 * client.request() and state each call's token and namespace (`call`), never
 * node-vault's login helpers (which would set client.token), and this layer
 * never reads the headers node-vault fills from its own settings.
 */
export function createNodeVaultClient(nodeVault: NodeVaultFactory, transport: VaultCaller): NodeVaultClient {
  return nodeVault({
    apiVersion: 'v1',
    // Not used for sending: the request layer sends to the transport's address only.
    endpoint: transport.address,
    // node-vault's debug output includes request bodies (the login JWT).
    debug: () => undefined,
    'request-promise': nodeVaultRequestLayer(createVaultRequester(transport)),
  })
}

/** node-vault whose clients validate each request with `validator` (node-vault's `tv4` option). */
export function withRequestValidator(nodeVault: NodeVaultFactory, validator: SchemaValidator): NodeVaultFactory {
  // node-vault's declarations type the option as a function; it is used as tv4's object (validate, error).
  const tv4 = validator as unknown as NonNullable<NodeVaultOptions['tv4']>
  return (options?: NodeVaultOptions) => nodeVault({ ...options, tv4 })
}
