"""The pytest projects a repository holds: the root's, and every subfolder whose own
configuration file sets pytest up (a monorepo's ``services/api/pyproject.toml``). pytest run at
the root never runs a subfolder project as its own configuration says, so each is run from its
own folder."""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from guard_adapters.git.repo import tracked_files
from guard_adapters.pytest.layout import CONFIG_FILES, pytest_options, split_option

_CONFIG_NAMES = frozenset(name for name, _ in CONFIG_FILES)


# pytest's default ``norecursedirs``: folders it never collects from
_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")


def subprojects(repo: Path) -> tuple[str, ...]:
    """The folders below the root (repo-relative, sorted) that hold a pytest configuration,
    except those the root's pytest never recurses into (``norecursedirs``: test data such as
    example projects with deliberately failing tests)."""
    root = pytest_options(repo) or {}
    skip = split_option(root.get("norecursedirs")) or _NORECURSE
    folders = {
        str(PurePosixPath(path).parent)
        for path in tracked_files(repo)
        if "/" in path and PurePosixPath(path).name in _CONFIG_NAMES
    }
    return tuple(
        sorted(f for f in folders if not _skipped(f, skip) and pytest_options(repo / f) is not None)
    )


def _skipped(folder: str, patterns: Sequence[str]) -> bool:
    """Whether pytest would not recurse into ``folder`` (a pattern matches one of its parts,
    or the path itself)."""
    parts = PurePosixPath(folder).parts
    return any(
        fnmatch.fnmatch(part, p) or fnmatch.fnmatch(folder, p) for p in patterns for part in parts
    )


def project_of(test: str, projects: Sequence[str]) -> str:
    """The project folder a test id (or test file) belongs to: the deepest one holding it,
    "" for the root's."""
    path = test.split("::", 1)[0]
    holding = [p for p in projects if path.startswith(p.rstrip("/") + "/")]
    return max(holding, key=len, default="")


def group_by_project(tests: Iterable[str], projects: Sequence[str]) -> dict[str, list[str]]:
    """The tests of each project, keyed by its folder ("" the root's), in their order."""
    groups: dict[str, list[str]] = {}
    for test in tests:
        groups.setdefault(project_of(test, projects), []).append(test)
    return groups


def relative_to_project(test: str, project: str) -> str:
    """A repo-relative id as pytest names it when run from ``project``."""
    if not project:
        return test
    path, sep, rest = test.partition("::")
    return posixpath.relpath(path, project) + sep + rest


def nested_in(project: str, projects: Sequence[str]) -> list[str]:
    """The projects inside ``project`` (its own run must leave them to their own runs)."""
    prefix = project.rstrip("/") + "/" if project else ""
    return [p for p in projects if p != project and p.startswith(prefix)]
