"""Differential tests of kaudit against upstream kube-scheduler's own code (the Go oracle
programs of ``k8s-<version>/``, built by :mod:`tests.oracle.build`)."""
