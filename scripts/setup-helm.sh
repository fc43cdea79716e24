#!/usr/bin/env bash
# Installs the real Helm v3 binary into .cache/bin/helm (git-ignored), for test/deploy/chart*.test.ts:
# `helm lint` and `helm template` of daemonset/chart/. Built from the Go module proxy with the
# machine's Go (helm.sh/helm/v3 is a Go module; no prebuilt download), with the link-time settings
# Helm's own Makefile uses, so that `helm version` names the release and `helm template` and
# `helm lint` assume the Kubernetes minor of the client-go Helm was built with (1.37 for v3.22.0)
# instead of the 1.20 compiled into the source.
#
# Idempotent: skipped when the stamp (version, link flags, Go version) and the binary match.
# Called by scripts/setup.sh; can also be run on its own. Go's module and build caches stay
# where Go keeps them, so other clones on the same machine share them.
set -euo pipefail

HELM_VERSION="v3.22.0"     # newest helm.sh/helm/v3 the proxy serves; its go.mod asks for Go 1.26.0
HELM_K8S_MAJOR="1"         # k8s.io/client-go v0.37.0 in Helm v3.22.0's go.mod -> Kubernetes 1.37
HELM_K8S_MINOR="37"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.cache/bin"
STAMP="$ROOT/.cache/helm.stamp"
mkdir -p "$BIN"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
log() { printf '[setup] %s\n' "$*" >&2; }

start="$(now)"
if ! command -v go >/dev/null 2>&1; then
  log "helm: 'go' not found on PATH"
  exit 1
fi

ldflags="-s -w"
ldflags+=" -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=$HELM_K8S_MAJOR -X $pkg.k8sVersionMinor=$HELM_K8S_MINOR"
done
want="helm.sh/helm/v3/cmd/helm@$HELM_VERSION $ldflags $(go version)"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" && -x "$BIN/helm" ]]; then
  log "helm: $HELM_VERSION already installed ($(elapsed "$start"))"
  exit 0
fi

log "helm: building $HELM_VERSION into .cache/bin (first build compiles client-go; ~2-4 min)"
GOBIN="$BIN" CGO_ENABLED=0 go install -trimpath -ldflags="$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
"$BIN/helm" version --short | grep -q "^$HELM_VERSION" || {
  log "helm: unexpected version: $("$BIN/helm" version --short)"
  exit 1
}
printf '%s' "$want" >"$STAMP"
log "helm: $("$BIN/helm" version --short) ($(elapsed "$start"))"
