//go:build tools

// Package tools records k3s's datastore layer, github.com/k3s-io/kine, which cluster.sh builds for
// the k3s-shaped test nodes (as k3s embeds it: sqlite at <data-dir>/server/db/state.db), so that
// `go mod tidy` keeps what it needs in go.mod and go.sum.
package tools

import _ "github.com/k3s-io/kine"
