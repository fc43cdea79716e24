import { readFileSync } from 'node:fs'
import t from 'tap'
import { descriptorJson, PROTO_FILES } from '../../../scripts/proto-json.mjs'
import { descriptorPath, loadProtos } from '../../../src/server/proto.js'

t.test('every .json descriptor is its .proto parsed (rerun scripts/proto-json.mjs when one changes)', async (t) => {
  t.equal(PROTO_FILES.length, 2)
  for (const file of PROTO_FILES) {
    t.equal(readFileSync(descriptorPath(file), 'utf8'), descriptorJson(file), file)
  }
})

t.test('the services load from the descriptors with their methods', async (t) => {
  const protos = loadProtos()
  t.same(Object.keys(protos.provider.service).sort(), ['Mount', 'Version'])
  t.same(Object.keys(protos.health.service).sort(), ['Check', 'Watch'])
  // Field names as the driver's Go code sends them (keepCase), not camelCased.
  const mount = protos.provider.service.Mount!
  const bytes = mount.requestSerialize({ attributes: '{}', secrets: '{}', target_path: '/t', permission: '420' })
  t.same(mount.requestDeserialize(bytes), {
    attributes: '{}',
    secrets: '{}',
    target_path: '/t',
    permission: '420',
    // defaults: true, as with the .proto
    current_object_version: [],
  })
})
