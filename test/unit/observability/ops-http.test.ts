import t from 'tap'
import { parseListenAddress } from '../../../src/config/config.js'

t.test('Go-style listen addresses', async (t) => {
  t.same(parseListenAddress(':8080'), { host: undefined, port: 8080 })
  t.same(parseListenAddress('0.0.0.0:9090'), { host: '0.0.0.0', port: 9090 })
  t.same(parseListenAddress('127.0.0.1:0'), { host: '127.0.0.1', port: 0 })
  t.same(parseListenAddress('[::1]:8080'), { host: '::1', port: 8080 })
  t.same(parseListenAddress('localhost:80'), { host: 'localhost', port: 80 })
  for (const bad of ['8080', 'host', ':99999', ':', 'a:b', '::1:80']) {
    t.throws(() => parseListenAddress(bad), /-health-addr must be host:port/, bad)
  }
})
