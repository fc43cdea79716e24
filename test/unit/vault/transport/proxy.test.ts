// Which egress proxy a Vault address goes through: the rules of Go's net/http.ProxyFromEnvironment
// (golang.org/x/net/http/httpproxy as vendored in Go's standard library) and of the Vault API
// modules' own variables (openbao/api, hashicorp/vault/api: Config.ReadEnvironment), as
// docs/configuration.md states them, case by case.
import { inspect } from 'node:util'
import t from 'tap'
import {
  ProxyConfigError,
  describeDecision,
  describeProxySettings,
  ipBytes,
  proxyFor,
  readProxySettings,
} from '../../../../src/vault/transport/proxy.js'

type Env = Record<string, string>

/** Where `address` goes with `env`: 'direct', 'refused', or the proxy as scheme://host:port (variable). */
function route(env: Env, address: string): string {
  const d = proxyFor(address, readProxySettings(env))
  return d.kind === 'proxy' ? `${d.endpoint.shown} (${d.variable})` : d.kind
}

const HTTPS = { HTTPS_PROXY: 'http://proxy.corp:3128' }

const CASES: Array<[string, Env, string, string]> = [
  // [what, environment, Vault address, where it goes]
  ['no variable: direct', {}, 'https://vault.example:8200', 'direct'],
  ['HTTPS_PROXY for https://', HTTPS, 'https://vault.example:8200', 'http://proxy.corp:3128 (HTTPS_PROXY)'],
  ['HTTPS_PROXY is not for http://', HTTPS, 'http://vault.example:8200', 'direct'],
  [
    'HTTP_PROXY for http://',
    { HTTP_PROXY: 'http://p:8080' },
    'http://vault.example:8200',
    'http://p:8080 (HTTP_PROXY)',
  ],
  ['HTTP_PROXY is not for https://', { HTTP_PROXY: 'http://p:8080' }, 'https://vault.example:8200', 'direct'],
  [
    'a value without a scheme is http://',
    { HTTPS_PROXY: 'proxy.corp:3128' },
    'https://vault.example',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  [
    'default proxy ports: 80 for http://',
    { HTTPS_PROXY: 'http://proxy.corp' },
    'https://v.example',
    'http://proxy.corp:80 (HTTPS_PROXY)',
  ],
  [
    'default proxy ports: 443 for https://',
    { HTTPS_PROXY: 'https://proxy.corp' },
    'https://v.example',
    'https://proxy.corp:443 (HTTPS_PROXY)',
  ],
  [
    'an IPv6 proxy',
    { HTTPS_PROXY: 'http://[fd00::1]:3128' },
    'https://v.example',
    'http://[fd00::1]:3128 (HTTPS_PROXY)',
  ],
  // Upper case first; the lower-case name when the upper-case one is unset or empty.
  [
    'HTTPS_PROXY before https_proxy',
    { HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:2' },
    'https://v.example',
    'http://upper:1 (HTTPS_PROXY)',
  ],
  [
    'https_proxy when HTTPS_PROXY is empty',
    { HTTPS_PROXY: '', https_proxy: 'http://lower:2' },
    'https://v.example',
    'http://lower:2 (https_proxy)',
  ],
  ['https_proxy alone', { https_proxy: 'http://lower:2' }, 'https://v.example', 'http://lower:2 (https_proxy)'],
  ['http_proxy alone', { http_proxy: 'http://lower:2' }, 'http://v.example', 'http://lower:2 (http_proxy)'],
  [
    'NO_PROXY before no_proxy',
    { ...HTTPS, NO_PROXY: 'other.example', no_proxy: 'v.example' },
    'https://v.example',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  ['no_proxy when NO_PROXY is empty', { ...HTTPS, NO_PROXY: '', no_proxy: 'v.example' }, 'https://v.example', 'direct'],
  // Never proxied: localhost and loopback addresses.
  ['localhost', HTTPS, 'https://localhost:8200', 'direct'],
  ['127.0.0.1', HTTPS, 'https://127.0.0.1:8200', 'direct'],
  ['all of 127.0.0.0/8', HTTPS, 'https://127.9.8.7:8200', 'direct'],
  ['[::1]', HTTPS, 'https://[::1]:8200', 'direct'],
  ['IPv4-mapped loopback', HTTPS, 'https://[::ffff:127.0.0.1]:8200', 'direct'],
  [
    'a name under localhost is not localhost',
    HTTPS,
    'https://vault.localhost:8200',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  // NO_PROXY: *, names, suffixes, ports, IPs and CIDRs.
  ['NO_PROXY=*', { ...HTTPS, NO_PROXY: '*' }, 'https://anything.example', 'direct'],
  ['* anywhere in the list', { ...HTTPS, NO_PROXY: 'a.example, *' }, 'https://b.example', 'direct'],
  ['a name matches itself', { ...HTTPS, NO_PROXY: 'example.com' }, 'https://example.com', 'direct'],
  ['a name matches its subdomains', { ...HTTPS, NO_PROXY: 'example.com' }, 'https://vault.example.com', 'direct'],
  [
    'a name does not match another name ending like it',
    { ...HTTPS, NO_PROXY: 'example.com' },
    'https://notexample.com',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  ['.domain matches subdomains', { ...HTTPS, NO_PROXY: '.example.com' }, 'https://vault.example.com', 'direct'],
  [
    '.domain does not match the domain itself',
    { ...HTTPS, NO_PROXY: '.example.com' },
    'https://example.com',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  ['*.domain is .domain', { ...HTTPS, NO_PROXY: '*.example.com' }, 'https://a.b.example.com', 'direct'],
  [
    '*.domain does not match the domain itself',
    { ...HTTPS, NO_PROXY: '*.example.com' },
    'https://example.com',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  [
    'entries are trimmed and lower-cased',
    { ...HTTPS, NO_PROXY: ' x.example , Vault.EXAMPLE ' },
    'https://vault.example',
    'direct',
  ],
  ['name:port matches that port', { ...HTTPS, NO_PROXY: 'vault.example:8200' }, 'https://vault.example:8200', 'direct'],
  [
    'name:port does not match another port',
    { ...HTTPS, NO_PROXY: 'vault.example:8200' },
    'https://vault.example:8201',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  ["the scheme's default port counts", { ...HTTPS, NO_PROXY: 'vault.example:443' }, 'https://vault.example', 'direct'],
  ['an IP', { ...HTTPS, NO_PROXY: '10.1.2.3' }, 'https://10.1.2.3:8200', 'direct'],
  [
    'an IP does not match another IP',
    { ...HTTPS, NO_PROXY: '10.1.2.3' },
    'https://10.1.2.4:8200',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  ['IP:port', { ...HTTPS, NO_PROXY: '10.1.2.3:8200' }, 'https://10.1.2.3:8200', 'direct'],
  [
    'IP:port, another port',
    { ...HTTPS, NO_PROXY: '10.1.2.3:8200' },
    'https://10.1.2.3:9200',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  ['a CIDR', { ...HTTPS, NO_PROXY: '10.0.0.0/8' }, 'https://10.200.3.4:8200', 'direct'],
  ['a CIDR with host bits', { ...HTTPS, NO_PROXY: '10.1.2.3/16' }, 'https://10.1.99.1:8200', 'direct'],
  [
    'outside the CIDR',
    { ...HTTPS, NO_PROXY: '10.0.0.0/8' },
    'https://11.0.0.1:8200',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  [
    'a CIDR never matches a name',
    { ...HTTPS, NO_PROXY: '10.0.0.0/8' },
    'https://vault.example',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  ['an IPv6 CIDR', { ...HTTPS, NO_PROXY: 'fd00::/8' }, 'https://[fd12::5]:8200', 'direct'],
  ['an IPv6 address', { ...HTTPS, NO_PROXY: 'fd00::5' }, 'https://[fd00::5]:8200', 'direct'],
  ['[IPv6]:port', { ...HTTPS, NO_PROXY: '[fd00::5]:8200' }, 'https://[fd00::5]:8200', 'direct'],
  [
    '[IPv6]:port, another port',
    { ...HTTPS, NO_PROXY: '[fd00::5]:8200' },
    'https://[fd00::5]:8201',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  [
    'a name entry never matches an IP',
    { ...HTTPS, NO_PROXY: '3.4' },
    'https://1.2.3.4:8200',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  [
    'international names as punycode',
    { ...HTTPS, NO_PROXY: 'bücher.example' },
    'https://vault.bücher.example',
    'direct',
  ],
  ['unreadable entries are skipped', { ...HTTPS, NO_PROXY: ':8200,,[],v.example' }, 'https://v.example', 'direct'],
  // The Vault API's own variables: every http(s) address, loopback too, NO_PROXY ignored.
  [
    'VAULT_PROXY_ADDR for https://',
    { VAULT_PROXY_ADDR: 'http://vp:1' },
    'https://vault.example',
    'http://vp:1 (VAULT_PROXY_ADDR)',
  ],
  [
    'VAULT_PROXY_ADDR for http://',
    { VAULT_PROXY_ADDR: 'http://vp:1' },
    'http://vault.example',
    'http://vp:1 (VAULT_PROXY_ADDR)',
  ],
  [
    'VAULT_PROXY_ADDR for loopback',
    { VAULT_PROXY_ADDR: 'http://vp:1' },
    'https://127.0.0.1:8200',
    'http://vp:1 (VAULT_PROXY_ADDR)',
  ],
  [
    'VAULT_PROXY_ADDR ignores NO_PROXY',
    { VAULT_PROXY_ADDR: 'http://vp:1', NO_PROXY: '*' },
    'https://vault.example',
    'http://vp:1 (VAULT_PROXY_ADDR)',
  ],
  [
    'VAULT_PROXY_ADDR before HTTPS_PROXY',
    { ...HTTPS, VAULT_PROXY_ADDR: 'http://vp:1' },
    'https://vault.example',
    'http://vp:1 (VAULT_PROXY_ADDR)',
  ],
  [
    'VAULT_HTTP_PROXY alone',
    { VAULT_HTTP_PROXY: 'http://vh:2' },
    'https://vault.example',
    'http://vh:2 (VAULT_HTTP_PROXY)',
  ],
  [
    'VAULT_PROXY_ADDR supersedes VAULT_HTTP_PROXY',
    { VAULT_HTTP_PROXY: 'http://vh:2', VAULT_PROXY_ADDR: 'http://vp:1' },
    'https://vault.example',
    'http://vp:1 (VAULT_PROXY_ADDR)',
  ],
  [
    'BAO_PROXY_ADDR before VAULT_PROXY_ADDR',
    { BAO_PROXY_ADDR: 'http://bp:3', VAULT_PROXY_ADDR: 'http://vp:1' },
    'https://vault.example',
    'http://bp:3 (BAO_PROXY_ADDR)',
  ],
  [
    'BAO_HTTP_PROXY before VAULT_HTTP_PROXY',
    { BAO_HTTP_PROXY: 'http://bh:4', VAULT_HTTP_PROXY: 'http://vh:2' },
    'https://vault.example',
    'http://bh:4 (BAO_HTTP_PROXY)',
  ],
  [
    'VAULT_PROXY_ADDR supersedes BAO_HTTP_PROXY',
    { BAO_HTTP_PROXY: 'http://bh:4', VAULT_PROXY_ADDR: 'http://vp:1' },
    'https://vault.example',
    'http://vp:1 (VAULT_PROXY_ADDR)',
  ],
  [
    'an empty BAO_PROXY_ADDR hides VAULT_PROXY_ADDR',
    { ...HTTPS, BAO_PROXY_ADDR: '', VAULT_PROXY_ADDR: 'http://vp:1' },
    'https://vault.example',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  ['unix:// never', { VAULT_PROXY_ADDR: 'http://vp:1', ...HTTPS }, 'unix:///run/agent.sock', 'direct'],
  // Go's CGI rule: HTTP_PROXY is refused while REQUEST_METHOD is set.
  ['CGI: HTTP_PROXY refused', { HTTP_PROXY: 'http://p:8080', REQUEST_METHOD: 'GET' }, 'http://v.example', 'refused'],
  [
    'CGI: HTTPS_PROXY still used',
    { ...HTTPS, REQUEST_METHOD: 'GET' },
    'https://v.example',
    'http://proxy.corp:3128 (HTTPS_PROXY)',
  ],
  ['CGI: no HTTP_PROXY, direct', { REQUEST_METHOD: 'GET' }, 'http://v.example', 'direct'],
  [
    'CGI: the Vault API variable is still used',
    { VAULT_PROXY_ADDR: 'http://vp:1', REQUEST_METHOD: 'GET' },
    'http://v.example',
    'http://vp:1 (VAULT_PROXY_ADDR)',
  ],
]

t.test('where each address goes', async (t) => {
  for (const [what, env, address, want] of CASES) t.equal(route(env, address), want, what)
})

t.test('the reason says which rule decided', async (t) => {
  const reason = (env: Env, address: string): string => proxyFor(address, readProxySettings(env)).reason
  t.equal(reason({}, 'https://v.example'), 'no HTTPS_PROXY (or https_proxy) is set')
  t.equal(
    reason({ ...HTTPS, no_proxy: 'x.example,.svc' }, 'https://vault.vault.svc:8200'),
    'no_proxy entry ".svc" matches vault.vault.svc:8200',
  )
  t.equal(reason(HTTPS, 'https://localhost:8200'), 'localhost is never reached through a proxy')
  t.equal(reason(HTTPS, 'https://[::1]:8200'), 'a loopback address is never reached through a proxy')
  t.equal(
    reason({ ...HTTPS, NO_PROXY: '.svc' }, 'https://vault.example:8200'),
    'HTTPS_PROXY is set and no NO_PROXY entry matches vault.example:8200',
  )
  t.match(
    reason({ VAULT_PROXY_ADDR: 'http://vp:1' }, 'https://v.example'),
    /VAULT_PROXY_ADDR is set.*NO_PROXY does not/,
  )
  t.match(reason({ HTTP_PROXY: 'http://p:1', REQUEST_METHOD: 'POST' }, 'http://v.example'), /REQUEST_METHOD/)
  t.equal(
    describeDecision('https://v.example', proxyFor('https://v.example', readProxySettings({}))),
    'https://v.example is reached directly: no HTTPS_PROXY (or https_proxy) is set',
  )
})

t.test('credentials in a proxy URL go into Proxy-Authorization and nowhere else', async (t) => {
  const password = 'pa:ss@w0rd'
  const settings = readProxySettings({
    HTTPS_PROXY: `http://al%40ice:${encodeURIComponent(password)}@proxy.corp:3128`,
    VAULT_HTTP_PROXY: 'http://bob:hunter2@vp:1',
  })
  const endpoint = settings.https!.endpoint
  t.equal(endpoint.authorizationHeader(), `Basic ${Buffer.from(`al@ice:${password}`).toString('base64')}`)
  t.equal(endpoint.shown, 'http://proxy.corp:3128')
  t.ok(endpoint.hasCredentials)
  const texts = [
    JSON.stringify(settings),
    inspect(settings, { depth: 10 }),
    String(endpoint),
    JSON.stringify(describeProxySettings(settings)),
    describeDecision('https://v.example', proxyFor('https://v.example', settings)),
  ]
  for (const text of texts) {
    t.notOk(text.includes('pa:ss') || text.includes('pa%3Ass') || text.includes('hunter2'), `no password in ${text}`)
    t.notOk(text.includes(Buffer.from(`al@ice:${password}`).toString('base64')), 'no encoded credentials')
  }
  t.same(describeProxySettings(settings), {
    vaultApi: 'http://vp:1 (VAULT_HTTP_PROXY, with credentials)',
    https: 'http://proxy.corp:3128 (HTTPS_PROXY, with credentials)',
  })
  t.equal(
    readProxySettings({ HTTPS_PROXY: 'http://user@p:1' }).https!.endpoint.authorizationHeader(),
    `Basic ${Buffer.from('user:').toString('base64')}`,
  )
  t.equal(readProxySettings({ HTTPS_PROXY: 'http://p:1' }).https!.endpoint.authorizationHeader(), undefined)
})

t.test('a variable that is not a usable proxy URL is refused, naming it and not its value', async (t) => {
  const refused = (env: Env): ProxyConfigError => t.throws(() => readProxySettings(env)) as ProxyConfigError
  const socks = refused({ HTTPS_PROXY: 'socks5://user:secret1@p:1080' })
  t.ok(socks instanceof ProxyConfigError)
  t.match(socks.message, /^HTTPS_PROXY names a socks5:\/\/ proxy; .*http:\/\/ and https:\/\/ proxies only/)
  const bad = refused({ VAULT_PROXY_ADDR: 'http://user:secret2@[not-an-ip' })
  t.match(bad.message, /^VAULT_PROXY_ADDR is not a proxy URL/)
  const encoding = refused({ https_proxy: 'http://user:%E0%A4%A@p:1' })
  t.match(encoding.message, /^https_proxy: the user or password .* not valid percent-encoding/)
  for (const err of [socks, bad, encoding]) t.notMatch(err.message, /secret|%E0/)
})

t.test('IP literals compare as Go compares them', async (t) => {
  t.same(ipBytes('10.1.2.3'), Uint8Array.from([10, 1, 2, 3]))
  t.same(ipBytes('::ffff:10.1.2.3'), Uint8Array.from([10, 1, 2, 3]), 'IPv4-mapped is IPv4')
  t.same(ipBytes('::1'), Uint8Array.from([...new Array<number>(15).fill(0), 1]))
  t.same(ipBytes('2001:db8::8:0:1'), Uint8Array.from([0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 1]))
  t.equal(ipBytes('vault.example'), undefined)
  t.equal(ipBytes('fe80::1%eth0'), undefined)
})
