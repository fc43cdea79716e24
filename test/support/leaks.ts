// Secret hygiene: nothing secret may reach a log line or an error message.

const JWT = /eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\./
const VAULT_TOKEN = /\b(?:hv[sbr]\.[A-Za-z0-9_-]{20,}|s\.[A-Za-z0-9]{24})/

export interface LeakFinding {
  what: string
  line: string
}

/** Every line of `text` that contains one of `secrets` or anything shaped like a JWT or a Vault token. */
export function findLeaks(text: string, secrets: readonly string[]): LeakFinding[] {
  const findings: LeakFinding[] = []
  for (const line of text.split('\n')) {
    for (const s of secrets) {
      if (s.length >= 4 && line.includes(s))
        findings.push({ what: `secret value ${s.slice(0, 2)}…`, line: line.slice(0, 200) })
    }
    if (JWT.test(line)) findings.push({ what: 'a JWT', line: line.slice(0, 200) })
    if (VAULT_TOKEN.test(line)) findings.push({ what: 'a Vault token', line: line.slice(0, 200) })
  }
  return findings
}
