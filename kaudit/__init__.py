"""kaudit: trace replay and scheduling-decision audit for the Kubernetes scheduler.

kaudit ingests recorded cluster traces into an SQL event log, replays them through a
faithful Python re-implementation of kube-scheduler and explains every decision.
"""

__version__ = "0.1.0"

#: The kube-scheduler release kaudit mirrors by default, to the patch level. Only its name is
#: here: everything that release is made of (feature gates, default plugins, API defaults and
#: ungated behaviour changes such as v1.34.2's TaintToleration reason) is in
#: ``kaudit.versions``, whose ``DEFAULT`` is the release of this name.
KUBERNETES_VERSION = "v1.37.2"
