//go:build tools

// Package tools pins the upstream programs the real-cluster harness builds from this module:
// kube-apiserver, kube-scheduler and kube-controller-manager at the release kaudit mirrors.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
