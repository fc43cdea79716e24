import t from 'tap'
import { Writable } from 'node:stream'
import { MAX_LOGGED_STRING_CHARS, createLogger, logString } from '../../../src/observability/logger.js'

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
