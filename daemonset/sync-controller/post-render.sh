#!/bin/sh
# Helm post-renderer for the Secrets Store Sync Controller's chart with values.yaml: adds the
# HMAC key Secret's volume to the controller's Deployment (the chart has no value for it).
# Reads the rendered objects on stdin, writes them back on stdout, through kustomize
# (`kubectl kustomize` unless KUSTOMIZE names a kustomize binary).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/rendered.yaml"
cp "$here/kustomization.yaml" "$here/hmac-key-volume.yaml" "$work/"
if [ -n "${KUSTOMIZE:-}" ]; then
  "$KUSTOMIZE" build "$work"
else
  kubectl kustomize "$work"
fi
