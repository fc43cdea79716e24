/**
 * The two gRPC services this provider speaks, loaded from the .proto files in
 * proto/ by @grpc/proto-loader with this project's options: field names as the
 * driver's Go code sends them, 64-bit integers as decimal strings, enums as
 * names, absent fields as their defaults. Used by the server, the socket
 * checks and the CLI's socket Mount.
 */
import path from 'node:path'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { PROTO_DIR } from '../package-info.js'

export const PROVIDER_PROTO = path.join('v1alpha1', 'service.proto')
export const HEALTH_PROTO = path.join('grpc', 'health', 'v1', 'health.proto')

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
}

function loadService(file: string, name: string): grpc.ServiceClientConstructor {
  const definition = protoLoader.loadSync(file, LOADER_OPTIONS)
  const service = grpc.loadPackageDefinition(definition)
  let found: unknown = service
  for (const part of name.split('.')) found = (found as Record<string, unknown> | undefined)?.[part]
  if (typeof found !== 'function') throw new Error(`${name} is not a service of ${file}`)
  return found as grpc.ServiceClientConstructor
}

/** v1alpha1.CSIDriverProvider: the service the driver calls (Version, Mount). */
export function loadProviderClient(): grpc.ServiceClientConstructor {
  return loadService(PROVIDER_PROTO, 'v1alpha1.CSIDriverProvider')
}

/** grpc.health.v1.Health (Watch streams the status as it changes). */
export function loadHealthClient(): grpc.ServiceClientConstructor {
  return loadService(HEALTH_PROTO, 'grpc.health.v1.Health')
}

/**
 * Both services, loaded once by whoever holds this (the HTTP server keeps one
 * for its readiness probes, which call every few seconds; a one-off check
 * loads its own).
 */
export interface ProviderProtos {
  provider: grpc.ServiceClientConstructor
  health: grpc.ServiceClientConstructor
}

export function loadProtos(): ProviderProtos {
  return { provider: loadProviderClient(), health: loadHealthClient() }
}
