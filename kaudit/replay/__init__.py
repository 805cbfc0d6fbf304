"""Replaying a stored trace: the virtual clock, trace events applied to the scheduler's cache and
queue, the engine that drives the scheduler, and the run it writes to the event log."""
