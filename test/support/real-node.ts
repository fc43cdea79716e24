// A real node for test/e2e/real-node.test.ts: the kubelet v1.35.4 on containerd and runc (Debian's
// packages), the real Secrets Store CSI driver registered with it, kube-controller-manager and
// kube-scheduler beside the API server, and BuildKit to build the Dockerfile. scripts/setup-node.sh
// builds and assembles the parts once per machine (.cache/realnode links to them).
//
// What this machine kind needed (../shared/kubernetes/node-recipe.sh found it first):
// - No pod network: pods use the host network. containerd gets a loopback-only network config, so that
//   it reports the network ready and the node becomes Ready; no CNI plugin ever runs.
// - containerd runs with restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, and a sandbox's
//   oom_score_adj of -998 makes runc fail ("can't get final child's PID from pipe: EOF").
// - The kubelet serves no API (enableServer: false; it refuses a loopback node IP), so there is no
//   `kubectl logs`: container output is read from the kubelet's pod log files.
// - No registry: images are imported into containerd from tar files, pods use imagePullPolicy Never.
// - The kubelet keeps its pod cgroups under kubepods/ of each cgroup v1 hierarchy: one node at a time
//   per machine.
import { execFile, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { chmod, mkdir, readFile, readdir, rm, rmdir, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../src/package-info.js'
import { spawnLogged, stopChild, waitUntil, type KubeCluster } from './kube-cluster.js'
import { driverKubeconfig, metricSum, mountsUnder, scrapeMetrics } from './kube-node.js'
import { dockerStages, parseDockerfile, run, type RunResult } from './manifests.js'
import { freePort } from './ports.js'

export const REALNODE_DIR = join(PACKAGE_ROOT, '.cache', 'realnode')
const bin = (name: string): string => join(REALNODE_DIR, 'bin', name)
export const KUBELET_BIN = bin('kubelet')
export const CONTROLLER_MANAGER_BIN = bin('kube-controller-manager')
export const SCHEDULER_BIN = bin('kube-scheduler')
export const REGISTRAR_BIN = bin('registrar')
export const BUILDKITD_BIN = bin('buildkitd')
export const BUILDCTL_BIN = bin('buildctl')
export const PAUSE_IMAGE_TAR = join(REALNODE_DIR, 'images', 'pause.tar')
export const BUSYBOX_IMAGE_TAR = join(REALNODE_DIR, 'images', 'busybox.tar')
/** The image references inside those tars (scripts/setup-node.sh). */
export const PAUSE_IMAGE = 'localhost/vcp-realnode/pause:3.10.1'
export const BUSYBOX_IMAGE = 'localhost/vcp-realnode/busybox:1'
/** OCI layout of the stand-in for the Dockerfile's FROM image, and its manifest digest in `digest`. */
export const BASE_LAYOUT = join(REALNODE_DIR, 'base')
const DRIVER_BIN = join(PACKAGE_ROOT, '.cache', 'bin', 'secrets-store-csi-driver')
const CSI_DRIVER = 'secrets-store.csi.k8s.io'

/** What is missing for a real node, as a reason to give (undefined: all there). */
export function realNodeMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root: the kubelet, containerd and the CSI driver mount filesystems'
  const missing = [KUBELET_BIN, CONTROLLER_MANAGER_BIN, SCHEDULER_BIN, REGISTRAR_BIN, BUILDKITD_BIN, BUILDCTL_BIN]
    .concat(PAUSE_IMAGE_TAR, BUSYBOX_IMAGE_TAR, join(BASE_LAYOUT, 'digest'), DRIVER_BIN)
    .filter((p) => !existsSync(p))
  return missing.length > 0 ? `missing ${missing.join(', ')}: run scripts/setup.sh (setup-node.sh)` : undefined
}

function must(what: string, res: RunResult): string {
  if (res.code !== 0) throw new Error(`${what} failed (${res.code}): ${res.stderr || res.stdout}`)
  return res.stdout
}

function tail(path: string, chars = 3000): string {
  try {
    return readFileSync(path, 'utf8').slice(-chars)
  } catch {
    return ''
  }
}

// ---------------------------------------------------------------- control plane controllers

export interface Controllers {
  controllerManagerLog: string
  schedulerLog: string
  stopControllerManager(): Promise<void>
  stop(): Promise<void>
}

/**
 * kube-controller-manager (its default controllers: DaemonSet, garbage collector, service accounts,
 * the kube-root-ca.crt publisher, …) and kube-scheduler, both with the admin's kubeconfig.
 */
export async function startControllers(cluster: KubeCluster, dir: string): Promise<Controllers> {
  const kubeconfig = join(dir, 'admin.kubeconfig')
  await cluster.writeKubeconfig(kubeconfig)
  const common = [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
  ]
  const cmLog = join(dir, 'kube-controller-manager.log')
  const cm = spawnLogged(
    CONTROLLER_MANAGER_BIN,
    [
      ...common,
      `--secure-port=${await freePort()}`,
      `--cert-dir=${join(dir, 'cm-certs')}`,
      `--root-ca-file=${cluster.caPath}`,
      '--v=2',
    ],
    cmLog,
  )
  const schedLog = join(dir, 'kube-scheduler.log')
  const sched = spawnLogged(
    SCHEDULER_BIN,
    [...common, `--secure-port=${await freePort()}`, `--cert-dir=${join(dir, 'sched-certs')}`, '--v=2'],
    schedLog,
  )
  // Ready when the controllers act: the service-account controller makes `default` in every namespace.
  await waitUntil(
    `kube-controller-manager at work (log ${cmLog})`,
    async () => {
      if (cm.exitCode !== null) throw new Error(`kube-controller-manager exited: ${tail(cmLog)}`)
      if (sched.exitCode !== null) throw new Error(`kube-scheduler exited: ${tail(schedLog)}`)
      const r = await cluster.admin.call('GET', '/api/v1/namespaces/default/serviceaccounts/default')
      return r.status === 200
    },
    120_000,
    250,
  )
  return {
    controllerManagerLog: cmLog,
    schedulerLog: schedLog,
    stopControllerManager: () => stopChild(cm),
    async stop() {
      await stopChild(sched)
      await stopChild(cm)
    },
  }
}

// ---------------------------------------------------------------- the node

export interface RealNodeOptions {
  name: string
  /** The kubelet's syncFrequency, which is also how often it republishes (requiresRepublish). */
  syncFrequency?: string
  /** The driver's --rotation-poll-interval. */
  rotationPollInterval?: string
}

export interface RealNode {
  name: string
  dir: string
  kubeletRoot: string
  /** The driver's --provider-volume: the DaemonSet's providers hostPath points here. */
  providersDir: string
  podLogsDir: string
  containerdSocket: string
  kubeletLog: string
  driverLog: string
  registrarLog: string
  containerdLog: string
  /** `ctr` against this node's containerd, namespace k8s.io (the CRI's). */
  ctr(args: string[]): Promise<string>
  importImage(tarPath: string): Promise<void>
  /** containerd's containers (sandboxes included) of a pod. */
  podContainers(podUid: string): Promise<string[]>
  /** The host pid of a running container (from its containerd:// id). */
  containerPid(containerId: string): Promise<number>
  /** What a container wrote, from the kubelet's log file (CRI format prefix removed). */
  podLog(namespace: string, pod: string, container: string): Promise<string>
  driverMetrics(): Promise<Map<string, number>>
  /** Mount points under the kubelet's directory of this pod. */
  podMounts(podUid: string): string[]
  stop(): Promise<void>
}

function containerdConfig(dir: string, socket: string): string {
  const q = JSON.stringify
  return `version = 2
root = ${q(join(dir, 'containerd', 'root'))}
state = ${q(join(dir, 'containerd', 'state'))}
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = ${q(socket)}
[ttrpc]
  address = ${q(socket + '.ttrpc')}
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(PAUSE_IMAGE)}
  stream_server_address = "127.0.0.1"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = ${q(join(dir, 'containerd', 'runc'))}
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(join(dir, 'cni', 'bin'))}
    conf_dir = ${q(join(dir, 'cni', 'net.d'))}
`
}

/** Processes whose command line contains `needle` (e.g. this containerd's shims). */
function pidsWithArg(needle: string): number[] {
  const out: number[] = []
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').includes(needle)) out.push(Number(e))
    } catch {
      /* gone */
    }
  }
  return out
}

