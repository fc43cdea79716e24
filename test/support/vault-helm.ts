// What vault-helm's csi-daemonset.yaml gives the provider container, as the tests know it: only
// `args` (no `command`, so the image's ENTRYPOINT runs with them), VAULT_ADDR, no securityContext,
// and liveness and readiness probes that GET /health/ready on port 8080.

/** vault-helm's DaemonSet args with its defaults (csi.debug false, csi.hmacSecretName ""). */
export const VAULT_HELM_DEFAULT_ARGS = [
  '--endpoint=/provider/vault.sock',
  '--debug=false',
  '--hmac-secret-name=vault-csi-provider-hmac-key',
]
/** …and for a typical values block: csi.debug true, csi.hmacSecretName, csi.extraArgs. */
export const VAULT_HELM_TYPICAL_ARGS = [
  '--endpoint=/provider/vault.sock',
  '--debug=true',
  '--hmac-secret-name=vault-hmac',
  '-vault-mount=jwt',
  '--cache-size=500',
  '-vault-tls-server-name=vault.vault.svc',
]
/** vault-helm's VAULT_ADDR with its default Vault Agent sidecar. */
export const VAULT_HELM_ENV = { VAULT_ADDR: 'unix:///var/run/vault/agent.sock' }
/** vault-helm's probes: both GET /health/ready on 8080. */
export const VAULT_HELM_PROBE = { path: '/health/ready', port: 8080 }
