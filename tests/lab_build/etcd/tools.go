//go:build tools

// Package tools names the upstream commands this module builds, so `go mod tidy` keeps them.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
