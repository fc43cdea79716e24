#!/usr/bin/env bash
# `npm run bench`: installs what is missing (scripts/setup.sh: OpenBao, the driver's client,
# PostgreSQL), builds (npm run build), installs the reference provider from the Go module
# proxy into .cache/bin, then runs node dist/bench/main.js with the given options.
#
#   bash bench/run.sh [--scenario storm,churn,latency,footprint] [--pods N] [--quick] [--no-reference] …
#
# The reference: github.com/hashicorp/vault-csi-provider@v1.4.0 (the last MPL-2.0 release), or
# whatever BENCH_REFERENCE_MODULE names (e.g. github.com/openbao/openbao-csi-provider@<version>).
# When it cannot be installed the benchmark still runs ours and says why in results.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[bench] %s\n' "$*" >&2; }

if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "npm ci"
  npm ci --no-audit --no-fund
fi

bash scripts/setup.sh

log "building (npm run build)"
npm run --silent build

# ------------------------------------------------------------- reference provider
REF_MODULE="${BENCH_REFERENCE_MODULE:-github.com/hashicorp/vault-csi-provider@v1.4.0}"
mkdir -p .cache/bench .cache/bin
status=.cache/bench/reference-status.json
stamp=.cache/bench/reference.stamp
want_ref=1
for a in "$@"; do [[ "$a" == "--no-reference" ]] && want_ref=0; done
json_string() { python3 -c 'import json, sys; print(json.dumps(sys.stdin.read().strip()[-1500:]))'; }
if [[ "$want_ref" == "1" ]]; then
  if [[ -x .cache/bin/vault-csi-provider && -f "$stamp" && "$(cat "$stamp")" == "$REF_MODULE" ]]; then
    log "reference: $REF_MODULE already installed"
    printf '{"module": "%s", "ok": true}\n' "$REF_MODULE" >"$status"
  else
    log "reference: go install $REF_MODULE"
    rm -f "$stamp"
    if out="$(GOBIN="$ROOT/.cache/bench/gobin" CGO_ENABLED=0 go install "$REF_MODULE" 2>&1)"; then
      # Both candidates build a binary named after their module's last element.
      bin="$(find "$ROOT/.cache/bench/gobin" -maxdepth 1 -type f -name '*csi-provider' | head -n1)"
      if [[ -n "$bin" ]]; then
        mv -f "$bin" .cache/bin/vault-csi-provider
        printf '%s' "$REF_MODULE" >"$stamp"
        printf '{"module": "%s", "ok": true}\n' "$REF_MODULE" >"$status"
        log "reference: installed .cache/bin/vault-csi-provider"
      else
        printf '{"module": "%s", "ok": false, "error": "go install produced no *csi-provider binary"}\n' "$REF_MODULE" >"$status"
      fi
    else
      log "reference: go install failed (the benchmark runs without it):"
      printf '%s\n' "$out" | sed 's/^/  /' >&2
      printf '{"module": "%s", "ok": false, "error": %s}\n' "$REF_MODULE" "$(printf '%s' "$out" | json_string)" >"$status"
    fi
  fi
fi

exec node dist/bench/main.js "$@"
