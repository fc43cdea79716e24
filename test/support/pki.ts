// A PKI secrets engine with an internal root CA and one issuing role, as the
// integration tests, the benchmark and the demo need it.
import { mustSucceed, type OpenBao } from './openbao.js'

export interface PkiOptions {
  /** Engine mount. Default 'pki'. */
  mount?: string
  rootCommonName: string
  /** Root validity, also the mount's max lease TTL. */
  rootTtl: string
  role: string
  /** Leaves are issued for subdomains of these. */
  allowedDomains: string[]
  /** The role's max TTL. */
  maxTtl: string
  /** EC P-256 keys: milliseconds to generate where RSA takes far longer. Default true. */
  ec?: boolean
}

/** Enables the engine, generates the root and creates the role; throws with OpenBao's answer if a step fails. */
export async function configurePki(bao: OpenBao, o: PkiOptions): Promise<void> {
  const mount = o.mount ?? 'pki'
  const keys = o.ec === false ? {} : { key_type: 'ec', key_bits: 256 }
  await bao.enableSecrets('pki', mount, undefined, { config: { max_lease_ttl: o.rootTtl } })
  mustSucceed(
    `generate the root of ${mount}`,
    await bao.api('POST', `/v1/${mount}/root/generate/internal`, {
      common_name: o.rootCommonName,
      ttl: o.rootTtl,
      ...keys,
    }),
  )
  mustSucceed(
    `create role ${mount}/roles/${o.role}`,
    await bao.api('POST', `/v1/${mount}/roles/${o.role}`, {
      allowed_domains: o.allowedDomains,
      allow_subdomains: true,
      max_ttl: o.maxTtl,
      ...keys,
    }),
  )
}
