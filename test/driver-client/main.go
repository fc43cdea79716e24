// Command driver-client drives a Secrets Store CSI provider over its unix
// socket exactly as the Secrets Store CSI driver (v1.6.0) does: it uses the
// driver's own PluginClientBuilder (same dial options, service config and
// retry policy) and the driver's own MountContent, which validates the
// response and writes the files into the target directory with the kubelet
// atomic writer.
//
// Usage:
//
//	driver-client mount --socket-dir DIR --provider NAME --target DIR \
//	    --permission 420 --attributes-file FILE --secrets-file FILE \
//	    [--timeout 30s] [--old-versions-file FILE] [--max-call-recv-msg-size N]
//	driver-client version --socket-dir DIR --provider NAME [--timeout 5s]
//
// Every answer (success or failure of the RPC) is printed as a single JSON
// line on stdout with exit status 0. A non-zero exit status means a usage
// error (bad flags, unreadable input files).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	secretsstore "sigs.k8s.io/secrets-store-csi-driver/pkg/secrets-store"
	"sigs.k8s.io/secrets-store-csi-driver/provider/v1alpha1"
)

// Same default as the driver's --max-call-recv-msg-size flag.
const defaultMaxCallRecvMsgSize = 4 * 1024 * 1024

type mountResult struct {
	OK             bool              `json:"ok"`
	ObjectVersions map[string]string `json:"objectVersions"`
	ErrorCode      string            `json:"errorCode"`
	GRPCCode       string            `json:"grpcCode"`
	Message        string            `json:"message"`
}

type versionResult struct {
	OK             bool   `json:"ok"`
	Version        string `json:"version,omitempty"`
	RuntimeName    string `json:"runtimeName,omitempty"`
	RuntimeVersion string `json:"runtimeVersion,omitempty"`
	GRPCCode       string `json:"grpcCode,omitempty"`
	Message        string `json:"message,omitempty"`
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...)}
}

func main() {
	if len(os.Args) < 2 {
		fail(usagef("missing command: expected \"mount\" or \"version\""))
	}
	var err error
	switch os.Args[1] {
	case "mount":
		err = runMount(os.Args[2:], os.Stdout)
	case "version":
		err = runVersion(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		fmt.Fprintln(os.Stderr, "usage: driver-client mount|version [flags]")
		return
	default:
		err = usagef("unknown command %q: expected \"mount\" or \"version\"", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "driver-client: %v\n", err)
	os.Exit(2)
}

// grpcCodeOf returns the gRPC status code name of err ("Unknown" for errors
// that carry no gRPC status, as status.FromError reports them).
func grpcCodeOf(err error) string {
	if err == nil {
		return "OK"
	}
	// status.FromError unwraps wrapped status errors; for errors without a
	// gRPC status (e.g. "provider not found", "missing object versions") it
	// yields codes.Unknown.
	s, _ := status.FromError(err)
	return s.Code().String()
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

func readFileArg(name, path string) (string, error) {
	if path == "" {
		return "", usagef("--%s is required", name)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usagef("--%s: %v", name, err)
	}
	return string(b), nil
}

func newClient(ctx context.Context, socketDir, provider string, maxRecv int) (*secretsstore.PluginClientBuilder, v1alpha1.CSIDriverProviderClient, error) {
	builder := secretsstore.NewPluginClientBuilder(
		[]string{socketDir},
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecv)),
	)
	client, err := builder.Get(ctx, provider)
	if err != nil {
		builder.Cleanup()
		return nil, nil, err
	}
	return builder, client, nil
}

func runMount(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	socketDir := fs.String("socket-dir", "", "directory holding <provider>.sock")
	provider := fs.String("provider", "", "provider name (socket file name without .sock)")
	target := fs.String("target", "", "existing target directory the files are written into")
	permission := fs.String("permission", "420", "default file permission, JSON-encoded decimal (420 = 0644)")
	attributesFile := fs.String("attributes-file", "", "file whose content is sent verbatim as MountRequest.attributes")
	secretsFile := fs.String("secrets-file", "", "file whose content is sent verbatim as MountRequest.secrets")
	oldVersionsFile := fs.String("old-versions-file", "", "optional JSON object id->version sent as current_object_version")
	timeout := fs.Duration("timeout", 30*time.Second, "deadline for the whole call")
	maxRecv := fs.Int("max-call-recv-msg-size", defaultMaxCallRecvMsgSize, "maximum size in bytes of the gRPC response")
	if err := fs.Parse(args); err != nil {
		return usageError{msg: err.Error()}
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments: %v", fs.Args())
	}
	if *socketDir == "" || *provider == "" || *target == "" {
		return usagef("--socket-dir, --provider and --target are required")
	}
	if *permission == "" {
		return usagef("--permission must not be empty")
	}
	if st, err := os.Stat(*target); err != nil || !st.IsDir() {
		return usagef("--target %q must be an existing directory", *target)
	}
	attributes, err := readFileArg("attributes-file", *attributesFile)
	if err != nil {
		return err
	}
	secrets, err := readFileArg("secrets-file", *secretsFile)
	if err != nil {
		return err
	}
	var oldVersions map[string]string
	if *oldVersionsFile != "" {
		raw, err := readFileArg("old-versions-file", *oldVersionsFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(raw), &oldVersions); err != nil {
			return usagef("--old-versions-file: not a JSON object of strings: %v", err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	res := mountResult{ObjectVersions: map[string]string{}}
	builder, client, err := newClient(ctx, *socketDir, *provider, *maxRecv)
	if err != nil {
		res.ErrorCode = ""
		res.GRPCCode = grpcCodeOf(err)
		res.Message = err.Error()
		return writeJSON(out, res)
	}
	defer builder.Cleanup()

	versions, errorCode, err := secretsstore.MountContent(ctx, client, attributes, secrets, *target, *permission, oldVersions)
	if err != nil {
		res.ErrorCode = errorCode
		res.GRPCCode = grpcCodeOf(err)
		res.Message = err.Error()
		return writeJSON(out, res)
	}
	res.OK = true
	res.GRPCCode = "OK"
	res.ErrorCode = errorCode
	for k, v := range versions {
		res.ObjectVersions[k] = v
	}
	return writeJSON(out, res)
}

func runVersion(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	socketDir := fs.String("socket-dir", "", "directory holding <provider>.sock")
	provider := fs.String("provider", "", "provider name (socket file name without .sock)")
	timeout := fs.Duration("timeout", 5*time.Second, "deadline for the call")
	if err := fs.Parse(args); err != nil {
		return usageError{msg: err.Error()}
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments: %v", fs.Args())
	}
	if *socketDir == "" || *provider == "" {
		return usagef("--socket-dir and --provider are required")
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	builder, client, err := newClient(ctx, *socketDir, *provider, defaultMaxCallRecvMsgSize)
	if err != nil {
		return writeJSON(out, versionResult{GRPCCode: grpcCodeOf(err), Message: err.Error()})
	}
	defer builder.Cleanup()

	// Same request the driver's health check sends (secretsstore.Version),
	// but keeping the whole response so the test can check every field.
	resp, err := client.Version(ctx, &v1alpha1.VersionRequest{Version: "v1alpha1"})
	if err != nil {
		return writeJSON(out, versionResult{GRPCCode: grpcCodeOf(err), Message: err.Error()})
	}
	return writeJSON(out, versionResult{
		OK:             true,
		Version:        resp.GetVersion(),
		RuntimeName:    resp.GetRuntimeName(),
		RuntimeVersion: resp.GetRuntimeVersion(),
	})
}
