"""Use cases, one place each: what a command, a page or a sweep worker asks kaudit to do.

A service composes the lower layers (readers, replay, scheduler, queries) for one use case, so
the Click commands, the Flask views and the sweep worker only parse their input, call a
service and render its answer. Two doors that answer the same question call the same service,
and so cannot disagree.
"""
