// Command registrar registers a CSI driver with the kubelet, the part of
// kubernetes-csi/node-driver-registrar a node needs (that module is not served by the Go module
// proxy). It serves the kubelet's plugin-registration API (pluginregistration.k8s.io/v1) on
// <registration-dir>/<driver-name>-reg.sock: the kubelet's plugin watcher finds the socket, asks
// GetInfo, dials the driver's CSI endpoint itself and reports the outcome back.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type registration struct {
	registerapi.UnimplementedRegistrationServer
	driver, endpoint string
}

func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	log.Printf("GetInfo: %s at %s", r.driver, r.endpoint)
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.driver,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r *registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	// One line the tests read: registered=true, or the kubelet's reason.
	log.Printf("registration status: registered=%t error=%q", s.PluginRegistered, s.Error)
	return &registerapi.RegistrationStatusResponse{}, nil
}

func main() {
	driver := flag.String("driver-name", "secrets-store.csi.k8s.io", "the CSI driver's name")
	endpoint := flag.String("csi-address", "", "the driver's CSI socket, as the kubelet dials it")
	dir := flag.String("registration-dir", "/var/lib/kubelet/plugins_registry", "the kubelet's plugin registration directory")
	flag.Parse()
	if *endpoint == "" {
		log.Fatal("-csi-address is required")
	}
	sock := filepath.Join(*dir, *driver+"-reg.sock")
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &registration{driver: *driver, endpoint: *endpoint})
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		// The kubelet deregisters the driver when the socket goes.
		srv.Stop()
		_ = os.Remove(sock)
		os.Exit(0)
	}()
	log.Printf("serving %s for %s (%s)", sock, *driver, *endpoint)
	if err := srv.Serve(l); err != nil {
		log.Fatal(err)
	}
}
