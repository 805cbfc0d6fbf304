"""The scheduler: the plugin registry, profiles built from a configuration, the scheduling queue,
and the scheduling and binding cycles of one pod (upstream's ``pkg/scheduler``)."""
