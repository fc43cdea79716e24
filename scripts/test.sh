#!/usr/bin/env bash
# The whole check, as CI runs it: install, build, format, lint, then every
# test (unit and integration against a real OpenBao, through the driver's own
# client). Works on a fresh clone: everything it needs goes into .cache/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n== %s\n' "$*" >&2; }
started=$(date +%s)

# node_modules/.package-lock.json is npm's record of what is installed.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  step "npm ci"
  npm ci --no-audit --no-fund
fi

step "real parts (OpenBao, driver client, PostgreSQL, Kubernetes: etcd, kube-apiserver, CSI driver, a real node)"
bash scripts/setup.sh

step "build (tsc, strict; the daemon's bundle)"
npm run --silent build

step "format (prettier --check)"
npx prettier --check . >/dev/null || { npx prettier --list-different .; echo "run: npx prettier --write ." >&2; exit 1; }

step "lint (eslint)"
npx eslint .

# The adversarial suite (test/adversarial) compares a victim pod's Mount latency with and without an
# attack on the same daemon: it runs after the others, alone, so that the other suites' load on this
# machine is not taken for the attack's. Arguments naming test files run just those, in one pass.
positional=0
for arg in "$@"; do [[ "$arg" == -* ]] || positional=1; done
rc=0
if ((positional)); then
  step "tests (tap)"
  npx tap "$@" || rc=$?
else
  step "tests (tap): unit, integration, end-to-end, deploy, fuzz, soak"
  # Three files at a time on two cores: most of these wait on OpenBao, the API server or a fault
  # window rather than compute, and none of them measures time against the load of another.
  npx tap --jobs=3 --exclude='test/adversarial/**' "$@" || rc=$?
  step "tests (tap): adversarial, alone"
  npx tap "$@" test/adversarial || rc=$?
fi

printf '\n== test command finished in %ss\n' "$(( $(date +%s) - started ))" >&2
exit "$rc"
