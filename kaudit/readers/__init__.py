"""Trace files in and out: readers that turn input files into validated watch events, ingest
that stores them as a trace, and writers that export traces in the same formats.

Each reader knows nothing of the scheduler or of SQL: it yields
:class:`~kaudit.readers.events.WatchEvent` or :class:`~kaudit.readers.events.Rejected` items,
and :mod:`kaudit.readers.ingest` decides what to store (one transaction per trace).
"""
