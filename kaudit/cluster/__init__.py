"""The scheduler's cache: column-wise cluster state, selectors over it, and objects applied to it.

Plays upstream's ``pkg/scheduler/backend/cache`` (Kubernetes v1.34). It sits below the framework
and the plugins, which read it, and above :mod:`kaudit.model`, whose parsed objects it holds.
"""
