"""The event log: typed record kinds, the one attempt codec, and the sinks a replay writes to.

Everything a replay decides reaches the store through here: the replay engine reports facts to
an :class:`~kaudit.eventlog.sink.EventSink`; queries, ``whatif`` and exports decode attempts
with :mod:`kaudit.eventlog.codec`.
"""
