"""kaudit: trace replay and scheduling-decision audit for the Kubernetes scheduler.

kaudit ingests recorded cluster traces into an SQL event log, replays them through a
faithful Python re-implementation of kube-scheduler and explains every decision.
"""

__version__ = "0.1.0"

#: The kube-scheduler release whose behaviour kaudit mirrors.
KUBERNETES_VERSION = "v1.34"
