// Package mlog is a minimal local stand-in for monis.app/mlog, which the Go
// module proxy reachable from the test machines refuses to serve (HTTP 403).
//
// The driver's pkg/secrets-store imports it only for mlog.Fatal in server.go
// (the driver's own CSI gRPC server), a code path driver-client never runs.
// This shim only has to satisfy the compiler with the same call shape.
package mlog

import (
	"fmt"
	"os"
)

// Fatal prints err and the key/value pairs to stderr and exits with status 1.
func Fatal(err error, keysAndValues ...any) {
	fmt.Fprintf(os.Stderr, "fatal: %v %v\n", err, keysAndValues)
	os.Exit(1)
}
