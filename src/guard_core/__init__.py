"""Guard: which pytest tests must run after an edit, from a graph of code and evidence.

The public surface for host tools::

    from guard_core import Guard

    with Guard.open("/path/to/repo") as guard:
        decision = guard.check()        # Decision: level, tests, reasons (no test runs)
        report = guard.run()            # RunReport: the decision and pytest's outcomes
        guard.feedback("pkg/mod.py::f", "tests/test_x.py::test_y")

Everything raised is a :class:`GuardError` subclass with a ``hint``.
"""

from typing import TYPE_CHECKING, Any

from guard_core.config import Settings, load_settings
from guard_core.errors import (
    ConfigError,
    GuardError,
    IngestError,
    RepositoryError,
    RunnerError,
    SchemaMismatch,
    StoreError,
    StoreUnavailable,
)
from guard_core.model import (
    ChangedFile,
    ChangedRegion,
    ChangeKind,
    ChangeSet,
    CoverEdge,
    Decision,
    IntegrityFlag,
    Level,
    Override,
    Reason,
    TrustComponents,
)
from guard_core.plugins import hookimpl

if TYPE_CHECKING:
    from guard_core.api import Guard, RunReport


def __getattr__(name: str) -> Any:
    # the engine loads on first use: `guard --help` and the hooks need none of it
    if name in ("Guard", "RunReport"):
        from guard_core import api

        return getattr(api, name)
    raise AttributeError(f"module 'guard_core' has no attribute {name!r}")


__all__ = [
    "ChangeKind",
    "ChangeSet",
    "ChangedFile",
    "ChangedRegion",
    "ConfigError",
    "CoverEdge",
    "Decision",
    "Guard",
    "GuardError",
    "IngestError",
    "IntegrityFlag",
    "Level",
    "Override",
    "Reason",
    "RepositoryError",
    "RunReport",
    "RunnerError",
    "SchemaMismatch",
    "Settings",
    "StoreError",
    "StoreUnavailable",
    "TrustComponents",
    "hookimpl",
    "load_settings",
]
