/**
 * The two gRPC services this provider speaks, with the JS objects
 * @grpc/proto-loader made with this project's options (field names as the
 * driver's Go code sends them, enums as names, defaults filled in). Used by the
 * server, the socket checks and the CLI's socket Mount.
 *
 * The .proto files in proto/ are the source; proto/messages.cjs is static
 * code generated from them by protobufjs-cli (scripts/proto-gen.mjs; a unit
 * test fails when it drifts and proves the objects and bytes equal
 * proto-loader's). It needs only protobufjs/minimal at run time: loading
 * proto-loader, the full protobufjs and its reflection cost about 4 MiB RSS
 * and 50 ms CPU of every start.
 */
import path from 'node:path'
import * as grpc from '@grpc/grpc-js'
// proto/messages.cjs, named through package.json's "imports" so that src/ and dist/src/ reach the same
// file, and so that esbuild takes it (and protobufjs/minimal) into dist/daemon.js (scripts/bundle.mjs).
import generatedMessages from '#proto-messages'

export const PROVIDER_PROTO = path.join('v1alpha1', 'service.proto')
export const HEALTH_PROTO = path.join('grpc', 'health', 'v1', 'health.proto')

/**
 * What proto-loader's deserializer passed to toObject with the options the
 * provider used (keepCase is the generator's --keep-case): int64 as decimal
 * strings, enums as their names, absent fields as their defaults (empty
 * lists, '' and 0, null for a message), the name of a set oneof member.
 */
export const TO_OBJECT_OPTIONS = { longs: String, enums: String, defaults: true, oneofs: true } as const

/** The part of a generated message class that serialize/deserialize call. */
interface MessageClass {
  // protobufjs's writer makes a Buffer on Node, which grpc-js wants.
  encode(message: object): { finish(): Buffer }
  decode(bytes: Uint8Array): object
  fromObject(object: object): object
  toObject(message: object, options: typeof TO_OBJECT_OPTIONS): object
}

/** proto/messages.cjs: one class per message, by package. */
interface Messages {
  v1alpha1: Record<
    'VersionRequest' | 'VersionResponse' | 'MountRequest' | 'MountResponse' | 'File' | 'ObjectVersion' | 'Error',
    MessageClass
  >
  grpc: { health: { v1: Record<'HealthCheckRequest' | 'HealthCheckResponse', MessageClass> } }
}

function messages(): Messages {
  return generatedMessages as Messages
}

// The same calls proto-loader's createSerializer/createDeserializer make.
function serializer(type: MessageClass): (value: object) => Buffer {
  return (value) => {
    if (Array.isArray(value)) throw new Error('Failed to serialize message: expected an object, got an array')
    return type.encode(type.fromObject(value)).finish()
  }
}

function deserializer(type: MessageClass): (bytes: Buffer) => object {
  return (bytes) => type.toObject(type.decode(bytes), TO_OBJECT_OPTIONS)
}

function method(
  service: string,
  name: string,
  request: MessageClass,
  response: MessageClass,
  responseStream = false,
): grpc.MethodDefinition<object, object> {
  return {
    path: `/${service}/${name}`,
    requestStream: false,
    responseStream,
    requestSerialize: serializer(request),
    requestDeserialize: deserializer(request),
    responseSerialize: serializer(response),
    responseDeserialize: deserializer(response),
    // proto-loader's camelCased name: the generic client also answers to it (client.mount).
    originalName: name.charAt(0).toLowerCase() + name.slice(1),
  }
}

/** v1alpha1.CSIDriverProvider: the service the driver calls (Version, Mount). */
export function loadProviderClient(): grpc.ServiceClientConstructor {
  const m = messages().v1alpha1
  const name = 'v1alpha1.CSIDriverProvider'
  const service: grpc.ServiceDefinition = {
    Version: method(name, 'Version', m.VersionRequest, m.VersionResponse),
    Mount: method(name, 'Mount', m.MountRequest, m.MountResponse),
  }
  return grpc.makeGenericClientConstructor(service, name)
}

/** grpc.health.v1.Health (Watch streams the status as it changes). */
export function loadHealthClient(): grpc.ServiceClientConstructor {
  const m = messages().grpc.health.v1
  const name = 'grpc.health.v1.Health'
  const service: grpc.ServiceDefinition = {
    Check: method(name, 'Check', m.HealthCheckRequest, m.HealthCheckResponse),
    Watch: method(name, 'Watch', m.HealthCheckRequest, m.HealthCheckResponse, true),
  }
  return grpc.makeGenericClientConstructor(service, name)
}

/**
 * Both services, made once by whoever holds this (the HTTP server keeps one
 * for its readiness probes, which call every few seconds; a one-off check
 * makes its own).
 */
export interface ProviderProtos {
  provider: grpc.ServiceClientConstructor
  health: grpc.ServiceClientConstructor
}

export function loadProtos(): ProviderProtos {
  return { provider: loadProviderClient(), health: loadHealthClient() }
}
