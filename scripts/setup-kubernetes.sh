#!/usr/bin/env bash
# Builds the real Kubernetes parts the end-to-end tests (test/e2e/) run, from the Go module
# proxy, into .cache/ (git-ignored):
#
#   .cache/bin/kube-apiserver           k8s.io/kubernetes cmd/kube-apiserver   (test/kube-parts/apiserver)
#   .cache/bin/kubectl                  k8s.io/kubernetes cmd/kubectl          (same module)
#   .cache/bin/etcd                     go.etcd.io/etcd/server/v3 etcdmain     (test/kube-parts/etcd)
#   .cache/bin/secrets-store-csi-driver sigs.k8s.io/secrets-store-csi-driver   (test/kube-parts/csi-driver)
#   .cache/kube-deploy/                 that driver module's deploy/ files: CRDs, CSIDriver, RBAC
#   .cache/bin/kubelet-csi              test/kubelet: the kubelet's side of a CSI inline volume
#   .cache/bin/secrets-store-sync-controller
#                                       the Secrets Store Sync Controller v0.0.4, built by
#                                       ../shared/sync-controller/build.sh from its release source
#   .cache/sync-controller/chart/       that release's Helm chart (CRDs, RBAC, admission policies)
#
# Each module's go.mod and go.sum are committed, so builds are -mod=readonly and pinned to
# the checksums there. Versions: K8S_VERSION, ETCD_VERSION and DRIVER_VERSION below; to move
# one, change it here and run `bash scripts/setup-kubernetes.sh regenerate` (rewrites the
# go.mod files from these pins, then `go mod tidy`), and commit the result.
#
# Idempotent: each binary has a stamp (hash of its module's files, the ldflags and
# `go version`) and is rebuilt only when that changes. Go's module and build caches stay
# where Go keeps them (GOMODCACHE / GOCACHE), so other clones on the machine share them.
# Cold, on 2 cores: kube-apiserver 5-10 minutes (1.8 GB peak), etcd 1-2.5, the driver 1-2.
set -euo pipefail

K8S_VERSION="1.35.4"      # k8s.io/kubernetes; its staging modules are v0.35.4
ETCD_VERSION="v3.6.16"    # go.etcd.io/etcd/server/v3
DRIVER_VERSION="v1.6.0"   # sigs.k8s.io/secrets-store-csi-driver (the version the driver client uses)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CACHE="$ROOT/.cache"
BIN="$CACHE/bin"
PARTS="$ROOT/test/kube-parts"
mkdir -p "$BIN"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
log() { printf '[setup] %s\n' "$*" >&2; }

K8S_MINOR="${K8S_VERSION#1.}"
K8S_MINOR="${K8S_MINOR%%.*}"
K8S_LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$K8S_MINOR -X k8s.io/component-base/version.gitTreeState=clean"
DRIVER_LDFLAGS="-s -w -X sigs.k8s.io/secrets-store-csi-driver/pkg/version.BuildVersion=$DRIVER_VERSION"

if ! command -v go >/dev/null 2>&1; then
  log "kubernetes: 'go' not found on PATH"
  exit 1
fi

# Hash of a module's inputs (and of the shim it replaces in), plus extra text.
module_hash() {
  local dir="$1"
  shift
  ( (cd "$dir" && find . -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum)
    printf '%s\n' "$@"
    go version) | sha256sum | cut -d' ' -f1
}

# build NAME MODULE_DIR PACKAGE LDFLAGS [EXTRA_HASH_DIR]
build() {
  local name="$1" dir="$2" pkg="$3" ldflags="$4" extra="${5:-}" start stamp want out
  start="$(now)"
  out="$BIN/$name"
  stamp="$CACHE/$name.stamp"
  want="$(module_hash "$dir" "$pkg" "$ldflags" "$([[ -n "$extra" ]] && module_hash "$extra")")"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$out" ]]; then
    log "$name: up to date ($(elapsed "$start"))"
    return
  fi
  log "$name: building $pkg"
  CGO_ENABLED=0 go -C "$dir" build -mod=readonly -buildvcs=false -trimpath -ldflags="$ldflags" -o "$out.tmp" "$pkg"
  mv -f "$out.tmp" "$out"
  printf '%s' "$want" >"$stamp"
  log "$name: built .cache/bin/$name ($(elapsed "$start"))"
}

