/** The .proto files the provider serves, relative to proto/. */
export declare const PROTO_FILES: readonly string[]
/** The descriptor JSON of one .proto, as scripts/proto-json.mjs writes it. */
export declare function descriptorJson(file: string): string
