"""Guard: which pytest tests must run after an edit, from a graph of code and evidence."""

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
    Level,
    Override,
    Reason,
    TrustComponents,
)
from guard_core.plugins import hookimpl

__all__ = [
    "ChangeKind",
    "ChangeSet",
    "ChangedFile",
    "ChangedRegion",
    "ConfigError",
    "CoverEdge",
    "Decision",
    "GuardError",
    "IngestError",
    "Level",
    "Override",
    "Reason",
    "RepositoryError",
    "RunnerError",
    "SchemaMismatch",
    "Settings",
    "StoreError",
    "StoreUnavailable",
    "TrustComponents",
    "hookimpl",
    "load_settings",
]
