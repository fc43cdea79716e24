#!/usr/bin/env bash
# `npm run demo`: installs what is missing, builds, and runs the local demo
# (dist/scripts/demo.js, from scripts/demo.ts). Arguments go to the demo:
#
#   bash scripts/demo.sh [--out DIR] [--show-values]
#
# Needs Node.js >= 20, python3 (for the OpenBao wheel) and Go (for the driver's client);
# scripts/setup.sh installs the rest into .cache/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf '[demo] %s\n' "$*" >&2; }

if ! command -v node >/dev/null 2>&1; then
  log "node not found on PATH (Node.js >= 20 is needed)"
  exit 1
fi
if (( $(node -p 'process.versions.node.split(".")[0]') < 20 )); then
  log "Node.js >= 20 is needed, found $(node --version)"
  exit 1
fi

# Dependencies: npm ci when node_modules is missing or older than package-lock.json.
# npm writes node_modules/.package-lock.json on every install; a stamp with the lock file's
# hash keeps a touched-but-unchanged package-lock.json from forcing a reinstall.
(
  cd "$ROOT"
  stamp="node_modules/.demo-lock-sha256"
  hidden="node_modules/.package-lock.json"
  want="$(sha256sum package-lock.json | cut -d' ' -f1)"
  if [[ ! -f "$hidden" ]]; then
    reason="node_modules is missing"
  elif [[ package-lock.json -nt "$hidden" && "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
    reason="node_modules is older than package-lock.json"
  else
    reason=""
  fi
  if [[ -n "$reason" ]]; then
    log "$reason: npm ci"
    npm ci --no-audit --no-fund
    printf '%s' "$want" >"$stamp"
  fi
)

SETUP_SKIP_POSTGRES=1 SETUP_SKIP_KUBERNETES=1 SETUP_SKIP_TINYPROXY=1 bash "$ROOT/scripts/setup.sh"

log "building (npm run build)"
(cd "$ROOT" && npm run --silent build)

exec node "$ROOT/dist/scripts/demo.js" "$@"
