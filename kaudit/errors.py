"""The exception hierarchy shared by every kaudit layer.

Each error carries the exit code the CLI should use: 2 for bad input or usage (a malformed
trace, an invalid configuration, a database at the wrong schema revision), 1 otherwise.
"""

from __future__ import annotations


class KauditError(Exception):
    """Base of every error kaudit reports to a user without a traceback."""

    exit_code = 1


class InputError(KauditError):
    """The user's input (a file, an option, a request) is invalid."""

    exit_code = 2


class TraceError(InputError):
    """A trace file is malformed; the message names ``FILE:LINE`` and what is wrong."""

    def __init__(self, source: str, line: int | None, reason: str) -> None:
        self.source = source
        self.line = line
        self.reason = reason
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {reason}")


class ConfigError(InputError):
    """A scheduler configuration, plugin argument or feature-gate setting is invalid.

    The message names the file and the field path, as upstream's validation does.
    """


class QuantityError(ValueError):
    """A Kubernetes resource quantity string cannot be parsed."""


class DatabaseError(KauditError):
    """The event-log database cannot be used as it is."""

    exit_code = 2


class SchemaOutOfDateError(DatabaseError):
    """The database schema is older than this kaudit; ``kaudit db upgrade`` fixes it."""


class UnknownObjectError(InputError):
    """A trace, run or object named by the user does not exist."""


class Interrupted(BaseException):
    """The process was asked to stop (SIGTERM): work in progress is marked failed, as after
    Ctrl-C. A BaseException, like KeyboardInterrupt, so that nothing swallows it."""


class ReplayStalledError(KauditError):
    """The replay stopped making progress in virtual time: its queues only cycle at one
    instant. A guard, so that no trace can make a replay loop forever."""


class UnreplayableEventError(KauditError):
    """A stored trace event the replay cannot use (ingest should have refused it): names the
    input (by its index in the trace's sources) and line, so the message can name the file."""

    exit_code = 2

    def __init__(self, source: int, line: int, reason: str, path: str | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = reason
        self.path = path
        where = f"{path}:{line}" if path is not None else f"source {source}, line {line}"
        super().__init__(f"{where}: {reason}")