# The Secrets Store Sync Controller (test/e2e/sync-controller.test.ts): the module proxy does not
# serve it, so the project's shared folder (scripts/shared-dir.sh finds it, also from a fresh clone
# elsewhere) keeps its release source and a build script. Stamp:
# the tarball, the script and `go version`; its chart is copied out of the same tarball.
SYNC_CONTROLLER_DIR="$(bash "$ROOT/scripts/shared-dir.sh" "$ROOT")/sync-controller"
SYNC_CONTROLLER_TARBALL="secrets-store-sync-controller-0.0.4.tar.xz"
build_sync_controller() {
  local start stamp want out chart work
  start="$(now)"
  out="$BIN/secrets-store-sync-controller"
  chart="$CACHE/sync-controller/chart"
  stamp="$CACHE/secrets-store-sync-controller.stamp"
  if [[ ! -f "$SYNC_CONTROLLER_DIR/$SYNC_CONTROLLER_TARBALL" ]]; then
    log "sync-controller: $SYNC_CONTROLLER_DIR/$SYNC_CONTROLLER_TARBALL not found (the project's shared folder)"
    exit 1
  fi
  want="$( (sha256sum "$SYNC_CONTROLLER_DIR/$SYNC_CONTROLLER_TARBALL" "$SYNC_CONTROLLER_DIR/build.sh" | cut -d' ' -f1
    go version) | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$out" && -f "$chart/Chart.yaml" ]]; then
    log "sync-controller: up to date ($(elapsed "$start"))"
    return
  fi
  log "sync-controller: building v0.0.4 from its release source (~1 min warm, 4 cold)"
  bash "$SYNC_CONTROLLER_DIR/build.sh" "$out.tmp" >/dev/null
  mv -f "$out.tmp" "$out"
  work="$(mktemp -d)"
  tar -xJf "$SYNC_CONTROLLER_DIR/$SYNC_CONTROLLER_TARBALL" -C "$work"
  rm -rf "$chart"
  mkdir -p "$(dirname "$chart")"
  mv "$work"/secrets-store-sync-controller-0.0.4/charts/secrets-store-sync-controller "$chart"
  rm -rf "$work"
  printf '%s' "$want" >"$stamp"
  log "sync-controller: built .cache/bin/secrets-store-sync-controller, chart in .cache/sync-controller/chart ($(elapsed "$start"))"
}

# The driver's CRDs, CSIDriver object and RBAC, exactly as its module ships them.
copy_driver_deploy() {
  local start src dest
  start="$(now)"
  src="$(go -C "$PARTS/csi-driver" list -mod=readonly -m -f '{{.Dir}}' sigs.k8s.io/secrets-store-csi-driver)/deploy"
  dest="$CACHE/kube-deploy"
  rm -rf "$dest.tmp"
  mkdir -p "$dest.tmp"
  cp "$src"/secrets-store.csi.x-k8s.io_secretproviderclasses.yaml \
    "$src"/secrets-store.csi.x-k8s.io_secretproviderclasspodstatuses.yaml \
    "$src"/csidriver.yaml "$src"/rbac-secretproviderclass.yaml "$src"/rbac-secretprovidersyncing.yaml "$dest.tmp/"
  chmod 0644 "$dest.tmp"/*.yaml
  printf '%s\n' "sigs.k8s.io/secrets-store-csi-driver@$DRIVER_VERSION deploy/" >"$dest.tmp/SOURCE"
  rm -rf "$dest"
  mv "$dest.tmp" "$dest"
  log "kube-deploy: the driver's deploy/ files in .cache/kube-deploy ($(elapsed "$start"))"
}

check_pins() {
  grep -q "^require k8s.io/kubernetes v$K8S_VERSION\$" "$PARTS/apiserver/go.mod" \
    && grep -q "^require go.etcd.io/etcd/server/v3 $ETCD_VERSION\$" "$PARTS/etcd/go.mod" \
    && grep -q "^require sigs.k8s.io/secrets-store-csi-driver $DRIVER_VERSION\$" "$PARTS/csi-driver/go.mod" || {
    log "kubernetes: test/kube-parts/*/go.mod do not match the pins in this script; run: bash scripts/setup-kubernetes.sh regenerate"
    exit 1
  }
}

