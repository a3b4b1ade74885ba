"""Dotted module names of repository files, as Python would import them."""

from __future__ import annotations

from pathlib import Path, PurePosixPath


def module_name(repo: Path, path: str) -> str | None:
    """``src/pkg/sub/mod.py`` -> ``pkg.sub.mod`` (packages found by their ``__init__.py``; a
    folder without one inside a package is a namespace subpackage, ``pkg/sansio/``); a file
    outside any package is imported by its stem, as pytest's rootdir insertion does."""
    p = PurePosixPath(path)
    if p.suffix != ".py":
        return None
    parts = [] if p.stem == "__init__" else [p.stem]
    dirs = list(p.parent.parts)
    while dirs and _in_package(repo, dirs):
        parts.insert(0, dirs.pop())
    return ".".join(parts) or None


def _in_package(repo: Path, dirs: list[str]) -> bool:
    """Whether the folder ``dirs`` is imported as part of a dotted name: a package, or a
    folder without ``__init__.py`` whose parent is a package."""
    folder = repo.joinpath(*dirs)
    if (folder / "__init__.py").is_file():
        return True
    return len(dirs) > 1 and (folder.parent / "__init__.py").is_file()
