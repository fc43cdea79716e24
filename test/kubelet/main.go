// Command kubelet-csi plays the kubelet's part for one CSI inline ephemeral volume, towards
// a real CSI node plugin (the Secrets Store CSI driver) and a real kube-apiserver. It does
// what kubelet v1.35's CSI volume plugin does (pkg/volume/csi: csi_mounter.go SetUpAt and
// TearDownAt, csi_client.go NodePublishVolume, kubelet/token's token manager) and nothing
// else: no pod sync loop, no containers. The tests call it once per (re)publish.
//
//	kubelet-csi publish   --server URL --ca FILE --token-file FILE --node NAME \
//	                      --csi-endpoint unix:///…/csi.sock --root DIR \
//	                      --namespace NS --pod NAME --volume VOL [--token-cache FILE] [--timeout 2m]
//	kubelet-csi unpublish --csi-endpoint … --root DIR --pod-uid UID --volume VOL [--timeout 2m]
//
// publish, like kubelet:
//   - reads the Pod (it must be bound to --node) and its `csi` volume, and the CSIDriver object
//     named by the volume (Ephemeral must be among its volumeLifecycleModes);
//   - target path <root>/pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount (parent created
//     0750, the target itself left to the driver), volume handle csi-<sha256(uid+volume)>,
//     vol_data.json next to it;
//   - volume context: the volume's volumeAttributes, then (podInfoOnMount) pod.name,
//     pod.namespace, pod.uid, serviceAccount.name and ephemeral "true", then
//     csi.storage.k8s.io/serviceAccount.tokens: one TokenRequest per CSIDriver tokenRequests
//     entry, for the pod's service account, bound to the pod, as JSON audience ->
//     {token, expirationTimestamp} (in the secrets instead with serviceAccountTokenInSecrets);
//     tokens are reused from --token-cache until 80 % of their lifetime, as kubelet's token
//     manager does, so a republish passes the same token;
//   - secrets: the nodePublishSecretRef Secret's data;
//   - NodeGetCapabilities, then NodePublishVolume: read-only as the volume says, access mode
//     single-node writer (ReadWriteOnce, what kubelet sends for inline volumes), mount
//     capability with the volume's fsType;
//   - a volume already mounted is published again (republish) only when the CSIDriver sets
//     requiresRepublish, as kubelet's volume manager does;
//   - on a final gRPC error (anything but Canceled, DeadlineExceeded, Unavailable,
//     ResourceExhausted, Aborted) it removes the target dir, vol_data.json and the volume dir
//     when nothing is mounted there.
//
// The node's credentials (--token-file) are a kubelet's: user system:node:<node> in group
// system:nodes, so the API server's Node authorizer decides what it may read and which
// tokens it may request, as for a real kubelet.
//
// Every outcome is one JSON line on stdout (see result); exit status 0 unless the flags are
// wrong. Tokens are never printed.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const (
	attrPodName        = "csi.storage.k8s.io/pod.name"
	attrPodNamespace   = "csi.storage.k8s.io/pod.namespace"
	attrPodUID         = "csi.storage.k8s.io/pod.uid"
	attrServiceAccount = "csi.storage.k8s.io/serviceAccount.name"
	attrEphemeral      = "csi.storage.k8s.io/ephemeral"
	attrTokens         = "csi.storage.k8s.io/serviceAccount.tokens"
	volDataFileName    = "vol_data.json"
	// kubelet's csiTimeout.
	defaultTimeout = 2 * time.Minute
	// kubelet's token manager: a token older than this is replaced whatever its expiry.
	tokenMaxAge = 24 * time.Hour
)