regenerate() {
  local kmod
  # kube-apiserver: k8s.io/kubernetes builds only inside its own repository, where every
  # k8s.io staging module is replaced by ./staging/src/...; outside it, by the release of
  # that module with the same minor (v0.<minor>.<patch>). Same go and godebug lines.
  kmod="$(go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@v$K8S_VERSION")"
  # apiserver: kube-apiserver and kubectl; node: kubelet, kube-controller-manager, kube-scheduler
  # (scripts/setup-node.sh), from the same release.
  for part in apiserver node; do
    {
      printf '// Derived from the go.mod of k8s.io/kubernetes v%s by scripts/setup-kubernetes.sh regenerate:\n' "$K8S_VERSION"
      printf '// that module builds elsewhere only with every staging replace pointed at its v0.%s release.\n' "${K8S_VERSION#1.}"
      printf 'module example.local/kube-parts/%s\n\n' "$part"
      grep -E '^(go|godebug) ' "$kmod" | sed 's/$/\n/'
      printf 'require k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
      sed -n '/^replace (/,/^)/p' "$kmod" | awk -v v="v0.${K8S_VERSION#1.}" '/=> \.\/staging/ { printf "\t%s => %s %s\n", $1, $1, v }'
      printf ')\n'
    } >"$PARTS/$part/go.mod"
    rm -f "$PARTS/$part/go.sum"
    go -C "$PARTS/$part" mod tidy
  done
  sed -i "s#^require k8s.io/kubelet .*#require k8s.io/kubelet v0.${K8S_VERSION#1.}#" "$PARTS/registrar/go.mod"
  go -C "$PARTS/registrar" mod tidy
  sed -i "s#^require go.etcd.io/etcd/server/v3 .*#require go.etcd.io/etcd/server/v3 $ETCD_VERSION#" "$PARTS/etcd/go.mod"
  go -C "$PARTS/etcd" mod tidy
  sed -i "s#^require sigs.k8s.io/secrets-store-csi-driver .*#require sigs.k8s.io/secrets-store-csi-driver $DRIVER_VERSION#" "$PARTS/csi-driver/go.mod"
  go -C "$PARTS/csi-driver" mod tidy
  go -C "$ROOT/test/kubelet" mod tidy
  log "kubernetes: go.mod/go.sum regenerated under test/kube-parts and test/kubelet; commit them (and K8S_VERSION in setup-node.sh)"
}

main() {
  local start
  start="$(now)"
  check_pins
  build etcd "$PARTS/etcd" . "-s -w"
  build kube-apiserver "$PARTS/apiserver" k8s.io/kubernetes/cmd/kube-apiserver "$K8S_LDFLAGS"
  build kubectl "$PARTS/apiserver" k8s.io/kubernetes/cmd/kubectl "$K8S_LDFLAGS"
  build secrets-store-csi-driver "$PARTS/csi-driver" sigs.k8s.io/secrets-store-csi-driver/cmd/secrets-store-csi-driver \
    "$DRIVER_LDFLAGS" "$ROOT/test/driver-client/mlog-shim"
  build kubelet-csi "$ROOT/test/kubelet" . "-s -w"
  copy_driver_deploy
  build_sync_controller
  log "kubernetes: done in $(elapsed "$start")"
}

case "${1:-build}" in
  build) main ;;
  regenerate) regenerate ;;
  sync-controller) build_sync_controller ;;
  *)
    echo "usage: $0 [build|regenerate|sync-controller]" >&2
    exit 2
    ;;
esac
