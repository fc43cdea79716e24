import t from 'tap'
import { grpcStatusOf } from '../../../src/server/grpc-status.js'
import { status as GrpcStatus } from '@grpc/grpc-js'
import { ProviderError } from '../../../src/errors.js'
import { decodeValue } from '../../../src/render/encoding.js'
import { thrown } from '../../support/thrown.js'

const WHAT = 'object "tls.key" (GET secret/data/tls), secretKey "key"'

function providerError(fn: () => unknown): ProviderError {
  return thrown(fn, ProviderError)
}

t.test('utf-8 is written as is', async (t) => {
  t.same(decodeValue('héllo\n', 'utf-8', WHAT), Buffer.from([0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f, 0x0a]))
  t.equal(decodeValue('', 'utf-8', WHAT).length, 0)
  // Not trimmed.
  t.equal(decodeValue('  x  ', 'utf-8', WHAT).toString('utf8'), '  x  ')
})

t.test('base64: standard alphabet, padded', async (t) => {
  t.equal(decodeValue('aGVsbG8=', 'base64', WHAT).toString('utf8'), 'hello')
  t.equal(decodeValue('aGVsbG8h', 'base64', WHAT).toString('utf8'), 'hello!')
  t.equal(decodeValue('aGk=', 'base64', WHAT).toString('utf8'), 'hi')
  t.equal(decodeValue('aA==', 'base64', WHAT).toString('utf8'), 'h')
  t.equal(decodeValue('', 'base64', WHAT).length, 0)
  t.same(decodeValue('+/8=', 'base64', WHAT), Buffer.from([0xfb, 0xff]))
  t.same(decodeValue('AAECAwQF/w==', 'base64', WHAT), Buffer.from([0, 1, 2, 3, 4, 5, 255]))
  // Surrounding whitespace (a trailing newline from `base64`) is tolerated.
  t.equal(decodeValue('aGVsbG8=\n', 'base64', WHAT).toString('utf8'), 'hello')
  t.equal(decodeValue('  aGVsbG8=  ', 'base64', WHAT).toString('utf8'), 'hello')

  const secretish = 'c2VjcmV0LXZhbHVl' // valid on its own; made invalid below
  for (const bad of [
    'aGVsbG8', // unpadded
    'aGk', // unpadded
    'aA=', // short padding
    'aGVsbG8==', // over-padded
    '-_8=', // base64url alphabet
    'aGVs bG8=', // inner space
    'aGVs\nbG8=', // inner newline (MIME line breaks)
    'aGVsbG8=aGk=', // padding in the middle
    '====',
    'a',
    `${secretish}!`,
    'héllo===',
  ]) {
    const err = providerError(() => decodeValue(bad, 'base64', WHAT))
    t.equal(err.code, 'DECODE_FAILED', JSON.stringify(bad))
    t.equal(grpcStatusOf(err.code), GrpcStatus.INVALID_ARGUMENT)
    t.equal(err.message, `${WHAT}: the value is not valid standard (padded) base64`, JSON.stringify(bad))
  }
  // The exact messages above quote nothing of the value; check with a long one too.
  const long = `${'U0VDUkVULVZBTFVF'.repeat(4)}*`
  t.notMatch(providerError(() => decodeValue(long, 'base64', WHAT)).message, 'U0VDUkVU')
})

t.test('hex', async (t) => {
  t.same(decodeValue('deadBEEF', 'hex', WHAT), Buffer.from([0xde, 0xad, 0xbe, 0xef]))
  t.same(decodeValue('00ff10', 'hex', WHAT), Buffer.from([0, 255, 16]))
  t.equal(decodeValue('', 'hex', WHAT).length, 0)
  t.same(decodeValue('0a0b\n', 'hex', WHAT), Buffer.from([10, 11]))
  for (const bad of ['abc', '0x12', 'zz', 'de ad', 'de:ad', '12g4', 'ｄｅ']) {
    const err = providerError(() => decodeValue(bad, 'hex', WHAT))
    t.equal(err.code, 'DECODE_FAILED', bad)
    t.equal(err.message, `${WHAT}: the value is not valid hex (an even number of 0-9a-f digits)`, bad)
  }
  const long = `${'c0ffee'.repeat(8)}Z`
  t.notMatch(providerError(() => decodeValue(long, 'hex', WHAT)).message, 'c0ffee')
})
