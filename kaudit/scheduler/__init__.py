"""Scheduling one pod: cluster state, the scheduling cycle, and what it decided and why."""
