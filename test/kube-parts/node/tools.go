//go:build tools

// Package tools pins the real kubelet, kube-controller-manager and kube-scheduler in this
// module, so `go build k8s.io/kubernetes/cmd/<name>` builds them from the versions in
// go.mod / go.sum (scripts/setup-node.sh).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
