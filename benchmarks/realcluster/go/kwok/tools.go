//go:build tools

// Package tools pins KWOK (sigs.k8s.io/kwok), the node simulator the real-cluster harness runs:
// it keeps fake nodes Ready with leases and moves their pods through their phases.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
