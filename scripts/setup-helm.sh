#!/usr/bin/env bash
# Installs, for test/deploy/chart*.test.ts (all git-ignored):
#
#   .cache/bin/helm   the real Helm v3 binary: `helm lint` and `helm template` of daemonset/chart/
#   .cache/crds/      the Prometheus Operator's own CRDs for the kinds the chart can render
#                     (PodMonitor, ServiceMonitor, PrometheusRule): their openAPIV3Schema validates the
#                     rendered objects offline, and a real API server needs them installed before a
#                     server-side dry-run of those objects
#
# Helm is built from the Go module proxy with the machine's Go (helm.sh/helm/v3 is a Go module; no
# prebuilt download), with the link-time settings Helm's own Makefile uses, so that `helm version` names the release and `helm template` and
# `helm lint` assume the Kubernetes minor of the client-go Helm was built with (1.37 for v3.22.0)
# instead of the 1.20 compiled into the source.
#
# Idempotent: each step is skipped when its stamp (versions, link flags, Go version) and output match.
# Called by scripts/setup.sh; can also be run on its own. Go's module and build caches stay
# where Go keeps them, so other clones on the same machine share them.
set -euo pipefail

HELM_VERSION="v3.22.0"     # newest helm.sh/helm/v3 the proxy serves; its go.mod asks for Go 1.26.0
HELM_K8S_MAJOR="1"         # k8s.io/client-go v0.37.0 in Helm v3.22.0's go.mod -> Kubernetes 1.37
HELM_K8S_MINOR="37"
# The Go module github.com/prometheus-operator/prometheus-operator ships its CRDs in
# example/prometheus-operator-crd/; v0.85.0 is the newest version the module proxy serves.
PROM_OPERATOR_VERSION="v0.85.0"
PROM_OPERATOR_CRDS="podmonitors servicemonitors prometheusrules"

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

crds() {
  local start stamp want dir name
  start="$(now)"
  stamp="$ROOT/.cache/crds/.setup-stamp"
  want="github.com/prometheus-operator/prometheus-operator@$PROM_OPERATOR_VERSION $PROM_OPERATOR_CRDS"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    log "crds: Prometheus Operator $PROM_OPERATOR_VERSION CRDs already there ($(elapsed "$start"))"
    return
  fi
  dir="$(go mod download -json \
    "github.com/prometheus-operator/prometheus-operator@$PROM_OPERATOR_VERSION" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
  rm -rf "$ROOT/.cache/crds"
  mkdir -p "$ROOT/.cache/crds"
  for name in $PROM_OPERATOR_CRDS; do
    cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$name.yaml" "$ROOT/.cache/crds/"
  done
  chmod u+w "$ROOT"/.cache/crds/*.yaml
  printf '%s' "$want" >"$stamp"
  log "crds: Prometheus Operator $PROM_OPERATOR_VERSION CRDs in .cache/crds ($(elapsed "$start"))"
}
crds

start="$(now)"
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
