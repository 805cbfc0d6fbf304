"""GPU-sharing scheduling from the FGD paper ("Beware of Fragmentation", USENIX ATC'23), as
kaudit plugins: an optional module, registered through the ``kaudit.plugins`` entry point and
enabled by an ordinary ``KubeSchedulerConfiguration``. It uses only kaudit's documented
out-of-tree plugin API and the cluster state's GPU devices (``kaudit/cluster/gpus.py``).
"""
