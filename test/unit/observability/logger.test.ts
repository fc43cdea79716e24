import t from 'tap'
import { Writable } from 'node:stream'
import {
  MAX_LOGGED_STRING_CHARS,
  REDACTED,
  REDACTED_KEYS,
  REDACT_DEPTH,
  createLogger,
  logString,
  redactKeys,
} from '../../../src/observability/logger.js'

t.test('logString bounds and scrubs a pod-supplied string', async (t) => {
  t.equal(logString('web'), 'web')
  const role = 'r'.repeat(200_000)
  t.ok(logString(role).length <= MAX_LOGGED_STRING_CHARS + 1, 'a 200 KB roleName is not logged whole')
  const token = 'hvs.CAESIFakeTokenForUnitTestsOnly0123456789abcdef'
  t.equal(logString(`role-${token}`), 'role-[redacted-token]')
  t.notMatch(logString(`${'x '.repeat(126)}${token}`), /hvs\./, 'cut after scrubbing')
  const lines: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString())
      cb()
    },
  })
  createLogger('info', sink as never).info({ role: logString(role) }, 'mount')
  t.ok(lines[0]!.length < 600, `${lines[0]!.length} bytes in the log line`)
})

function capture(): { lines: Record<string, unknown>[]; sink: Writable } {
  const lines: Record<string, unknown>[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>)
      cb()
    },
  })
  return { lines, sink }
}

t.test('every redacted key is censored at the top and one and two levels down', async (t) => {
  const { lines, sink } = capture()
  const log = createLogger('info', sink as never)
  for (const key of REDACTED_KEYS) {
    log.info({ [key]: 'S1', a: { [key]: 'S2', keep: 1 }, b: { c: { [key]: 'S3' } }, list: [{ [key]: 'S4' }] }, 'x')
  }
  t.equal(lines.length, REDACTED_KEYS.length)
  lines.forEach((line, i) => {
    const key = REDACTED_KEYS[i]!
    t.equal(line[key], REDACTED, `${key} at the top`)
    t.same(line.a, { [key]: REDACTED, keep: 1 }, `${key} one level down`)
    t.same(line.b, { c: { [key]: REDACTED } }, `${key} two levels down`)
    t.same(line.list, [{ [key]: REDACTED }], `${key} inside an array`)
    t.notMatch(JSON.stringify(line), /S[1-4]/, `no value of ${key} in the line`)
  })
})

t.test('redaction copies, never edits what the caller logged, and keeps what it does not censor', async (t) => {
  const logged = { pod: 'ns/p', nested: { token: 'T', n: 2 }, deep: { a: { b: { token: 'beyond the depth' } } } }
  const { lines, sink } = capture()
  createLogger('info', sink as never).info(logged, 'x')
  t.same(logged.nested, { token: 'T', n: 2 }, 'the caller’s object is unchanged')
  t.equal(lines[0]!.pod, 'ns/p')
  t.same(lines[0]!.nested, { token: REDACTED, n: 2 })
  // Depth is REDACT_DEPTH (k, *.k, *.*.k), as the pino paths were; the first line of defence is not logging secrets.
  t.equal(REDACT_DEPTH, 3)
  const unchanged = { a: 1, b: { c: [1, 2] } }
  t.equal(redactKeys(unchanged), unchanged, 'nothing to censor: the same object, no copy')
})

t.test('errors keep their safe serializer; a Buffer is not walked key by key', async (t) => {
  const { lines, sink } = capture()
  const err = Object.assign(new Error('boom hvs.CAESIFakeTokenForUnitTestsOnly0123456789abcdef'), {
    config: { headers: { 'X-Vault-Token': 'secret' } },
  })
  createLogger('info', sink as never).error({ err, wrapped: { cause: err }, blob: Buffer.from('abc') }, 'x')
  const line = lines[0]!
  t.match(line.err, { type: 'Error', message: 'boom [redacted-token]' })
  t.notMatch(JSON.stringify(line), /secret|hvs\.CAES/, 'no header, no token')
  t.same((line.wrapped as { cause: unknown }).cause, { config: REDACTED })
  // As pino's redact paths left it: a Buffer has no `data` key of its own, only its toJSON() shows one.
  t.same(line.blob, { type: 'Buffer', data: [97, 98, 99] }, 'a Buffer is logged as JSON shows it, not walked')
})
