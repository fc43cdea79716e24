// One adversarial test environment: a real OpenBao with `jwt` auth and a KV secret for the
// victim pod, the built daemon under the image's Node flags with a memory watchdog, the
// victim with its unloaded p99 measured, and a gRPC connection for the attacker (a Node
// client, so attacks can send what the driver's own client would refuse to).
import { randomUUID } from 'node:crypto'
import type { Test } from 'tap'
import { stringify } from 'yaml'
import {
  checkIsolation,
  runAttackConfirmed,
  newPod,
  podAttributes,
  report,
  startAdversaryDaemon,
  Victim,
  type AdversaryDaemon,
  type AttackOptions,
  type AttackOutcome,
  type PodIdentitySpec,
} from './adversary.js'
import { connectProvider, type GrpcMountResult, type ProviderGrpcClient } from './grpc-client.js'
import { configureJwtAuth, createJwtRole } from './jwt.js'
import { findLeaks } from './leaks.js'
import { startOpenBao, type OpenBao, type StartOpenBaoOptions } from './openbao.js'
import type { StartProviderOptions } from './provider.js'

export const ROLE = 'app'
/** A role any service account of any namespace may log in with (for attackers' own logins). */
export const ANY_ROLE = 'anyone'

export interface WorldOptions {
  bao?: StartOpenBaoOptions
  /** Daemon flags after -vault-addr (and the CA flag for a TLS OpenBao). */
  args?: (bao: OpenBao) => string[]
  provider?: Omit<StartProviderOptions, 'args'>
  /** Addresses allowed besides OpenBao's; null: no -vault-addr-allowlist at all. */
  allow?: string[] | null
  /** The daemon's -vault-addr (allowed too), e.g. a proxy in front of OpenBao; default OpenBao's address. */
  vaultAddr?: (bao: OpenBao) => string | Promise<string>
  /** SecretProviderClass parameters of the victim's Mount besides its objects (e.g. its own vaultAddress). */
  victimParams?: (bao: OpenBao) => Record<string, string>
  /** The victim's secret value is padded to this many characters (a larger Mount); default a short one. */
  victimValueChars?: number
}

export interface World {
  bao: OpenBao
  daemon: AdversaryDaemon
  victim: Victim
  victimPod: PodIdentitySpec
  victimValue: string
  attacker: ProviderGrpcClient
  /** Values that must never appear in a log line or an answer. */
  secrets: string[]
  /** Attributes JSON for a Mount: SPC parameters (objects may be an array) over kubelet's pod attributes. */
  attrs(params: Record<string, unknown>, pod?: PodIdentitySpec, token?: string | null, audience?: string): string
  /** One attacker Mount. */
  mount(attributes: string, secrets?: string, timeoutMs?: number): Promise<GrpcMountResult>
  stop(): Promise<void>
}

