//go:build tools

// Package tools pins BuildKit's daemon and client in this module, so `go build
// github.com/moby/buildkit/cmd/<name>` builds them from the versions in go.mod / go.sum
// (scripts/setup-node.sh).
package tools

import (
	_ "github.com/moby/buildkit/cmd/buildctl"
	_ "github.com/moby/buildkit/cmd/buildkitd"
)
