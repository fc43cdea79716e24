module monis.app/mlog

go 1.22

require k8s.io/klog/v2 v2.120.1

require github.com/go-logr/logr v1.4.1 // indirect
