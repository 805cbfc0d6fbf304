"""Kubernetes objects as the scheduler reads them: pods, nodes, selectors, resources."""
