"""Replaying a trace: virtual clock, scheduling queue, and the engine that drives the scheduler."""
