// The provider's gRPC services as proto-loader loads them from proto/: the methods the driver
// calls, and the messages as the driver's Go code sends and reads them (field names kept,
// defaults filled in, file contents as bytes, enums by name).
import t from 'tap'
import { loadProtos } from '../../../src/server/proto.js'

const protos = loadProtos()

t.test('the services and their methods', async (t) => {
  const { Mount, Version } = protos.provider.service
  t.strictSame(
    [Mount!.path, Mount!.requestStream, Mount!.responseStream],
    ['/v1alpha1.CSIDriverProvider/Mount', false, false],
  )
  t.equal(Version!.path, '/v1alpha1.CSIDriverProvider/Version')
  t.same(Object.keys(protos.health.service).sort(), ['Check', 'Watch'])
  t.equal(protos.health.service.Watch!.responseStream, true, 'Watch streams the status')
})

t.test('MountRequest: field names as the driver sends them, absent fields as their defaults', async (t) => {
  const mount = protos.provider.service.Mount!
  const request = {
    attributes: '{"roleName":"app"}',
    secrets: '{}',
    target_path: '/var/lib/kubelet/pods/uid/volumes/kubernetes.io~csi/v/mount',
    permission: '420',
    current_object_version: [{ id: 'a', version: '1' }],
  }
  t.strictSame(mount.requestDeserialize(mount.requestSerialize(request)), request)
  t.strictSame(mount.requestDeserialize(mount.requestSerialize({ target_path: '/t' })), {
    attributes: '',
    secrets: '',
    target_path: '/t',
    permission: '',
    current_object_version: [],
  })
})

t.test('MountResponse: contents come back as the same bytes, whatever they are', async (t) => {
  const mount = protos.provider.service.Mount!
  const nonUtf8 = Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x80])
  const decoded = mount.responseDeserialize(
    mount.responseSerialize({
      object_version: [{ id: 'a', version: '3' }],
      files: [
        { path: 'a', mode: 0o644, contents: nonUtf8 },
        { path: 'empty', mode: 0o600, contents: Buffer.alloc(0) },
      ],
    }),
  )
  t.strictSame(decoded, {
    object_version: [{ id: 'a', version: '3' }],
    error: null,
    files: [
      { path: 'a', mode: 0o644, contents: nonUtf8 },
      { path: 'empty', mode: 0o600, contents: Buffer.alloc(0) },
    ],
  })
  t.strictSame(mount.responseDeserialize(mount.responseSerialize({ error: { code: 'X' } })), {
    object_version: [],
    error: { code: 'X' },
    files: [],
  })
})

t.test('health statuses by name, whether sent as a name or a number', async (t) => {
  const check = protos.health.service.Check!
  t.strictSame(check.responseDeserialize(check.responseSerialize({ status: 2 })), { status: 'NOT_SERVING' })
  t.strictSame(check.responseDeserialize(check.responseSerialize({ status: 'SERVING' })), { status: 'SERVING' })
  t.strictSame(check.responseDeserialize(check.responseSerialize({})), { status: 'UNKNOWN' })
})
