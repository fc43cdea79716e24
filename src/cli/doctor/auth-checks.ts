/** Auth checks: the auth mount and the role exist; with a pod token, the pod can log in. */
import { ProviderError } from '../../errors.js'
import type { VaultConnection } from '../../request/types.js'
import { describeFailure } from '../../vault/failure-to-error.js'
import { VaultHttpError } from '../../vault/transport/call-errors.js'
import { PROVIDER_TENANT, type TransportSource } from '../../vault/transport/registry.js'
import { MAX_TOKEN_ANSWER_BYTES, type VaultCaller } from '../../vault/transport/transport.js'
import { callOptions, createVaultClient, revokeSelf } from '../../vault/vault-client.js'
import type { CheckResult } from './check.js'

interface LoginProbe {
  /** Vault's HTTP status; undefined when no answer came. */
  status?: number
  errors: string[]
  /** Why there was no answer. */
  detail?: string
}

/**
 * A login at auth/<mount>/login through node-vault and the provider's transport: Vault's status and
 * errors. A token it gets is revoked at once (best effort): the doctor leaves none behind.
 */
async function tryLogin(
  conn: VaultConnection,
  mount: string,
  role: string,
  jwt: string,
  transports: TransportSource,
): Promise<LoginProbe> {
  let transport: VaultCaller
  try {
    transport = await transports.get(conn, PROVIDER_TENANT)
  } catch (err) {
    return { errors: [], detail: err instanceof Error ? err.message : String(err) }
  }
  const client = createVaultClient(transport, PROVIDER_TENANT)
  const namespace = conn.namespace ?? ''
  try {
    await client.kubernetesLogin({
      role,
      jwt,
      mount_point: mount,
      requestOptions: callOptions(10_000, undefined, namespace, MAX_TOKEN_ANSWER_BYTES),
    })
    // The client holds the token node-vault's login set.
    const revoke = callOptions(5_000, undefined, namespace, MAX_TOKEN_ANSWER_BYTES)
    await revokeSelf(client, revoke).catch(() => undefined)
    return { status: 200, errors: [] }
  } catch (err) {
    if (err instanceof VaultHttpError) return { status: err.status, errors: [...err.errors] }
    return { errors: [], detail: err instanceof ProviderError ? err.message : describeFailure(err).detail }
  }
}

const ROLE_MISSING = /role .*(could not be found|not found)|invalid role name/i

export async function authChecks(
  conn: VaultConnection,
  mount: string,
  role: string | undefined,
  jwt: string | undefined,
  transports: TransportSource,
): Promise<CheckResult[]> {
  if (!role) {
    return [
      {
        id: 'auth.mount',
        title: `auth mount "${mount}" exists`,
        status: 'skip',
        detail: 'no role given (--role or a SecretProviderClass)',
      },
      { id: 'auth.role', title: 'role exists', status: 'skip', detail: 'no role given' },
    ]
  }
  // Without the pod's token, a login with a deliberately invalid JWT still tells an
  // unknown mount (403), an unknown role ("role … not found") and a known role (token rejected) apart.
  const probe = await tryLogin(conn, mount, role, jwt ?? 'doctor.invalid.jwt', transports)
  const errors = probe.errors.join('; ')
  const out: CheckResult[] = []
  if (probe.status === undefined) {
    return [
      { id: 'auth.mount', title: `auth mount "${mount}" exists`, status: 'skip', detail: probe.detail ?? 'no answer' },
      { id: 'auth.role', title: `role "${role}" exists`, status: 'skip', detail: probe.detail ?? 'no answer' },
    ]
  }
  if (probe.status === 503) {
    return [
      {
        id: 'auth.mount',
        title: `auth mount "${mount}" exists`,
        status: 'skip',
        detail: `Vault answered 503: ${errors}`,
      },
      { id: 'auth.role', title: `role "${role}" exists`, status: 'skip', detail: 'Vault unavailable' },
    ]
  }
  if ((probe.status === 403 || probe.status === 404) && !ROLE_MISSING.test(errors)) {
    out.push({
      id: 'auth.mount',
      title: `auth mount "${mount}" exists`,
      status: 'fail',
      detail: `POST auth/${mount}/login answered ${probe.status}: ${errors || 'no error text'}`,
      fix: `enable the auth method at "${mount}" (vault auth enable -path=${mount} kubernetes), or set -vault-mount / vaultAuthMountPath to the mount that exists`,
    })
    out.push({ id: 'auth.role', title: `role "${role}" exists`, status: 'skip', detail: 'no auth mount' })
    return out
  }
  out.push({
    id: 'auth.mount',
    title: `auth mount "${mount}" exists`,
    status: 'pass',
    detail: `auth/${mount}/login answers`,
  })
  if (ROLE_MISSING.test(errors)) {
    out.push({
      id: 'auth.role',
      title: `role "${role}" exists`,
      status: 'fail',
      detail: errors,
      fix: `create the role (vault write auth/${mount}/role/${role} …) or fix roleName in the SecretProviderClass`,
    })
    return out
  }
  out.push({
    id: 'auth.role',
    title: `role "${role}" exists`,
    status: 'pass',
    detail: `auth/${mount}/role/${role} is known to Vault`,
  })
  if (jwt !== undefined) {
    if (probe.status === 200) {
      out.push({
        id: 'auth.login',
        title: 'the pod can log in',
        status: 'pass',
        detail: 'login succeeded (the test token was revoked)',
      })
    } else {
      out.push({
        id: 'auth.login',
        title: 'the pod can log in',
        status: 'fail',
        detail: `login answered ${probe.status}: ${errors || 'no error text'}`,
        fix: "compare the role's bound service accounts / namespaces / audience with the pod's; the token's audience must be one the role accepts (-audience, default \"vault\")",
      })
    }
  }
  return out
}