type result struct {
	OK bool `json:"ok"`
	// Where the failure happened: "kubernetes" (reading the pod, the CSIDriver, a Secret or a
	// TokenRequest), "csi" (the driver's answer) or "" on success.
	Stage    string `json:"stage,omitempty"`
	GRPCCode string `json:"grpcCode,omitempty"`
	// The error as kubelet would put it in the pod's FailedMount event.
	Message           string   `json:"message,omitempty"`
	TargetPath        string   `json:"targetPath,omitempty"`
	VolumeID          string   `json:"volumeId,omitempty"`
	VolumeContextKeys []string `json:"volumeContextKeys,omitempty"`
	TokenAudiences    []string `json:"tokenAudiences,omitempty"`
	// TokenRequests made by this call (0 when every token came from the cache).
	TokenRequests int    `json:"tokenRequests"`
	Readonly      bool   `json:"readonly"`
	AccessMode    string `json:"accessMode,omitempty"`
	// The volume was already mounted: this call was a republish.
	Republish bool `json:"republish"`
	// A republish kubelet would not make (the CSIDriver does not set requiresRepublish).
	Skipped bool `json:"skipped"`
	// The target path directory was removed after a final error.
	Cleaned    bool    `json:"cleaned"`
	DurationMs float64 `json:"durationMs"`
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func main() {
	if len(os.Args) < 2 {
		fail(usageError{"missing command: publish or unpublish"})
	}
	var (
		res *result
		err error
	)
	switch os.Args[1] {
	case "publish":
		res, err = runPublish(os.Args[2:])
	case "unpublish":
		res, err = runUnpublish(os.Args[2:])
	default:
		err = usageError{fmt.Sprintf("unknown command %q: publish or unpublish", os.Args[1])}
	}
	if err != nil {
		fail(err)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kubelet-csi:", err)
	os.Exit(2)
}

// ---------------------------------------------------------------- Kubernetes API

type kubeAPI struct {
	server string
	token  string
	http   *http.Client
}

func newKubeAPI(server, caFile, tokenFile string) (*kubeAPI, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, usageError{fmt.Sprintf("--ca: %v", err)}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, usageError{fmt.Sprintf("--ca %s holds no PEM certificate", caFile)}
	}
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, usageError{fmt.Sprintf("--token-file: %v", err)}
	}
	return &kubeAPI{
		server: strings.TrimRight(server, "/"),
		token:  strings.TrimSpace(string(tok)),
		http: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		},
	}, nil
}

type apiError struct {
	method, path string
	status       int
	message      string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.status, e.message)
}

func (k *kubeAPI) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, k.server+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+k.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var st struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &st)
		return &apiError{method: method, path: path, status: resp.StatusCode, message: st.Message}
	}
	return json.Unmarshal(data, out)
}

type csiVolumeSource struct {
	Driver               string            `json:"driver"`
	ReadOnly             *bool             `json:"readOnly"`
	FSType               *string           `json:"fsType"`
	VolumeAttributes     map[string]string `json:"volumeAttributes"`
	NodePublishSecretRef *struct {
		Name string `json:"name"`
	} `json:"nodePublishSecretRef"`
}

