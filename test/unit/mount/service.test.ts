// The Mount log line of a request that does not parse still names who asked (from the raw
// attributes, bounded), never the rest of the request.
import { Writable } from 'node:stream'
import t from 'tap'
import { MountService } from '../../../src/mount/service.js'
import { MAX_LOGGED_STRING_CHARS, createLogger } from '../../../src/observability/logger.js'
import { Deadline } from '../../../src/util/deadline.js'
import { ANY_ADDRESS, NO_BREAKER } from '../../support/fake-vault.js'

function serviceWithLog(): { service: MountService; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l))
      cb()
    },
  })
  const service = new MountService({
    // Parsing fails before any of these is used.
    pool: undefined as never,
    kube: undefined,
    allowlist: ANY_ADDRESS,
    breakers: NO_BREAKER,
    hmacKey: undefined as never,
    logger: createLogger('info', sink),
    vaultDefaults: { authMount: 'kubernetes', tls: { skipVerify: false } },
  })
  return { service, lines }
}

const pod = {
  'csi.storage.k8s.io/pod.name': 'web-0',
  'csi.storage.k8s.io/pod.namespace': 'shop',
  secretProviderClass: 'web-secrets',
}

t.test('a refused request’s log line names the pod and the SecretProviderClass', async (t) => {
  const { service, lines } = serviceWithLog()
  const attributes = JSON.stringify({
    ...pod,
    roleName: 'web',
    vaultAddress: 'https://vault.example:8200',
    objects: '- objectName: x\n  secretPath: secret/data/x\n  secretKeyz: y\n',
    'csi.storage.k8s.io/serviceAccount.tokens': '{"vault":{"token":"eyJhbGciOi.not-logged.x"}}',
  })
  await t.rejects(service.mount({ attributes, secrets: 'null', permission: '420' }, Deadline.in(5000)), {
    code: 'BAD_OBJECT',
  })
  const line = lines.find((l) => l.msg === 'mount')
  t.match(line, { outcome: 'failure', pod: 'shop/web-0', secretProviderClass: 'web-secrets' })
  t.notMatch(JSON.stringify(lines), /eyJhbGciOi|secretKeyz: y|vault\.example/, 'nothing else of the request')
})

t.test('pod-controlled names are bounded; unparseable attributes log no names', async (t) => {
  const { service, lines } = serviceWithLog()
  const long = 'n'.repeat(5000)
  await t.rejects(
    service.mount(
      {
        attributes: JSON.stringify({ ...pod, secretProviderClass: long, 'csi.storage.k8s.io/pod.name': long }),
        secrets: 'null',
        permission: '420',
      },
      Deadline.in(5000),
    ),
  )
  await t.rejects(service.mount({ attributes: '{not json', secrets: 'null', permission: '420' }, Deadline.in(5000)))
  const [first, second] = lines.filter((l) => l.msg === 'mount')
  const cut = `${'n'.repeat(MAX_LOGGED_STRING_CHARS)}…`
  t.equal(first!.secretProviderClass, cut, `${MAX_LOGGED_STRING_CHARS} characters and an ellipsis`)
  t.equal(first!.pod, `shop/${cut}`)
  t.equal(second!.pod, undefined)
  t.equal(second!.secretProviderClass, undefined)
  t.equal(second!.outcome, 'failure')
})
