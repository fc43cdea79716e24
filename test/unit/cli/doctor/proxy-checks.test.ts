// doctor's vault.proxy line: the daemon's own reading of the proxy variables, said for one address.
import t from 'tap'
import { proxyCheck, readDoctorProxy } from '../../../../src/cli/doctor/proxy-checks.js'
import { readProxySettings } from '../../../../src/vault/transport/proxy.js'

t.test('which proxy, or direct and why; credentials never shown', async (t) => {
  const settings = readProxySettings({ HTTPS_PROXY: 'http://app:s3cret@proxy.corp:3128', NO_PROXY: '.svc' })
  t.same(proxyCheck('https://vault.example:8200', settings), {
    id: 'vault.proxy',
    title: 'egress proxy',
    status: 'pass',
    detail:
      'https://vault.example:8200 is reached through the proxy http://proxy.corp:3128 (with credentials): ' +
      'HTTPS_PROXY is set and no NO_PROXY entry matches vault.example:8200',
  })
  t.same(proxyCheck('https://vault.vault.svc:8200', settings), {
    id: 'vault.proxy',
    title: 'egress proxy',
    status: 'pass',
    detail: 'https://vault.vault.svc:8200 is reached directly: NO_PROXY entry ".svc" matches vault.vault.svc:8200',
  })
  t.match(proxyCheck('unix:///run/agent.sock', settings), {
    status: 'pass',
    detail: 'unix:///run/agent.sock is reached directly: a unix socket is never reached through a proxy',
  })
})

t.test('a variable the daemon would refuse, and the CGI rule, fail with the fix', async (t) => {
  t.same(readDoctorProxy({ HTTPS_PROXY: 'socks5://app:s3cret@p:1080' }), {
    failed: {
      id: 'vault.proxy',
      title: 'egress proxy',
      status: 'fail',
      detail:
        'HTTPS_PROXY names a socks5:// proxy; the provider reaches Vault through http:// and https:// proxies only ' +
        '(HTTP CONNECT): set an http:// or https:// proxy, or unset the variable',
      fix: 'fix or unset the variable; the daemon does not start with it',
    },
  })
  const cgi = readDoctorProxy({ HTTP_PROXY: 'http://p:3128', REQUEST_METHOD: 'GET' })
  t.ok('settings' in cgi)
  const check = proxyCheck(
    'http://vault.example:8200',
    (cgi as { settings: ReturnType<typeof readProxySettings> }).settings,
  )
  t.equal(check.status, 'fail')
  t.match(
    check.detail,
    /^http:\/\/vault\.example:8200 is not reached: HTTP_PROXY is not used while REQUEST_METHOD is set/,
  )
  t.equal(check.fix, "unset REQUEST_METHOD in the provider's environment")
})
