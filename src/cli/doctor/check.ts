/** What one doctor check found, and what to do about it. */
export type CheckStatus = 'pass' | 'fail' | 'warn' | 'skip'

export interface CheckResult {
  id: string
  title: string
  status: CheckStatus
  detail: string
  /** What to do about a failure or warning. */
  fix?: string
}

export interface DoctorOptions {
  socket: string
  spc?: string
  role?: string
  tokenFile?: string
  tokenFromKubectl?: boolean
  namespace?: string
  serviceAccount?: string
  audience?: string
  json?: boolean
  /** Accept what a SecretProviderClass file decides about a minted token without a prompt (it is still shown). */
  yes?: boolean
  /** Daemon flags (-vault-addr, TLS, -vault-mount, -hmac-*, -kube-*), parsed by the daemon's own parser. */
  providerFlags: string[]
  /** Largest clock difference with Vault that passes (ms). */
  maxClockSkewMs?: number
}
