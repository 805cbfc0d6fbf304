"""kube-scheduler's in-tree plugins, one module each (Kubernetes v1.34)."""