/** Empty cgroup directories below `dir`, deepest first (the kubelet's kubepods trees). */
async function removeCgroupTree(dir: string): Promise<void> {
  if (!existsSync(dir)) return
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) await removeCgroupTree(join(dir, e.name))
  }
  await rmdir(dir).catch(() => undefined)
}

/**
 * Starts containerd, the CSI driver with its registrar, and the kubelet of node `o.name` (one of
 * cluster.nodes), and waits until the node is Ready and its CSINode lists the driver. The driver's
 * CSIDriver object and RBAC must be in the cluster already.
 */
export async function startRealNode(cluster: KubeCluster, dir: string, o: RealNodeOptions): Promise<RealNode> {
  const kubeletRoot = join(dir, 'kubelet')
  const providersDir = join(dir, 'providers')
  const podLogsDir = join(dir, 'pod-logs')
  const socket = join(dir, 'containerd', 'containerd.sock')
  const csiSocket = join(kubeletRoot, 'plugins', 'csi-secrets-store', 'csi.sock')
  for (const d of [
    join(dir, 'containerd'),
    join(dir, 'cni', 'bin'),
    join(dir, 'cni', 'net.d'),
    podLogsDir,
    join(kubeletRoot, 'plugins', 'csi-secrets-store'),
    join(kubeletRoot, 'plugins_registry'),
    join(kubeletRoot, 'volume-plugins'),
  ]) {
    await mkdir(d, { recursive: true })
  }
  // As the first pod to mount it would leave it: root, 0755 (daemonset/ prepares it for its uid).
  await mkdir(providersDir)
  await chmod(providersDir, 0o755)
  const children: ChildProcess[] = []
  const logs = {
    containerd: join(dir, 'containerd.log'),
    driver: join(dir, 'driver.log'),
    registrar: join(dir, 'registrar.log'),
    kubelet: join(dir, 'kubelet.log'),
  }
  const ctr = async (args: string[]): Promise<string> =>
    must(`ctr ${args.join(' ')}`, await run('ctr', ['--address', socket, '--namespace', 'k8s.io', ...args]))

  let metricsPort = 0
  let stopped = false
  let kubelet: ChildProcess | undefined
  const stop = async (): Promise<void> => {
    if (stopped) return
    stopped = true
    if (kubelet !== undefined && kubelet.exitCode === null) {
      // The kubelet stops the pods' containers and unmounts their volumes (stop the controllers first,
      // or a DaemonSet puts its pod back).
      const pods = await cluster.admin.call('GET', '/api/v1/pods').catch(() => undefined)
      for (const p of pods?.body?.items ?? []) {
        const path = `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}?gracePeriodSeconds=2`
        await cluster.admin.call('DELETE', path).catch(() => undefined)
      }
      await waitUntil(
        'the kubelet to stop every pod',
        async () => {
          const left = await cluster.admin.call('GET', '/api/v1/pods')
          return left.body?.items?.length === 0 && (await ctr(['containers', 'list', '--quiet'])).trim() === ''
        },
        120_000,
        500,
      ).catch(() => undefined)
    }
    // Stopped in reverse; containerd's shims and the containers they hold outlive containerd.
    for (const c of [...children].reverse()) await stopChild(c, 15_000)
    for (const pid of pidsWithArg(socket)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        /* gone */
      }
    }
    await waitUntil('the shims gone', () => pidsWithArg(socket).length === 0, 10_000, 100).catch(() => undefined)
    for (let i = 0; i < 5 && mountsUnder(dir).length > 0; i++) {
      // The kubelet bind-mounts its root onto itself; containerd leaves rootfs and shm mounts.
      for (const m of mountsUnder(dir)) {
        if ((await run('umount', [m])).code !== 0) await run('umount', ['-l', m])
      }
    }
    for (const h of readdirSync('/sys/fs/cgroup')) await removeCgroupTree(join('/sys/fs/cgroup', h, 'kubepods'))
    // The kubelet's links in /var/log/containers to this node's log files.
    for (const l of existsSync('/var/log/containers') ? await readdir('/var/log/containers') : []) {
      const p = join('/var/log/containers', l)
      try {
        if (readlinkSync(p).startsWith(podLogsDir + '/')) await unlink(p)
      } catch {
        /* not a link */
      }
    }
    for (const d of ['/run/containerd/s', '/run/containerd/fifo', '/run/containerd'])
      await rmdir(d).catch(() => undefined)
  }

  try {
    await writeFile(join(dir, 'containerd.toml'), containerdConfig(dir, socket))
    // A network config with only loopback: containerd reports the network ready; pods use the host's.
    await writeFile(
      join(dir, 'cni', 'net.d', '10-loopback.conflist'),
      JSON.stringify({ cniVersion: '0.4.0', name: 'vcp-loopback', plugins: [{ type: 'loopback' }] }),
    )
    const containerd = spawnLogged('/usr/bin/containerd', ['--config', join(dir, 'containerd.toml')], logs.containerd)
    children.push(containerd)
    await waitUntil(`containerd serving (log ${logs.containerd})`, async () => {
      if (containerd.exitCode !== null) throw new Error(`containerd exited: ${tail(logs.containerd)}`)
      return (await run('ctr', ['--address', socket, 'version'])).code === 0
    })
    for (const tar of [PAUSE_IMAGE_TAR, BUSYBOX_IMAGE_TAR]) await ctr(['images', 'import', tar])

    const driverKc = join(dir, 'driver.kubeconfig')
    await driverKubeconfig(cluster, driverKc)
    metricsPort = await freePort()
    const driver = spawnLogged(
      DRIVER_BIN,
      [
        `--endpoint=unix://${csiSocket}`,
        `--nodeid=${o.name}`,
        `--provider-volume=${providersDir}`,
        `--additional-provider-volume-paths=${providersDir}`,
        `--metrics-addr=127.0.0.1:${metricsPort}`,
        '--enable-secret-rotation=true',
        `--rotation-poll-interval=${o.rotationPollInterval ?? '5s'}`,
        '-v=2',
      ],
      logs.driver,
      { PATH: process.env.PATH ?? '/usr/bin:/bin', KUBECONFIG: driverKc },
    )
    children.push(driver)
    await waitUntil(`the driver's CSI socket (log ${logs.driver})`, () => {
      if (driver.exitCode !== null) throw new Error(`driver exited: ${tail(logs.driver)}`)
      return existsSync(csiSocket)
    })
    const registrar = spawnLogged(
      REGISTRAR_BIN,
      [`--csi-address=${csiSocket}`, `--registration-dir=${join(kubeletRoot, 'plugins_registry')}`],
      logs.registrar,
    )
    children.push(registrar)

    const healthzPort = await freePort()
    const kubeconfig = join(dir, 'kubelet.kubeconfig')
    await cluster.writeKubeconfig(kubeconfig, (await readFile(cluster.nodeTokenPath(o.name), 'utf8')).trim())
    const config = {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      containerRuntimeEndpoint: `unix://${socket}`,
      enableServer: false,
      healthzBindAddress: '127.0.0.1',
      healthzPort,
      readOnlyPort: 0,
      authentication: { anonymous: { enabled: false }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      podLogsDir,
      volumePluginDir: join(kubeletRoot, 'volume-plugins'),
      failSwapOn: false,
      syncFrequency: o.syncFrequency ?? '10s',
      maxPods: 40,
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
      resolvConf: '/etc/resolv.conf',
    }
    await writeFile(join(dir, 'kubelet.json'), JSON.stringify(config, null, 2))
    kubelet = spawnLogged(
      KUBELET_BIN,
      [
        `--config=${join(dir, 'kubelet.json')}`,
        `--kubeconfig=${kubeconfig}`,
        `--root-dir=${kubeletRoot}`,
        `--hostname-override=${o.name}`,
        '-v=2',
      ],
      logs.kubelet,
    )
    children.push(kubelet)
    await waitUntil(
      `node ${o.name} Ready (log ${logs.kubelet})`,
      async () => {
        if (kubelet?.exitCode !== null) throw new Error(`kubelet exited: ${tail(logs.kubelet)}`)
        const r = await cluster.admin.call('GET', `/api/v1/nodes/${o.name}`)
        return (
          r.status === 200 &&
          (r.body.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True')
        )
      },
      120_000,
      250,
    )
    await waitUntil(
      `CSINode ${o.name} listing ${CSI_DRIVER} (registrar log ${logs.registrar})`,
      async () => {
        const r = await cluster.admin.call('GET', `/apis/storage.k8s.io/v1/csinodes/${o.name}`)
        return r.status === 200 && (r.body.spec?.drivers ?? []).some((d: any) => d.name === CSI_DRIVER)
      },
      60_000,
      250,
    )
  } catch (err) {
    await stop()
    throw err
  }

  const node: RealNode = {
    name: o.name,
    dir,
    kubeletRoot,
    providersDir,
    podLogsDir,
    containerdSocket: socket,
    kubeletLog: logs.kubelet,
    driverLog: logs.driver,
    registrarLog: logs.registrar,
    containerdLog: logs.containerd,
    ctr,
    async importImage(tarPath) {
      await ctr(['images', 'import', tarPath])
    },
    async podContainers(podUid) {
      const out = await ctr(['containers', 'list', '--quiet', `labels."io.kubernetes.pod.uid"==${podUid}`])
      return out.split('\n').filter((l) => l.trim() !== '')
    },
    async containerPid(containerId) {
      const id = containerId.replace(/^containerd:\/\//, '')
      const line = (await ctr(['tasks', 'list'])).split('\n').find((l) => l.startsWith(id + ' '))
      const pid = Number(line?.trim().split(/\s+/)[1])
      if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no running task for container ${id}`)
      return pid
    },
    async podLog(namespace, pod, container) {
      const dirs = (await readdir(podLogsDir)).filter((d) => d.startsWith(`${namespace}_${pod}_`))
      let text = ''
      for (const d of dirs) {
        const cdir = join(podLogsDir, d, container)
        if (!existsSync(cdir)) continue
        for (const f of (await readdir(cdir)).sort()) text += await readFile(join(cdir, f), 'utf8')
      }
      // CRI log lines: <time> <stream> <P|F> <text>
      return text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => l.split(' ').slice(3).join(' '))
        .join('\n')
    },
    driverMetrics: () => scrapeMetrics(`http://127.0.0.1:${metricsPort}/metrics`),
    podMounts: (podUid) => mountsUnder(join(kubeletRoot, 'pods', podUid)),
    stop,
  }
  return node
}

export { metricSum }

// ---------------------------------------------------------------- the image

export interface ImageBuild {
  ref: string
  tar: string
  /** BuildKit's step lines (`#N [stage n/m] INSTRUCTION`), once each: what the Dockerfile made it do. */
  steps: string[]
}

/**
 * Builds the Dockerfile as it is with BuildKit (its own dockerfile frontend, runc worker, host
 * network for the stages' `npm ci`), once per entry of `builds`, each with build-arg REVISION set
 * to that entry's revision. Every image the Dockerfile names in a FROM (other than its own stages)
 * is replaced by name with the locally assembled base (scripts/setup-node.sh): nothing else of the
 * Dockerfile is touched. buildkitd runs in a mount namespace of its own, so its mounts go with it.
 */
export async function buildImages(
  dir: string,
  builds: Array<{ ref: string; revision: string }>,
): Promise<{ images: ImageBuild[]; log: string }> {
  const stages = dockerStages((await parseDockerfile(join(PACKAGE_ROOT, 'Dockerfile'))).instructions)
  const bases = [...new Set(stages.map((s) => s.image))].filter((img) => !stages.some((s) => s.name === img))
  const digest = (await readFile(join(BASE_LAYOUT, 'digest'), 'utf8')).trim()
  const root = join(dir, 'buildkit')
  await mkdir(root, { recursive: true })
  const sock = join(root, 'buildkitd.sock')
  const log = join(dir, 'buildkit.log')
  // At the lowest CPU priority: the test command runs other files beside this one, some of them timing-sensitive.
  const buildkitd = spawnLogged(
    '/usr/bin/nice',
    [
      '-n',
      '19',
      '/usr/bin/unshare',
      '--mount',
      '--propagation',
      'private',
      BUILDKITD_BIN,
      `--root=${join(root, 'state')}`,
      `--addr=unix://${sock}`,
      '--oci-worker=true',
      '--containerd-worker=false',
      '--oci-worker-binary=/usr/sbin/runc',
      '--oci-worker-net=host',
      '--oci-worker-snapshotter=overlayfs',
    ],
    log,
  )
  try {
    await waitUntil(`buildkitd serving (log ${log})`, async () => {
      if (buildkitd.exitCode !== null) throw new Error(`buildkitd exited: ${tail(log)}`)
      return (await run(BUILDCTL_BIN, [`--addr=unix://${sock}`, 'debug', 'workers'])).code === 0
    })
    const images: ImageBuild[] = []
    for (const b of builds) {
      const tar = join(dir, `image-${images.length + 1}.tar`)
      const args = [
        `--addr=unix://${sock}`,
        'build',
        '--frontend=dockerfile.v0',
        `--local=context=${PACKAGE_ROOT}`,
        `--local=dockerfile=${PACKAGE_ROOT}`,
        `--oci-layout=nodebase=${BASE_LAYOUT}`,
        ...bases.map((img) => `--opt=context:${img}=oci-layout://nodebase@${digest}`),
        `--opt=build-arg:REVISION=${b.revision}`,
        `--output=type=docker,name=${b.ref},dest=${tar}`,
        '--progress=plain',
      ]
      const res = await runLong(BUILDCTL_BIN, args, 15 * 60_000)
      await writeFile(log.replace(/\.log$/, `-${images.length + 1}.log`), res.stdout + res.stderr)
      if (res.code !== 0) throw new Error(`buildctl build failed: ${(res.stdout + res.stderr).slice(-4000)}`)
      const steps = [...new Set((res.stdout + res.stderr).split('\n').filter((l) => /^#\d+ \[/.test(l)))]
      images.push({ ref: b.ref, tar, steps })
    }
    return { images, log }
  } finally {
    await stopChild(buildkitd, 20_000)
    await rm(join(root, 'state'), { recursive: true, force: true }).catch(() => undefined)
    // The cgroups buildkitd made for the build steps (empty once it has gone).
    for (const h of readdirSync('/sys/fs/cgroup')) await removeCgroupTree(join('/sys/fs/cgroup', h, 'buildkit'))
  }
}

/** run(), with a longer time limit than its default two minutes. */
function runLong(cmd: string, args: string[], timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, { maxBuffer: 64 * 1024 * 1024, encoding: 'utf8', timeout: timeoutMs }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    )
  })
}
