// Summaries of the V8 CPU profiles that `--profile` writes (node --cpu-prof):
// self time by module (an npm package, Node's own code, our src/ directory) and
// by function, so that "where does the CPU time of a Mount go" has an answer in
// numbers. Also runnable alone: node dist/bench/profile.js <file.cpuprofile> [skipMs].
// A bundle's frames (dist/daemon.js, the floor's) are led back to their src/ and node_modules files
// through the source map beside it (--cpu-prof records positions in the bundle).
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { SourceMap } from 'node:module'
import { dirname, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
  columnNumber: number
}

interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: number[]
}

export interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

export interface ProfileSummary {
  /** Sampled time counted (after skipMs), idle excluded, in ms. */
  busyMs: number
  skippedMs: number
  byModule: Array<{ module: string; selfMs: number; share: number }>
  byFunction: Array<{ fn: string; module: string; selfMs: number; share: number }>
  /**
   * Time (self + callees) under frames of each module (npm package or our src/ directory),
   * counted once per sample however often the module is on its stack.
   */
  inclusive: Array<{ module: string; totalMs: number; share: number }>
}

/** Which "module" a frame belongs to: an npm package, node's own code, our src/<dir>, or a V8 pseudo-frame. */
export function moduleOf(f: CallFrame): string {
  const url = f.url
  if (url === '') return f.functionName.startsWith('(') ? f.functionName : '(native)'
  const nm = url.lastIndexOf('/node_modules/')
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/')
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1] ?? ''}` : rest[0]!
  }
  if (url.startsWith('node:')) return 'node (core)'
  // tsc's output (dist/src/…) or, through a bundle's source map, the source itself (src/…).
  const src = url.lastIndexOf('/src/')
  if (src >= 0) {
    const parts = url.slice(src + '/src/'.length).split('/')
    return `ours: src/${parts.length > 1 ? `${parts[0]}/` : parts[0]!}`
  }
  return url.replace(/^file:\/\//, '')
}

/** Rewrites the frames of every script with a source map beside it (`<script>.map`) to their original file and line. */
export async function mapToSources(p: CpuProfile): Promise<CpuProfile> {
  const maps = new Map<string, { map: SourceMap; dir: string } | undefined>()
  for (const node of p.nodes) {
    const cf = node.callFrame
    if (!cf.url.startsWith('file://')) continue
    if (!maps.has(cf.url)) {
      const mapFile = `${fileURLToPath(cf.url)}.map`
      maps.set(
        cf.url,
        existsSync(mapFile)
          ? { map: new SourceMap(JSON.parse(await readFile(mapFile, 'utf8'))), dir: dirname(mapFile) }
          : undefined,
      )
    }
    const m = maps.get(cf.url)
    const entry = m?.map.findEntry(cf.lineNumber, cf.columnNumber)
    if (m === undefined || entry === undefined || !('originalSource' in entry)) continue
    node.callFrame = {
      ...cf,
      url: pathToFileURL(resolve(m.dir, entry.originalSource)).href,
      lineNumber: entry.originalLine,
      columnNumber: entry.originalColumn,
    }
  }
  return p
}

export function summarise(p: CpuProfile, skipMs = 0, top = 25): ProfileSummary {
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const self = new Map<number, number>()
  let t = 0
  let busy = 0
  for (let i = 0; i < p.samples.length; i++) {
    // timeDeltas[i] is the time since the previous sample; it is charged to this sample's frame.
    const d = (p.timeDeltas[i] ?? 0) / 1000
    t += d
    if (t < skipMs) continue
    const id = p.samples[i]!
    if (byId.get(id)?.callFrame.functionName === '(idle)') continue
    self.set(id, (self.get(id) ?? 0) + d)
    busy += d
  }
  const mod = new Map<string, number>()
  const fn = new Map<string, { module: string; ms: number }>()
  const inclusive = new Map<string, number>()
  for (const [id, ms] of self) {
    const cf = byId.get(id)!.callFrame
    const m = moduleOf(cf)
    mod.set(m, (mod.get(m) ?? 0) + ms)
    const file = cf.url.split('/').slice(-1)[0] ?? ''
    const key = `${cf.functionName || '(anonymous)'} ${file}:${cf.lineNumber + 1}`
    const e = fn.get(key) ?? { module: m, ms: 0 }
    e.ms += ms
    fn.set(key, e)
    // Charge this sample once to every package and src/ directory on its stack.
    const seen = new Set<string>()
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const m2 = moduleOf(byId.get(cur)!.callFrame)
      if (!m2.startsWith('(') && m2 !== 'node (core)' && !seen.has(m2)) {
        seen.add(m2)
        inclusive.set(m2, (inclusive.get(m2) ?? 0) + ms)
      }
    }
  }
  const share = (ms: number): number => (busy > 0 ? ms / busy : 0)
  return {
    busyMs: busy,
    skippedMs: Math.min(skipMs, t),
    byModule: [...mod.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([module, selfMs]) => ({ module, selfMs, share: share(selfMs) })),
    byFunction: [...fn.entries()]
      .sort((a, b) => b[1].ms - a[1].ms)
      .slice(0, top)
      .map(([f, e]) => ({ fn: f, module: e.module, selfMs: e.ms, share: share(e.ms) })),
    inclusive: [...inclusive.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([module, totalMs]) => ({ module, totalMs, share: share(totalMs) })),
  }
}

export function renderSummary(name: string, s: ProfileSummary): string {
  const pct = (x: number): string => `${(x * 100).toFixed(1)}%`
  const out = [
    `## ${name}`,
    '',
    `${s.busyMs.toFixed(0)} ms of sampled CPU (idle excluded), the first ${s.skippedMs.toFixed(0)} ms of the process skipped.`,
    '',
    '| module | self ms | share |',
    '| --- | --- | --- |',
    ...s.byModule.slice(0, 20).map((m) => `| ${m.module} | ${m.selfMs.toFixed(0)} | ${pct(m.share)} |`),
    '',
    '| function | module | self ms | share |',
    '| --- | --- | --- | --- |',
    ...s.byFunction.map((f) => `| \`${f.fn}\` | ${f.module} | ${f.selfMs.toFixed(0)} | ${pct(f.share)} |`),
    '',
    'Inclusive time (self + callees) under each package and src/ directory, once per sample:',
    '',
    '| module | total ms | share |',
    '| --- | --- | --- |',
    ...s.inclusive.slice(0, 25).map((m) => `| ${m.module} | ${m.totalMs.toFixed(0)} | ${pct(m.share)} |`),
    '',
  ]
  return out.join('\n')
}

export async function summariseFile(path: string, skipMs = 0): Promise<ProfileSummary> {
  return summarise(await mapToSources(JSON.parse(await readFile(path, 'utf8')) as CpuProfile), skipMs)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, skip] = process.argv.slice(2)
  if (file === undefined) {
    process.stderr.write('usage: node dist/bench/profile.js <file.cpuprofile> [skipMs]\n')
    process.exit(2)
  }
  summariseFile(file, Number(skip ?? 0)).then(
    (s) => process.stdout.write(renderSummary(file, s)),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
      process.exit(1)
    },
  )
}