type pod struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"metadata"`
	Spec struct {
		NodeName           string `json:"nodeName"`
		ServiceAccountName string `json:"serviceAccountName"`
		Volumes            []struct {
			Name string           `json:"name"`
			CSI  *csiVolumeSource `json:"csi"`
		} `json:"volumes"`
	} `json:"spec"`
}

type tokenRequestSpec struct {
	Audience          string `json:"audience"`
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
}

type csiDriver struct {
	Spec struct {
		PodInfoOnMount               *bool              `json:"podInfoOnMount"`
		VolumeLifecycleModes         []string           `json:"volumeLifecycleModes"`
		TokenRequests                []tokenRequestSpec `json:"tokenRequests"`
		RequiresRepublish            *bool              `json:"requiresRepublish"`
		ServiceAccountTokenInSecrets *bool              `json:"serviceAccountTokenInSecrets"`
	} `json:"spec"`
}

// tokenStatus is authentication.k8s.io/v1 TokenRequestStatus, as kubelet marshals it.
type tokenStatus struct {
	Token               string `json:"token"`
	ExpirationTimestamp string `json:"expirationTimestamp"`
}

type tokenRequest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Audiences         []string `json:"audiences"`
		ExpirationSeconds *int64   `json:"expirationSeconds,omitempty"`
		BoundObjectRef    struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			UID        string `json:"uid"`
		} `json:"boundObjectRef"`
	} `json:"spec"`
	Status *tokenStatus `json:"status,omitempty"`
}

// cachedToken is one entry of kubelet's token manager.
type cachedToken struct {
	Status            tokenStatus `json:"status"`
	ExpirationSeconds int64       `json:"expirationSeconds"`
}

// requiresRefresh: kubelet refreshes within 20 % of the TTL of expiry, or after 24 h.
func (c cachedToken) requiresRefresh(now time.Time) bool {
	exp, err := time.Parse(time.RFC3339, c.Status.ExpirationTimestamp)
	if err != nil || c.ExpirationSeconds <= 0 {
		return true
	}
	ttl := time.Duration(c.ExpirationSeconds) * time.Second
	iat := exp.Add(-ttl)
	if now.After(iat.Add(tokenMaxAge)) {
		return true
	}
	return now.After(exp.Add(-ttl / 5))
}

func loadTokenCache(file string) map[string]cachedToken {
	cache := map[string]cachedToken{}
	if file == "" {
		return cache
	}
	if b, err := os.ReadFile(file); err == nil {
		_ = json.Unmarshal(b, &cache)
	}
	return cache
}

func saveTokenCache(file string, cache map[string]cachedToken) error {
	if file == "" {
		return nil
	}
	b, err := json.Marshal(cache)
	if err != nil {
		return err
	}
	// Several kubelet-csi calls may run at once (kubelet itself is one process): write to a
	// file of this process's own, then rename; the last writer wins, as the cache allows.
	tmp := fmt.Sprintf("%s.%d.tmp", file, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// ---------------------------------------------------------------- CSI

func dial(endpoint string) (*grpc.ClientConn, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "unix" {
		return nil, usageError{fmt.Sprintf("--csi-endpoint must be unix:///path, got %q", endpoint)}
	}
	return grpc.NewClient("unix://"+u.Path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func isFinalError(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

func makeVolumeHandle(podUID, volume string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(podUID+volume)))
}

func targetPathFor(root, podUID, volume string) string {
	return filepath.Join(root, "pods", podUID, "volumes", "kubernetes.io~csi", volume, "mount")
}

// isMountPoint: the target is a mount point when its device differs from its parent's
// (what mount-utils' IsLikelyNotMountPoint checks).
func isMountPoint(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	clean := filepath.Clean(path)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && unescapeMountPath(f[4]) == clean {
			return true
		}
	}
	return false
}

func unescapeMountPath(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// removeMountDir is kubelet's: only when nothing is mounted at dir, remove it, vol_data.json
// and the volume directory.
func removeMountDir(dir string) bool {
	if isMountPoint(dir) {
		return false
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		return false
	}
	volDir := filepath.Dir(dir)
	_ = os.Remove(filepath.Join(volDir, volDataFileName))
	_ = os.Remove(volDir)
	return true
}

// ---------------------------------------------------------------- publish

func runPublish(args []string) (*result, error) {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	server := fs.String("server", "", "kube-apiserver URL")
	caFile := fs.String("ca", "", "the API server's CA certificate (PEM)")
	tokenFile := fs.String("token-file", "", "the node's bearer token (user system:node:<node>)")
	node := fs.String("node", "", "this node's name")
	endpoint := fs.String("csi-endpoint", "", "the CSI driver's socket, unix:///path")
	root := fs.String("root", "", "kubelet root directory")
	namespace := fs.String("namespace", "", "pod namespace")
	podName := fs.String("pod", "", "pod name")
	volume := fs.String("volume", "", "the pod's volume name")
	tokenCache := fs.String("token-cache", "", "file for kubelet's token cache")
	timeout := fs.Duration("timeout", defaultTimeout, "deadline of the CSI call")
	if err := fs.Parse(args); err != nil {
		return nil, usageError{err.Error()}
	}
	for name, v := range map[string]string{"server": *server, "ca": *caFile, "token-file": *tokenFile, "node": *node,
		"csi-endpoint": *endpoint, "root": *root, "namespace": *namespace, "pod": *podName, "volume": *volume} {
		if v == "" {
			return nil, usageError{"--" + name + " is required"}
		}
	}
	kube, err := newKubeAPI(*server, *caFile, *tokenFile)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	res := &result{}
	done := func() (*result, error) {
		res.DurationMs = float64(time.Since(started).Microseconds()) / 1000
		return res, nil
	}
	kubeFailed := func(err error) (*result, error) {
		res.Stage = "kubernetes"
		res.Message = err.Error()
		return done()
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	var p pod
	if err := kube.call(ctx, "GET", fmt.Sprintf("/api/v1/namespaces/%s/pods/%s", url.PathEscape(*namespace), url.PathEscape(*podName)), nil, &p); err != nil {
		return kubeFailed(err)
	}
	if p.Spec.NodeName != *node {
		return kubeFailed(fmt.Errorf("pod %s/%s is bound to node %q, not to this node %q", *namespace, *podName, p.Spec.NodeName, *node))
	}
	var src *csiVolumeSource
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == *volume {
			src = p.Spec.Volumes[i].CSI
		}
	}
	if src == nil {
		return kubeFailed(fmt.Errorf("pod %s/%s has no csi volume %q", *namespace, *podName, *volume))
	}
	var drv csiDriver
	if err := kube.call(ctx, "GET", "/apis/storage.k8s.io/v1/csidrivers/"+url.PathEscape(src.Driver), nil, &drv); err != nil {
		return kubeFailed(err)
	}
	ephemeralOK := len(drv.Spec.VolumeLifecycleModes) == 0 // the API server defaults to Persistent only
	for _, m := range drv.Spec.VolumeLifecycleModes {
		if m == "Ephemeral" {
			ephemeralOK = true
		}
	}
	if len(drv.Spec.VolumeLifecycleModes) == 0 || !ephemeralOK {
		return kubeFailed(fmt.Errorf("CSIDriver %s does not support inline ephemeral volumes (volumeLifecycleModes %v)", src.Driver, drv.Spec.VolumeLifecycleModes))
	}

	uid := p.Metadata.UID
	res.VolumeID = makeVolumeHandle(uid, *volume)
	res.TargetPath = targetPathFor(*root, uid, *volume)
	res.Readonly = src.ReadOnly != nil && *src.ReadOnly
	parent := filepath.Dir(res.TargetPath)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return nil, err
	}
	// A mounted volume is published again only for drivers that ask for it (requiresRepublish,
	// kubelet's periodic remount); otherwise kubelet leaves it alone.
	res.Republish = isMountPoint(res.TargetPath)
	if res.Republish && (drv.Spec.RequiresRepublish == nil || !*drv.Spec.RequiresRepublish) {
		res.OK, res.Skipped = true, true
		return done()
	}

	secrets := map[string]string{}
	if src.NodePublishSecretRef != nil {
		var s struct {
			Data map[string]string `json:"data"`
		}
		if err := kube.call(ctx, "GET", fmt.Sprintf("/api/v1/namespaces/%s/secrets/%s", url.PathEscape(*namespace), url.PathEscape(src.NodePublishSecretRef.Name)), nil, &s); err != nil {
			return kubeFailed(fmt.Errorf("fetching NodePublishSecretRef %s/%s failed: %w", *namespace, src.NodePublishSecretRef.Name, err))
		}
		for k, v := range s.Data {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return kubeFailed(err)
			}
			secrets[k] = string(b)
		}
	}

	volCtx := map[string]string{}
	for k, v := range src.VolumeAttributes {
		volCtx[k] = v
	}
	if drv.Spec.PodInfoOnMount != nil && *drv.Spec.PodInfoOnMount {
		volCtx[attrPodName] = p.Metadata.Name
		volCtx[attrPodNamespace] = p.Metadata.Namespace
		volCtx[attrPodUID] = uid
		volCtx[attrServiceAccount] = p.Spec.ServiceAccountName
		volCtx[attrEphemeral] = "true"
	}

	if len(drv.Spec.TokenRequests) > 0 {
		cache := loadTokenCache(*tokenCache)
		outputs := map[string]tokenStatus{}
		for _, tr := range drv.Spec.TokenRequests {
			key := fmt.Sprintf("%s/%s/%s/%s/%d", *namespace, p.Spec.ServiceAccountName, uid, tr.Audience, expirationOrZero(tr.ExpirationSeconds))
			if c, ok := cache[key]; ok && !c.requiresRefresh(time.Now()) {
				outputs[tr.Audience] = c.Status
				continue
			}
			var req tokenRequest
			req.APIVersion, req.Kind = "authentication.k8s.io/v1", "TokenRequest"
			req.Spec.Audiences = []string{}
			if tr.Audience != "" {
				req.Spec.Audiences = []string{tr.Audience}
			}
			req.Spec.ExpirationSeconds = tr.ExpirationSeconds
			req.Spec.BoundObjectRef.APIVersion, req.Spec.BoundObjectRef.Kind = "v1", "Pod"
			req.Spec.BoundObjectRef.Name, req.Spec.BoundObjectRef.UID = p.Metadata.Name, uid
			var got tokenRequest
			path := fmt.Sprintf("/api/v1/namespaces/%s/serviceaccounts/%s/token", url.PathEscape(*namespace), url.PathEscape(p.Spec.ServiceAccountName))
			if err := kube.call(ctx, "POST", path, req, &got); err != nil {
				return kubeFailed(fmt.Errorf("mounter.SetUpAt failed to get service accoount token attributes: %w", err))
			}
			if got.Status == nil || got.Status.Token == "" {
				return kubeFailed(fmt.Errorf("TokenRequest for %s/%s answered no token", *namespace, p.Spec.ServiceAccountName))
			}
			res.TokenRequests++
			outputs[tr.Audience] = *got.Status
			cache[key] = cachedToken{Status: *got.Status, ExpirationSeconds: expirationOrZero(got.Spec.ExpirationSeconds)}
		}
		if res.TokenRequests > 0 {
			if err := saveTokenCache(*tokenCache, cache); err != nil {
				return nil, err
			}
		}
		tokens, err := json.Marshal(outputs)
		if err != nil {
			return nil, err
		}
		if drv.Spec.ServiceAccountTokenInSecrets != nil && *drv.Spec.ServiceAccountTokenInSecrets {
			secrets[attrTokens] = string(tokens)
		} else {
			volCtx[attrTokens] = string(tokens)
		}
		for a := range outputs {
			res.TokenAudiences = append(res.TokenAudiences, a)
		}
		sort.Strings(res.TokenAudiences)
	}
	for k := range volCtx {
		res.VolumeContextKeys = append(res.VolumeContextKeys, k)
	}
	sort.Strings(res.VolumeContextKeys)

	conn, err := dial(*endpoint)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	nodeClient := csi.NewNodeClient(conn)
	csiFailed := func(err error) (*result, error) {
		res.Stage = "csi"
		res.GRPCCode = status.Code(err).String()
		res.Message = err.Error()
		if isFinalError(err) {
			res.Cleaned = removeMountDir(res.TargetPath)
		}
		return done()
	}
	caps, err := nodeClient.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return csiFailed(err)
	}
	mode := csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	for _, c := range caps.GetCapabilities() {
		if c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER {
			mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
	}
	res.AccessMode = mode.String()

	volData, _ := json.Marshal(map[string]string{
		"specVolumeID":        *volume,
		"volumeHandle":        res.VolumeID,
		"driverName":          src.Driver,
		"nodeName":            *node,
		"volumeLifecycleMode": "Ephemeral",
	})
	if err := os.WriteFile(filepath.Join(parent, volDataFileName), volData, 0o644); err != nil {
		return nil, err
	}

	fsType := ""
	if src.FSType != nil {
		fsType = *src.FSType
	}
	_, err = nodeClient.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId:   res.VolumeID,
		TargetPath: res.TargetPath,
		Readonly:   res.Readonly,
		Secrets:    secrets,
		VolumeCapability: &csi.VolumeCapability{
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
		},
		VolumeContext: volCtx,
	})
	if err != nil {
		return csiFailed(err)
	}
	res.OK = true
	return done()
}

func expirationOrZero(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// ---------------------------------------------------------------- unpublish

func runUnpublish(args []string) (*result, error) {
	fs := flag.NewFlagSet("unpublish", flag.ContinueOnError)
	endpoint := fs.String("csi-endpoint", "", "the CSI driver's socket, unix:///path")
	root := fs.String("root", "", "kubelet root directory")
	podUID := fs.String("pod-uid", "", "pod UID")
	volume := fs.String("volume", "", "the pod's volume name")
	timeout := fs.Duration("timeout", defaultTimeout, "deadline of the CSI call")
	if err := fs.Parse(args); err != nil {
		return nil, usageError{err.Error()}
	}
	for name, v := range map[string]string{"csi-endpoint": *endpoint, "root": *root, "pod-uid": *podUID, "volume": *volume} {
		if v == "" {
			return nil, usageError{"--" + name + " is required"}
		}
	}
	started := time.Now()
	res := &result{TargetPath: targetPathFor(*root, *podUID, *volume), VolumeID: makeVolumeHandle(*podUID, *volume)}
	// kubelet takes the handle from vol_data.json, written at publish.
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(res.TargetPath), volDataFileName)); err == nil {
		var vd map[string]string
		if json.Unmarshal(b, &vd) == nil && vd["volumeHandle"] != "" {
			res.VolumeID = vd["volumeHandle"]
		}
	}
	conn, err := dial(*endpoint)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	_, err = csi.NewNodeClient(conn).NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: res.VolumeID, TargetPath: res.TargetPath})
	if err != nil {
		res.Stage = "csi"
		res.GRPCCode = status.Code(err).String()
		res.Message = err.Error()
	} else {
		res.OK = true
		res.Cleaned = removeMountDir(res.TargetPath)
	}
	res.DurationMs = float64(time.Since(started).Microseconds()) / 1000
	return res, nil
}
