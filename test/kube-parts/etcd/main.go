// Command etcd is the etcd server (go.etcd.io/etcd/server/v3, version pinned in go.mod),
// built from the Go module proxy for the end-to-end tests' kube-apiserver. etcd's own
// main is a one-line call of etcdmain.Main; this is that line.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
