"""Finds the repository root: git's top level."""

from __future__ import annotations

from pathlib import Path

from guard_adapters.git.repo import repo_root
from guard_core.errors import RepositoryError
from guard_core.plugins import hookimpl


@hookimpl
def guard_repository_root(start: Path) -> Path | None:
    try:
        return repo_root(start)
    except RepositoryError:
        return None
