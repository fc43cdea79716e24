// Issue 9, class 6 (redirects, huge bodies) and the Vault-answer side of classes 4 and 8
// (pathological error texts before any regular expression, status label cardinality, token
// scrubbing). A pod names a "Vault" it controls (an address the operator allowed, as a
// compromised or hostile Vault would be); a trap host the allow-list refuses records anything
// that reaches it: it must see no connection at all.
//
// Stand-in: the hostile Vault is a loopback HTTP server, because a real OpenBao cannot redirect
// to an arbitrary host, stream gigabytes, trickle bytes or echo pathological error texts. The
// victim mounts from a real OpenBao through the same daemon.
import t, { type Test } from 'tap'
import { checkIsolation, runAttackConfirmed, startFakeHost, exclusiveSuite } from '../support/adversary.js'
import { HOSTILE_TOKEN, SHORT_TOKENS } from '../support/adversary-hosts.js'
import { expectAttack, finishSuite, startWorld } from '../support/adversary-world.js'
import { healthPort } from '../support/provider.js'

t.setTimeout(20 * 60_000)
// One adversarial file at a time on this machine (see exclusiveSuite).
await exclusiveSuite(t)

const STATUS_BUCKETS = new Set([
  '2xx',
  '3xx',
  '400',
  '401',
  '403',
  '404',
  '412',
  '429',
  '4xx',
  '500',
  '502',
  '503',
  '504',
  '5xx',
  'none',
])

