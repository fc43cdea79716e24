// Writes proto/<file>.json next to each .proto the provider serves: the same descriptors, already
// parsed. The daemon loads these at start-up (src/server/proto.ts) instead of running protobufjs's
// .proto parser, which was the largest single cost of spawn → serving after module loading.
// test/unit/server/proto.test.ts fails when a .json no longer matches its .proto: rerun this then.
//
//   node scripts/proto-json.mjs
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'
import protobuf from 'protobufjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const PROTO_FILES = [path.join('v1alpha1', 'service.proto'), path.join('grpc', 'health', 'v1', 'health.proto')]

/** The descriptor JSON of one .proto, as proto-loader's fromJSON takes it (field names as written). */
export function descriptorJson(file) {
  const r = new protobuf.Root()
  r.loadSync(path.join(root, 'proto', file), { keepCase: true })
  return `${JSON.stringify(r.toJSON(), null, 2)}\n`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const file of PROTO_FILES) {
    writeFileSync(path.join(root, 'proto', file.replace(/\.proto$/, '.json')), descriptorJson(file))
  }
}
