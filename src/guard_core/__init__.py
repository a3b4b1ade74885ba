"""Guard: which pytest tests must run after an edit, from a graph of code and evidence.

The public surface for host tools::

    from guard_core import Guard

    with Guard.open("/path/to/repo") as guard:
        decision = guard.check()        # Decision: level, tests, reasons (no test runs)
        report = guard.run()            # RunReport: the decision and pytest's outcomes
        guard.feedback("pkg/mod.py::f", "tests/test_x.py::test_y")

Everything raised is a :class:`GuardError` subclass with a ``hint``.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guard_core.api import Guard, RunReport
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

# Every public name loads on first use: a light entry point (the warm worker's client,
# `pytest --guard` answered by the worker) may import one small module of the core without
# paying for attrs, pluggy and the engine.
_HOMES = {
    "guard_core.api": ("Guard", "RunReport"),
    "guard_core.config": ("Settings", "load_settings"),
    "guard_core.errors": (
        "ConfigError", "GuardError", "IngestError", "RepositoryError", "RunnerError",
        "SchemaMismatch", "StoreError", "StoreUnavailable",
    ),
    "guard_core.model": (
        "ChangeKind", "ChangeSet", "ChangedFile", "ChangedRegion", "CoverEdge", "Decision",
        "IntegrityFlag", "Level", "Override", "Reason", "TrustComponents",
    ),
    "guard_core.plugins": ("hookimpl",),
}  # fmt: skip
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'guard_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
