"""Dotted module names of repository files, as Python would import them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from guard_adapters.python.regions import ModuleRegions
from guard_adapters.python.statements import exports_unbound
from guard_core.model import RegionKind


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


def from_imports(regions: ModuleRegions, module: str | None) -> frozenset[str]:
    """What the module's own code imports by name (``from m import n`` as ``m.n``, a star
    import as ``m.*``), relative imports resolved: the names whose removal elsewhere makes
    importing it fail. Imports inside functions and classes count too."""
    tree = next((r.node for r in regions.regions.values() if r.kind is RegionKind.MODULE), None)
    if not isinstance(tree, ast.Module):
        return frozenset()
    package = module if regions.path.endswith("__init__.py") else (module or "").rpartition(".")[0]
    out: set[str] = set()
    for node in _statements(tree.body):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".") if package else []
            parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
            base = ".".join([*parts, base] if base else parts)
        out |= {f"{base}.{a.name}" for a in node.names}
    return frozenset(out)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included, without walking into expressions (an import is
    a statement: no expression holds one)."""
    for stmt in body:
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            yield from _statements(part.body)


def star_import_breaks(regions: ModuleRegions) -> bool:
    """Whether ``from <module> import *`` may fail now (:func:`exports_unbound`)."""
    module = next((r for r in regions.regions.values() if r.kind is RegionKind.MODULE), None)
    return module is None or exports_unbound(module)
