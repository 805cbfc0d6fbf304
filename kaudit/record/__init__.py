"""Record a live cluster as a kaudit native trace: list and watch the kinds replay uses.

:mod:`~kaudit.model.kinds` names the recorded kinds, :mod:`~kaudit.record.client` talks to the
API server through the official Kubernetes client, :mod:`~kaudit.record.recorder` runs one
list/watch loop per kind (as client-go's reflector does) and :mod:`~kaudit.record.writer` writes
the events as JSON Lines. ``docs/recording.md`` describes the behaviour.
"""
