"""Trace readers: turn input files into validated watch events.

Readers know nothing of the scheduler or of SQL: each yields
:class:`~kaudit.readers.events.WatchEvent` or :class:`~kaudit.readers.events.Rejected` items,
and :mod:`kaudit.readers.ingest` decides what to store.
"""
