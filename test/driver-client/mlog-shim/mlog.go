// Package mlog is a minimal local stand-in for monis.app/mlog, which the Go
// module proxy reachable from the test machines refuses to serve (HTTP 403).
//
// Two programs import it through the Secrets Store CSI driver v1.6.0:
//
//   - test/driver-client (the driver's pkg/secrets-store: mlog.Fatal in
//     server.go, a code path driver-client never runs), and
//   - the real driver binary built by scripts/setup-kubernetes.sh
//     (cmd/secrets-store-csi-driver: Setup, FormatText/FormatJSON,
//     ValidateAndSetKlogLevelAndFormatGlobally, Error, Fatal).
//
// Only the call shapes are kept. The driver logs through klog either way; the
// real mlog would also switch klog to JSON for --log-format-json, which the
// tests do not use, so the format is accepted and ignored.
package mlog

import (
	"context"
	"fmt"
	"os"

	"k8s.io/klog/v2"
)

// LogFormat names a log output format.
type LogFormat string

const (
	FormatText LogFormat = "text"
	FormatJSON LogFormat = "json"
)

// Setup returns the function that flushes the logs at exit.
func Setup() func() { return klog.Flush }

// ValidateAndSetKlogLevelAndFormatGlobally accepts any level and a known format.
func ValidateAndSetKlogLevelAndFormatGlobally(_ context.Context, _ klog.Level, format LogFormat) error {
	if format != FormatText && format != FormatJSON {
		return fmt.Errorf("unknown log format %q", format)
	}
	return nil
}

// Error logs err with msg and the key/value pairs.
func Error(msg string, err error, keysAndValues ...any) {
	klog.ErrorSDepth(1, err, msg, keysAndValues...)
}

// Fatal logs err and the key/value pairs, flushes and exits with status 1.
func Fatal(err error, keysAndValues ...any) {
	klog.ErrorSDepth(1, err, "fatal", keysAndValues...)
	klog.Flush()
	fmt.Fprintf(os.Stderr, "fatal: %v %v\n", err, keysAndValues)
	os.Exit(1)
}
