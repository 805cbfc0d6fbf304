"""Kubernetes objects as the scheduler reads them: pods, nodes, selectors, resources, the kinds
kaudit replays, timestamps, and PATCH bodies applied as the API server applies them."""
