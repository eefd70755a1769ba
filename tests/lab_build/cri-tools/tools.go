//go:build tools

// Package tools names the upstream commands this module builds, so `go mod tidy` keeps them.
package tools

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
