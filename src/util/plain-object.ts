/**
 * True for a JSON object (what JSON.parse or a YAML mapping gives): not null,
 * not an array. The one definition every layer uses to look inside Vault
 * answers, templates and SecretProviderClass values.
 */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}
