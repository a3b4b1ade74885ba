"""Finds the repository root (git's top level) and how far evidenced commits are from HEAD."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from guard_adapters.git.ancestry import commit_distances
from guard_adapters.git.repo import main_worktree, repo_root
from guard_core.bases import Distance, EvidenceBase
from guard_core.errors import RepositoryError
from guard_core.plugins import hookimpl


@hookimpl
def guard_repository_root(start: Path) -> Path | None:
    try:
        return repo_root(start)
    except RepositoryError:
        return None


@hookimpl
def guard_main_worktree(root: Path) -> Path | None:
    try:
        return main_worktree(root)
    except RepositoryError:
        return None


@hookimpl
def guard_commit_distances(repo: Path, bases: Sequence[EvidenceBase]) -> dict[str, Distance] | None:
    try:
        return commit_distances(repo, bases)
    except RepositoryError:
        return None
