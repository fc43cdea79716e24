module example.local/kubelet-csi

go 1.26.0

require (
	github.com/container-storage-interface/spec v1.6.0
	google.golang.org/grpc v1.83.2
)

require (
	github.com/golang/protobuf v1.5.4 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261019180522-ce908d29299b // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
