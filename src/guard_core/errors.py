"""Errors Guard raises, each with a message a user can act on.

    GuardError
    ├── ConfigError            bad [tool.guard] table or GUARD_* variable
    ├── RepositoryError        not a git repository, no commits, unreadable diff
    ├── UnknownId              a function, test or file id the graph does not hold
    ├── StoreError             anything from the graph store
    │   ├── StoreUnavailable   FalkorDB cannot be reached or started
    │   └── SchemaMismatch     the graph was written by another schema version
    ├── IngestError            an ingest could not complete; earlier evidence is kept
    └── RunnerError            pytest could not be started

Adapters translate third-party exceptions into this tree at their boundary (``raise ... from exc``)
so that no redis, parser or subprocess exception leaks past a port.
"""

from __future__ import annotations


class GuardError(Exception):
    """Base of every error Guard raises on purpose.

    ``hint`` says what to do about it; the CLI prints it under the message.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} (hint: {self.hint})"


class ConfigError(GuardError):
    """The configuration could not be read or has an invalid value."""


class RepositoryError(GuardError):
    """The target is not a usable git repository, or its diff cannot be read."""


class UnknownId(GuardError):
    """An id given by a user or an agent names no node of the graph."""


class StoreError(GuardError):
    """The graph store failed."""


class StoreUnavailable(StoreError):
    """FalkorDB could not be reached (server mode) or started (embedded mode)."""


class SchemaMismatch(StoreError):
    """The graph was written by a different schema version of Guard."""


class IngestError(GuardError):
    """An ingest could not finish; the evidence of the previous ingest is kept."""


class RunnerError(GuardError):
    """The test runner could not be started."""


class RunTimedOut(RunnerError):
    """The tests did not finish within the time they were given (and were stopped)."""
