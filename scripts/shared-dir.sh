#!/usr/bin/env bash
# Prints the project's shared folder (the reference provider's source and build script in its
# reference/, the Sync Controller's release source in sync-controller/; scripts/setup-kubernetes.sh
# and bench/run.sh use it) for the checkout at $1 (default: this script's repository):
#   VCP_SHARED_DIR when set; else ../shared beside the checkout; else, in a git worktree elsewhere,
#   the one beside the main checkout; else, in a clone of a local checkout (CI clones /work/main into
#   a mktemp -d folder), the one beside the checkout it was cloned from; else ../shared as it is
#   (the caller then says it is missing).
set -euo pipefail
root="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)"
if [[ -n "${VCP_SHARED_DIR:-}" ]]; then
  printf '%s\n' "$VCP_SHARED_DIR"
  exit 0
fi
beside() { [[ -d "$1/../shared/reference" ]] && (cd "$1/../shared" && pwd); }
beside "$root" && exit 0
# A worktree's common dir is <main>/.git.
common="$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)"
[[ -n "$common" ]] && beside "$common/.." && exit 0
origin="$(git -C "$root" remote get-url origin 2>/dev/null || true)"
origin="${origin#file://}"
[[ "$origin" == /* ]] && beside "$origin" && exit 0
printf '%s\n' "$root/../shared"
