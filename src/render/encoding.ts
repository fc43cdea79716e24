/** Decoding of an extracted value according to the object's `encoding`. */
import { ProviderError, textOf, type LazyText } from '../errors.js'
import type { Encoding } from '../request/types.js'

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const HEX = /^(?:[0-9a-fA-F]{2})*$/

/**
 * `what` names the object and key for the error message (a function: made only for the error); the
 * value itself is never quoted.
 */
export function decodeValue(value: string, encoding: Encoding, what: LazyText): Buffer {
  switch (encoding) {
    case 'utf-8':
      return Buffer.from(value, 'utf8')
    case 'base64': {
      const compact = value.trim()
      if (!BASE64.test(compact)) {
        throw new ProviderError('DECODE_FAILED', `${textOf(what)}: the value is not valid standard (padded) base64`)
      }
      return Buffer.from(compact, 'base64')
    }
    case 'hex': {
      const compact = value.trim()
      if (!HEX.test(compact)) {
        throw new ProviderError(
          'DECODE_FAILED',
          `${textOf(what)}: the value is not valid hex (an even number of 0-9a-f digits)`,
        )
      }
      return Buffer.from(compact, 'hex')
    }
  }
}
