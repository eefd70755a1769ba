//go:build tools

// Package tools names the upstream commands this module builds, so `go mod tidy` keeps them.
package tools

import _ "github.com/coredns/coredns"
