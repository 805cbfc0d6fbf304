"""A real Kubernetes control plane on loopback (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager built from their Go modules, KWOK for the nodes), a seeded workload
driver, and the end-to-end fidelity run: record, ingest the recording and the audit log,
audit every decision of the real scheduler, and report the agreement."""
