"""kaudit: trace replay and scheduling-decision audit for the Kubernetes scheduler.

kaudit ingests recorded cluster traces into an SQL event log, replays them through a
faithful Python re-implementation of kube-scheduler and explains every decision.
"""

__version__ = "0.1.0"

#: The kube-scheduler release whose behaviour kaudit mirrors, to the patch level: v1.34.2 is the
#: first v1.34 release whose TaintToleration reason no longer names the taint (upstream PR
#: #134740, cherry-picked by #135023) and the one whose feature-gate defaults kaudit keeps.
KUBERNETES_VERSION = "v1.34.2"
