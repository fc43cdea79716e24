//go:build tools

// Package tools pins the real kube-apiserver and kubectl in this module, so
// `go build k8s.io/kubernetes/cmd/kube-apiserver` (and cmd/kubectl) build them from the
// versions in go.mod / go.sum (scripts/setup-kubernetes.sh).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