t.test('a hostile Vault the pod names', async (t) => {
  const trap = await startFakeHost()
  const evil = await startFakeHost({ kind: 'hostile-vault', redirectTo: trap.url })
  // Answers that count as Vault being unreachable (a trickle, a header flood, 5xx) open the
  // provider's circuit breaker for that address: they get a hostile Vault of their own.
  const flaky = await startFakeHost({ kind: 'hostile-vault', redirectTo: trap.url })
  t.teardown(() => Promise.all([evil.close(), flaky.close(), trap.close()]))
  // -mount-timeout=4s: a Mount meeting one node's answers retries until its deadline, and the driver's
  // client retries an UNAVAILABLE Mount twice within its own 20 s; with 4 s each attempt ends inside it.
  const w = await startWorld({ allow: [evil.url, flaky.url], args: () => ['-mount-timeout=4s'] })
  t.teardown(() => w.stop())
  w.secrets.push(HOSTILE_TOKEN, ...SHORT_TOKENS)

  const attrs = (secretPath: string, extra: Record<string, string> = {}, host = evil): string =>
    w.attrs({ vaultAddress: host.url, objects: [{ objectName: 'a', secretPath }], ...extra })

  const cases: Array<{
    klass: string
    name: string
    attributes: string
    code: string | string[]
    message: RegExp[]
    concurrency?: number
    repeat?: boolean
    timeoutMs?: number
  }> = [
    {
      klass: '6',
      name: '307 on login to a host outside the allow-list',
      attributes: attrs('hostile/plain', { vaultAuthMountPath: 'redirect' }),
      code: 'FailedPrecondition',
      message: [/redirect/, new RegExp(`http://127\\.0\\.0\\.1:${trap.port}`), /login/],
    },
    {
      klass: '6',
      name: '302 on a read to a host outside the allow-list',
      attributes: attrs('hostile/redirect'),
      code: 'FailedPrecondition',
      message: [/redirect/, new RegExp(`http://127\\.0\\.0\\.1:${trap.port}`), /"a"/],
    },
    {
      klass: '6',
      name: 'vaultAddress naming the refused host directly',
      attributes: w.attrs({ vaultAddress: trap.url, objects: [{ objectName: 'a', secretPath: 'secret/data/x' }] }),
      code: 'PermissionDenied',
      message: [/vaultAddress|Vault address/, /-vault-addr-allowlist/],
    },
    {
      klass: '6',
      name: 'a read answering 2 GiB (Content-Length)',
      attributes: attrs('hostile/huge'),
      code: 'ResourceExhausted',
      message: [/-max-vault-response-size/, /"a"/],
    },
    {
      klass: 'own',
      name: 'a read answering 2 GiB chunked (no Content-Length)',
      attributes: attrs('hostile/huge-chunked'),
      code: 'ResourceExhausted',
      message: [/-max-vault-response-size/, /"a"/],
    },
    {
      klass: 'own',
      name: 'a login answering 2 GiB',
      attributes: attrs('hostile/plain', { vaultAuthMountPath: 'huge' }),
      code: 'ResourceExhausted',
      message: [/-max-vault-response-size/, /login/],
    },
    {
      klass: 'own',
      name: '4 reads of 2 GiB at once',
      attributes: attrs('hostile/huge-chunked'),
      code: 'ResourceExhausted',
      message: [/-max-vault-response-size/],
      concurrency: 4,
    },
    {
      // No Accept-Encoding is sent, so the body is gzip bytes that are not JSON: a bad answer.
      // An HTTP layer that decompresses must cut at the limit instead: both answers are right.
      klass: 'own',
      name: 'a gzip bomb (256 MiB of zeros in 256 KiB)',
      attributes: attrs('hostile/gzip'),
      code: ['FailedPrecondition', 'ResourceExhausted'],
      message: [/"a"/],
    },
    {
      klass: '4',
      name: 'a login error of 2 MB of newlines and spaces (3 MB as JSON) (oneLine before the cut)',
      attributes: attrs('hostile/plain', { vaultAuthMountPath: 'newlines' }),
      code: 'PermissionDenied',
      message: [/login/],
    },
    {
      klass: '4',
      name: 'a read error of 2 MB of newlines and spaces (3 MB as JSON)',
      attributes: attrs('hostile/echo-newlines'),
      code: 'InvalidArgument',
      message: [/"a"/],
    },
    {
      klass: '4',
      name: 'a read error of 1,000,000 × "eyJ" (the JWT scrub pattern’s worst case)',
      attributes: attrs('hostile/echo-jwt'),
      code: 'InvalidArgument',
      message: [/"a"/],
    },
    {
      klass: '8',
      name: 'a read error echoing short and long Vault tokens',
      attributes: attrs('hostile/echo-tokens'),
      code: 'InvalidArgument',
      message: [/"a"/, /redacted/],
    },
    {
      klass: 'own',
      name: 'a Vault trickling one byte every 100 ms (8 Mounts, 3 s deadline)',
      attributes: attrs('hostile/trickle', {}, flaky),
      code: 'DeadlineExceeded',
      message: [/deadline|time/i],
      concurrency: 8,
      repeat: false,
      timeoutMs: 3000,
    },
    {
      // Issue 46: one node's answer is retried on new connections until the deadline; these are the
      // tenant's own calls on its own address, held to its share of connections, and its address's
      // breaker is its own (this host's sys/health says healthy, so it never opens).
      klass: 'own',
      name: 'a "standby" redirecting a login to itself forever (307, same path; 8 Mounts until their deadline)',
      attributes: attrs('hostile/plain', { vaultAuthMountPath: 'standby-loop' }, flaky),
      code: 'Unavailable',
      message: [/no active node to answer \(electing a leader\)/, /login/],
      concurrency: 8,
      repeat: false,
    },
    {
      klass: 'own',
      name: 'a node answering every read 503 "Vault is sealed" (8 Mounts until their deadline)',
      attributes: attrs('hostile/sealed', {}, flaky),
      code: 'Unavailable',
      message: [/Vault is sealed/, /"a"/],
      concurrency: 8,
      repeat: false,
    },
    {
      // The victim's strong reads go to a real OpenBao, which answers an index it cannot decode with 400.
      klass: 'own',
      name: "answers carrying an X-Vault-Index of the attacker's making (the victim's strong reads unaffected)",
      attributes: attrs('hostile/index'),
      code: 'OK',
      message: [],
    },
    {
      klass: 'own',
      name: '256 KiB of response headers',
      attributes: attrs('hostile/headers', {}, flaky),
      code: ['Unavailable', 'FailedPrecondition'],
      message: [/"a"|Vault/],
    },
  ]
  for (const c of cases) {
    await t.test(c.name, async (t: Test) => {
      const out = await expectAttack(t, w, {
        klass: c.klass,
        name: c.name,
        attempt: () => w.mount(c.attributes, 'null', c.timeoutMs ?? 20_000),
        expect: { code: c.code, message: c.message },
        concurrency: c.concurrency ?? 1,
        ...(c.repeat === undefined ? {} : { repeat: c.repeat }),
      })
      for (const tok of [...SHORT_TOKENS, HOSTILE_TOKEN.slice(0, 8)]) {
        t.notOk(
          out.answers.some((a) => a.message.includes(tok)),
          `no answer carries ${tok.slice(0, 4)}…`,
        )
      }
    })
  }

  await t.test('nothing reached the host outside the allow-list', async (t) => {
    t.equal(await trap.connections(), 0, 'no connection at all')
    t.same(await trap.requests(), [], 'no request, so no JWT, token or body')
    const seen = await evil.requests()
    t.ok(seen.length > 0, 'the allowed hostile Vault did get the calls (the attacks ran)')
    t.ok(
      seen.some((r) => r.jwt) && seen.some((r) => r.vaultToken),
      'the recorder does see JWTs and tokens where they are sent',
    )
  })

  await t.test('200 distinct HTTP statuses keep the metric labels to the fixed buckets', async (t) => {
    // 200 distinct statuses; those the provider retries (429, 5xx) are few, so the attack ends soon.
    const statuses = [
      ...Array.from({ length: 94 }, (_, i) => 206 + i),
      ...Array.from({ length: 100 }, (_, i) => 400 + i).filter((s) => s !== 429),
      ...Array.from({ length: 7 }, (_, i) => 520 + i),
    ]
    const perStatus = statuses.map((s) => attrs(`hostile/status/${s}`, {}, flaky))
    const out = await runAttackConfirmed(t, w.daemon, w.victim, {
      klass: '8',
      name: '200 distinct Vault statuses (206-299, 4xx, 520-526)',
      attempt: (i) => w.mount(perStatus[i % perStatus.length]!, 'null', 5000),
      repeat: statuses.length,
      concurrency: 8,
    })
    checkIsolation(t, w.daemon, out)
    t.equal(out.answers.length, 200, 'every status was answered')
    t.notOk(
      out.answers.some((a) => a.grpcCode === 'OK' || a.grpcCode === 'Internal' || a.grpcCode === 'Unknown'),
      'no status made a Mount succeed or fail as an internal error',
    )
    const metrics = await (await fetch(`http://127.0.0.1:${await healthPort(w.daemon.provider)}/metrics`)).text()
    const labels = new Set([...metrics.matchAll(/status="([^"]*)"/g)].map((m) => m[1]!))
    t.same(
      [...labels].filter((l) => !STATUS_BUCKETS.has(l)),
      [],
      `status labels only from the fixed set (saw ${[...labels].sort().join(', ')})`,
    )
    t.ok(metrics.split('\n').length < 1500, `/metrics stays small (${metrics.split('\n').length} lines)`)
  })

  await finishSuite(t, w, 'transport')
})
