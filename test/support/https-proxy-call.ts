// One GET through the Vault transport with the proxy of this process's environment, printed as
// JSON: for the https:// proxy case of test/unit/vault/transport/proxy-connection.test.ts, which
// needs a process started with NODE_EXTRA_CA_CERTS (Node reads it at start only).
// Usage: node <loaders> https-proxy-call.ts <vault address> <vault CA file>
import { readProxySettings } from '../../src/vault/transport/proxy.js'
import { testTransport, testTransportOptions } from './transport-options.js'

const [address, caCertPath] = process.argv.slice(2)
const transport = await testTransport(
  { address: address!, tls: { skipVerify: false, caCertPath } },
  { ...testTransportOptions(64 * 1024), proxy: readProxySettings(process.env) },
)
try {
  const answer = await transport.call({ tenant: 'test', method: 'GET', path: 'secret/x', timeoutMs: 10_000 })
  process.stdout.write(JSON.stringify(answer.body) + '\n')
} finally {
  await transport.close()
}
