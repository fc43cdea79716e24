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
//	driver-client mount-many --spec FILE
//
// mount-many runs many MountContent calls over one client (one gRPC
// connection, as the driver shares one per provider) and prints one JSON
// document with a result and timings per call (see manySpec / manyResult).
// The calls are split into `concurrency` workers: worker w runs calls w,
// w+concurrency, w+2*concurrency, ... one after another, so a caller that puts
// one pod per worker never has two Mounts of the same pod in flight. All
// workers start together after the client is connected.
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
	"sync"
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
		fail(usagef("missing command: expected \"mount\", \"mount-many\" or \"version\""))
	}
	var err error
	switch os.Args[1] {
	case "mount":
		err = runMount(os.Args[2:], os.Stdout)
	case "version":
		err = runVersion(os.Args[2:], os.Stdout)
	case "mount-many":
		err = runMountMany(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		fmt.Fprintln(os.Stderr, "usage: driver-client mount|mount-many|version [flags]")
		return
	default:
		err = usagef("unknown command %q: expected \"mount\", \"mount-many\" or \"version\"", os.Args[1])
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

// manyCall is one Mount of a mount-many spec.
type manyCall struct {
	Target      string            `json:"target"`
	Attributes  string            `json:"attributes"`
	Secrets     string            `json:"secrets"`
	Permission  string            `json:"permission"`
	OldVersions map[string]string `json:"oldVersions,omitempty"`
}

// manySpec is the input of mount-many.
type manySpec struct {
	SocketDir          string `json:"socketDir"`
	Provider           string `json:"provider"`
	TimeoutMs          int    `json:"timeoutMs"`
	Concurrency        int    `json:"concurrency"`
	MaxCallRecvMsgSize int    `json:"maxCallRecvMsgSize"`
	// IntervalMs paces the calls: call i starts no sooner than i × IntervalMs
	// after the first (a steady rate, as pods arriving on a node one by one);
	// 0 starts each as soon as a worker is free.
	IntervalMs int        `json:"intervalMs"`
	Calls      []manyCall `json:"calls"`
}

// manyResult is one call's outcome. Times are milliseconds; StartUnixMs is
// wall-clock (Unix epoch) so callers can line calls up with other logs.
type manyResult struct {
	Index       int     `json:"index"`
	OK          bool    `json:"ok"`
	ErrorCode   string  `json:"errorCode"`
	GRPCCode    string  `json:"grpcCode"`
	Message     string  `json:"message,omitempty"`
	Objects     int     `json:"objects"`
	StartUnixMs float64 `json:"startUnixMs"`
	// RPCStartUnixMs and RPCMs cover the Mount RPC alone (from a client
	// interceptor); TotalMs adds the driver's response checks and file writes.
	RPCStartUnixMs float64 `json:"rpcStartUnixMs"`
	RPCMs          float64 `json:"rpcMs"`
	TotalMs        float64 `json:"totalMs"`
}

type manyOutput struct {
	OK          bool         `json:"ok"`
	Message     string       `json:"message,omitempty"`
	StartUnixMs float64      `json:"startUnixMs"`
	WallMs      float64      `json:"wallMs"`
	Results     []manyResult `json:"results"`
}

type callIndexKey struct{}

func unixMs(t time.Time) float64 { return float64(t.UnixNano()) / 1e6 }

func msSince(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

func runMountMany(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mount-many", flag.ContinueOnError)
	specFile := fs.String("spec", "", "JSON file: {socketDir, provider, timeoutMs, concurrency, intervalMs, calls: [{target, attributes, secrets, permission}]}")
	if err := fs.Parse(args); err != nil {
		return usageError{msg: err.Error()}
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments: %v", fs.Args())
	}
	raw, err := readFileArg("spec", *specFile)
	if err != nil {
		return err
	}
	var spec manySpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return usagef("--spec: %v", err)
	}
	if spec.SocketDir == "" || spec.Provider == "" {
		return usagef("--spec: socketDir and provider are required")
	}
	for i, c := range spec.Calls {
		if st, err := os.Stat(c.Target); err != nil || !st.IsDir() {
			return usagef("--spec: calls[%d].target %q must be an existing directory", i, c.Target)
		}
		if c.Permission == "" {
			spec.Calls[i].Permission = "420"
		}
	}
	if spec.TimeoutMs <= 0 {
		spec.TimeoutMs = 30_000
	}
	if spec.MaxCallRecvMsgSize <= 0 {
		spec.MaxCallRecvMsgSize = defaultMaxCallRecvMsgSize
	}
	workers := spec.Concurrency
	if workers <= 0 || workers > len(spec.Calls) {
		workers = len(spec.Calls)
	}

	results := make([]manyResult, len(spec.Calls))
	// Times the Mount RPC alone; the call index travels in the context.
	interceptor := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		started := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		if i, ok := ctx.Value(callIndexKey{}).(int); ok {
			results[i].RPCStartUnixMs = unixMs(started)
			results[i].RPCMs = msSince(started)
		}
		return err
	}
	builder := secretsstore.NewPluginClientBuilder(
		[]string{spec.SocketDir},
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(spec.MaxCallRecvMsgSize)),
		grpc.WithChainUnaryInterceptor(interceptor),
	)
	defer builder.Cleanup()
	connectCtx, cancelConnect := context.WithTimeout(context.Background(), time.Duration(spec.TimeoutMs)*time.Millisecond)
	client, err := builder.Get(connectCtx, spec.Provider)
	cancelConnect()
	if err != nil {
		return writeJSON(out, manyOutput{Message: err.Error(), Results: []manyResult{}})
	}

	start := make(chan struct{})
	// Set before start is closed, so every worker reads it after.
	var began time.Time
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			<-start
			for i := w; i < len(spec.Calls); i += workers {
				c := spec.Calls[i]
				if spec.IntervalMs > 0 {
					time.Sleep(time.Until(began.Add(time.Duration(i*spec.IntervalMs) * time.Millisecond)))
				}
				ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), callIndexKey{}, i), time.Duration(spec.TimeoutMs)*time.Millisecond)
				started := time.Now()
				versions, errorCode, err := secretsstore.MountContent(ctx, client, c.Attributes, c.Secrets, c.Target, c.Permission, c.OldVersions)
				r := &results[i]
				r.TotalMs = msSince(started)
				r.StartUnixMs = unixMs(started)
				cancel()
				r.Index = i
				r.ErrorCode = errorCode
				r.GRPCCode = grpcCodeOf(err)
				if err != nil {
					r.Message = err.Error()
				} else {
					r.OK = true
					r.Objects = len(versions)
				}
			}
		}(w)
	}
	began = time.Now()
	close(start)
	wg.Wait()
	return writeJSON(out, manyOutput{OK: true, StartUnixMs: unixMs(began), WallMs: msSince(began), Results: results})
}
