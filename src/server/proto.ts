/**
 * The two gRPC services this provider speaks, loaded from the descriptors
 * shipped in proto/ with one set of proto-loader options (field names as the
 * driver's Go code sends them, enums as names). Used by the server, the
 * socket checks and the CLI's socket Mount.
 *
 * The .proto files are the source; each has a .json twin with the same
 * descriptors already parsed (scripts/proto-json.mjs writes them, a unit test
 * fails when they drift). Loading the JSON skips protobufjs's .proto parser,
 * the largest single cost of start-up after module loading.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { PROTO_DIR } from '../package-info.js'

export const PROTO_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
}

export const PROVIDER_PROTO = path.join('v1alpha1', 'service.proto')
export const HEALTH_PROTO = path.join('grpc', 'health', 'v1', 'health.proto')

/** `file`'s parsed twin (x.proto → x.json). */
export function descriptorPath(file: string): string {
  return path.join(PROTO_DIR, file.replace(/\.proto$/, '.json'))
}

function load(file: string): grpc.GrpcObject {
  const json = JSON.parse(readFileSync(descriptorPath(file), 'utf8')) as Parameters<typeof protoLoader.fromJSON>[0]
  return grpc.loadPackageDefinition(protoLoader.fromJSON(json, PROTO_LOADER_OPTIONS))
}

/** v1alpha1.CSIDriverProvider: the service the driver calls (Version, Mount). */
export function loadProviderClient(): grpc.ServiceClientConstructor {
  const pkg = load(PROVIDER_PROTO) as unknown as { v1alpha1: { CSIDriverProvider: grpc.ServiceClientConstructor } }
  return pkg.v1alpha1.CSIDriverProvider
}

/** grpc.health.v1.Health. */
export function loadHealthClient(): grpc.ServiceClientConstructor {
  const pkg = load(HEALTH_PROTO) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } }
  }
  return pkg.grpc.health.v1.Health
}

/**
 * Both services, parsed once by whoever holds this (the HTTP server keeps one
 * for its readiness probes, which call every few seconds; a one-off check
 * parses its own).
 */
export interface ProviderProtos {
  provider: grpc.ServiceClientConstructor
  health: grpc.ServiceClientConstructor
}

export function loadProtos(): ProviderProtos {
  return { provider: loadProviderClient(), health: loadHealthClient() }
}
