import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { parseMountRequest, parsePermission } from '../../src/request/parse-request.js'
const show = (label: string, f: () => unknown) => { try { console.log(label, JSON.stringify(f())) } catch (e) { console.log(label, 'ERR', (e as any).name, (e as any).code, (e as Error).message) } }
for (const a of [['-vault-tls-skip-verify'], ['-vault-tls-skip-verify', '-endpoint=/x'], ['-cache-size', '-1'], ['-cache-size=-1'], ['-mount-timeout=1m30s'], ['-mount-timeout=0'], ['-debug=false'], ['-debug', '-log-level=warn'], ['-v'], ['x'], ['-endpoint'], ['-health-addr', ':9090'], ['-h'], ['--help'], ['-debug=1']]) show(a.join(' '), () => { const c = loadConfig(a, {}); return [c.endpoint, c.logLevel, c.cacheSize, c.mountTimeoutMs, c.vault.tls.skipVerify, c.healthAddr] })
for (const p of ['420', '"420"', '0644', '', ' 420 ', '512', '-1', '4.0', '1e2', 'null', '"0644"']) show('perm ' + p, () => parsePermission(p))
t.pass()