export async function startWorld(o: WorldOptions = {}): Promise<World> {
  const bao = await startOpenBao(o.bao ?? {})
  try {
    await configureJwtAuth(bao, 'jwt')
    await bao.enableSecrets('kv', 'kv1', { version: '1' })
    await bao.writePolicy(
      'app-read',
      'path "secret/*" { capabilities = ["read"] }\npath "kv1/*" { capabilities = ["read"] }',
    )
    await createJwtRole(bao, 'jwt', ROLE, {
      policies: ['app-read'],
      boundAudiences: ['vault'],
      boundSubject: 'system:serviceaccount:default:app',
      ttl: '1h',
    })
    await createJwtRole(bao, 'jwt', ANY_ROLE, { policies: ['default'], boundAudiences: ['vault'], ttl: '1h' })
    const shortValue = `victim-${randomUUID()}`
    const victimValue = shortValue.padEnd(o.victimValueChars ?? 0, 'v')
    const put = await bao.api('POST', '/v1/secret/data/victim', { data: { password: victimValue } })
    if (put.status !== 200) throw new Error(`kv put: ${put.status} ${JSON.stringify(put.body)}`)
    const vaultAddr = (await o.vaultAddr?.(bao)) ?? bao.addr
    const allow = o.allow === null ? [] : [...new Set([bao.addr, vaultAddr, ...(o.allow ?? [])])]
    const daemon = await startAdversaryDaemon({
      ...(o.provider ?? {}),
      args: [
        `-vault-addr=${vaultAddr}`,
        ...(bao.caCertPath !== undefined ? [`-vault-tls-ca-cert=${bao.caCertPath}`] : []),
        ...(allow.length > 0 ? [`-vault-addr-allowlist=${allow.join(',')}`] : []),
        ...(o.args?.(bao) ?? []),
      ],
    })
    const secrets = [victimValue]
    const attrs: World['attrs'] = (params, pod = newPod(`attacker-${randomUUID().slice(0, 8)}`), token, audience) => {
      const p: Record<string, string> = { roleName: ROLE, vaultAuthMountPath: 'jwt', secretProviderClass: 'spc' }
      for (const [k, v] of Object.entries(params)) p[k] = typeof v === 'string' ? v : stringify(v)
      const podAttrs = podAttributes(pod, token, audience)
      const tokens = podAttrs['csi.storage.k8s.io/serviceAccount.tokens']
      if (tokens !== undefined) secrets.push(tokens)
      return JSON.stringify({ ...p, ...podAttrs })
    }
    const victimPod = newPod('victim-0')
    const victimAttrs = attrs(
      {
        ...(o.victimParams?.(bao) ?? {}),
        objects: [{ objectName: 'password', secretPath: 'secret/data/victim', secretKey: 'password' }],
      },
      victimPod,
    )
    const victim = new Victim({
      socketPath: daemon.provider.socketPath,
      attributes: victimAttrs,
      expected: victimValue,
    })
    await victim.measureUnloaded(30, 20)
    const attacker = connectProvider(daemon.provider.socketPath, 64 * 1024 * 1024)
    return {
      bao,
      daemon,
      victim,
      victimPod,
      victimValue,
      attacker,
      secrets,
      attrs,
      mount: (attributes, secretsField = 'null', timeoutMs = 30_000) =>
        attacker.mount({ attributes, secrets: secretsField }, timeoutMs),
      async stop() {
        attacker.close()
        await victim.close()
        await daemon.stop()
        await bao.stop()
      },
    }
  } catch (err) {
    await bao.stop()
    throw err
  }
}

export interface ExpectedAnswer {
  /**
   * gRPC code name, e.g. 'InvalidArgument'; a list where more than one answer is right (and
   * the test says why).
   */
  code: string | string[]
  /** Each must match the message (the field it names, the flag, …). */
  message: RegExp[]
}

/**
 * Runs the attack and asserts everything issue 9 asks of it: the attacker's answer (every
 * attempt the same code, the message naming the field), no secret in it, and isolation.
 */
export async function expectAttack(
  t: Test,
  w: World,
  o: AttackOptions & { expect: ExpectedAnswer },
): Promise<AttackOutcome> {
  const out = await runAttackConfirmed(t, w.daemon, w.victim, o)
  const codes = Array.isArray(o.expect.code) ? o.expect.code : [o.expect.code]
  t.ok(
    codes.includes(out.answer.grpcCode),
    `the attacker got ${out.answer.grpcCode} (${codes.join(' or ')}): ${out.answer.message.slice(0, 300)}`,
  )
  for (const re of o.expect.message) t.match(out.answer.message, re, `the message matches ${String(re)}`)
  const odd = out.answers.find((a) => a.grpcCode !== out.answer.grpcCode)
  t.same(
    [...new Set(out.answers.map((a) => a.grpcCode))],
    [out.answer.grpcCode],
    `every attempt got the same code${odd === undefined ? '' : ` (not: ${odd.grpcCode}: ${odd.message.slice(0, 300)})`}`,
  )
  t.same(findLeaks(out.answers.map((a) => a.message).join('\n'), w.secrets), [], 'no token or secret in the answers')
  t.ok(out.answer.message.length <= 4096, `the message is bounded (${out.answer.message.length} chars)`)
  checkIsolation(t, w.daemon, out)
  return out
}

/** End of a suite: no secret in the daemon's log, log lines bounded, the figures written. */
export async function finishSuite(t: Test, w: World, suite: string): Promise<void> {
  const logs = await w.daemon.provider.logs()
  t.same(findLeaks(logs, w.secrets), [], 'no token, JWT or secret value in any log line')
  const longest = Math.max(0, ...logs.split('\n').map((l) => l.length))
  t.ok(longest <= 16 * 1024, `every log line is bounded (longest ${longest} chars)`)
  t.comment(report.write(suite, [`Node flags: ${w.daemon.nodeFlags.join(' ')}`]))
}
