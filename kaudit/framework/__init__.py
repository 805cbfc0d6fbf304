"""The scheduling framework: statuses, cycle state, plugin interfaces, registry and runtime.

Mirrors ``pkg/scheduler/framework`` (``interface.go``, ``cycle_state.go``, ``types.go``) and
``pkg/scheduler/framework/runtime/framework.go`` of Kubernetes v1.34, shaped so that filter and
score plugins evaluate every candidate node in one NumPy expression.
"""
