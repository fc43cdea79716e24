/** The .proto files the provider serves, relative to proto/. */
export declare const PROTO_FILES: readonly string[]
/** Where the generated module is committed, relative to the package root. */
export declare const GENERATED_FILE: string
/** The generated module's text, as scripts/proto-gen.mjs writes it. */
export declare function generate(): Promise<string>
