// scripts/shared-dir.sh: where the setup and `npm run bench` look for the project's shared folder (the reference
// provider's source and build script), for a checkout beside it, a worktree and a clone of a local
// checkout such as CI's fresh clone in a mktemp -d folder. Real git repositories in a temp dir.
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../../src/package-info.js'
import { tempDirFor } from '../../support/tmp.js'

const SCRIPT = join(PACKAGE_ROOT, 'scripts', 'shared-dir.sh')

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, stdio: 'ignore' })
}

function sharedDir(root: string, env: NodeJS.ProcessEnv = {}): string {
  const clean = { ...process.env }
  delete clean['VCP_SHARED_DIR']
  return execFileSync('bash', [SCRIPT, root], { encoding: 'utf8', env: { ...clean, ...env } }).trim()
}

/** <dir>/main (a repository with one commit) and <dir>/shared/reference, as on a workplace machine. */
async function workplace(t: Parameters<typeof tempDirFor>[0]): Promise<{ main: string; shared: string }> {
  const dir = realpathSync(await tempDirFor(t, 'vcp-shared-dir-'))
  const main = join(dir, 'main')
  const shared = join(dir, 'shared')
  mkdirSync(join(shared, 'reference'), { recursive: true })
  mkdirSync(main)
  git(main, 'init', '-q')
  git(main, 'commit', '-q', '--allow-empty', '-m', 'first')
  return { main, shared }
}

t.test('a checkout beside the shared folder finds it', async (t) => {
  const { main, shared } = await workplace(t)
  t.equal(sharedDir(main), shared)
})

t.test('a clone of that checkout elsewhere (CI’s fresh clone) finds the one beside its origin', async (t) => {
  const { main, shared } = await workplace(t)
  const elsewhere = realpathSync(await tempDirFor(t, 'vcp-clone-'))
  const clone = join(elsewhere, 'repo')
  git(elsewhere, 'clone', '-q', main, clone)
  t.equal(sharedDir(clone), shared)
  const fileUrl = join(elsewhere, 'repo-url')
  git(elsewhere, 'clone', '-q', `file://${main}`, fileUrl)
  t.equal(sharedDir(fileUrl), shared, 'also when cloned from a file:// URL')
})

t.test('a worktree elsewhere finds the one beside its main checkout', async (t) => {
  const { main, shared } = await workplace(t)
  const elsewhere = realpathSync(await tempDirFor(t, 'vcp-worktree-'))
  const tree = join(elsewhere, 'tree')
  git(main, 'worktree', 'add', '-q', '--detach', tree)
  t.equal(sharedDir(tree), shared)
})

t.test('VCP_SHARED_DIR wins; with nothing found, ../shared is printed for run.sh to report', async (t) => {
  const { main } = await workplace(t)
  t.equal(sharedDir(main, { VCP_SHARED_DIR: '/somewhere/else' }), '/somewhere/else')
  const lonely = realpathSync(await tempDirFor(t, 'vcp-lonely-'))
  const repo = join(lonely, 'repo')
  mkdirSync(repo)
  git(repo, 'init', '-q')
  t.equal(sharedDir(repo), `${repo}/../shared`)
})
