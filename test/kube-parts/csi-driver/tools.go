//go:build tools

// Package tools pins the real Secrets Store CSI driver binary in this module, so
// `go build sigs.k8s.io/secrets-store-csi-driver/cmd/secrets-store-csi-driver` builds
// it from the versions in go.mod / go.sum (scripts/setup-kubernetes.sh).
package tools

import _ "sigs.k8s.io/secrets-store-csi-driver/cmd/secrets-store-csi-driver"
