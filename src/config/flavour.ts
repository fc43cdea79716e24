/**
 * The provider flavours: the provider is a drop-in for HashiCorp's vault-csi-provider
 * (`provider: vault`) and for OpenBao's openbao-csi-provider 2.x (`provider: openbao`). The two
 * read the same SecretProviderClasses but for the names and defaults below; which one a Mount
 * follows is decided by the class's `spec.provider`, that is the socket the driver called
 * (`<provider>.sock`). The parameter names of each flavour are in request/parameters.ts, the
 * flags' OpenBao names in flags.ts.
 */

export const PROVIDER_FLAVOURS = ['vault', 'openbao'] as const
export type ProviderFlavour = (typeof PROVIDER_FLAVOURS)[number]

export const DEFAULT_FLAVOUR: ProviderFlavour = 'vault'

/** What differs between the two reference providers, besides names. */
export interface FlavourFacts {
  /** The reference provider this flavour is a drop-in for. */
  readonly reference: string
  /** `spec.provider` of its SecretProviderClasses. */
  readonly provider: string
  /** The socket the driver calls for that provider, in its providers directory. */
  readonly socketName: string
  /** The server's name in messages. */
  readonly product: string
  /** The audience of the pod token a Mount uses when the class sets no `audience`. */
  readonly defaultAudience: string
  /** The Secret of the object-version key when -hmac-secret-name is not given. */
  readonly defaultHmacSecretName: string
}

export const FLAVOURS: Readonly<Record<ProviderFlavour, FlavourFacts>> = {
  vault: {
    reference: 'vault-csi-provider',
    provider: 'vault',
    socketName: 'vault.sock',
    product: 'Vault',
    defaultAudience: 'vault',
    defaultHmacSecretName: 'vault-csi-provider-hmac-key',
  },
  openbao: {
    reference: 'openbao-csi-provider',
    provider: 'openbao',
    socketName: 'openbao.sock',
    product: 'OpenBao',
    defaultAudience: 'openbao',
    defaultHmacSecretName: 'openbao-csi-provider-hmac-key',
  },
}

/** The flavour of a SecretProviderClass's `spec.provider`; undefined when it is not one of ours. */
export function flavourOfProvider(provider: unknown): ProviderFlavour | undefined {
  return PROVIDER_FLAVOURS.find((f) => FLAVOURS[f].provider === provider)
}
