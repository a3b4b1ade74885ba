"""Dotted module names of repository files, as Python would import them."""

from __future__ import annotations

from pathlib import Path, PurePosixPath


def module_name(repo: Path, path: str) -> str | None:
    """``src/pkg/sub/mod.py`` -> ``pkg.sub.mod`` (packages found by their ``__init__.py``);
    a file outside any package is imported by its stem, as pytest's rootdir insertion does."""
    p = PurePosixPath(path)
    if p.suffix != ".py":
        return None
    parts = [] if p.stem == "__init__" else [p.stem]
    dirs = list(p.parent.parts)
    while dirs and (repo.joinpath(*dirs) / "__init__.py").is_file():
        parts.insert(0, dirs.pop())
    return ".".join(parts) or None
