"""Which classes derive from code outside the repository.

Code Guard cannot see may read any attribute of such a class (click reads ``ParamType.name``,
Django reads ``Meta``), so a change to one of its attributes cannot be bounded by the readers
the index finds. Bases are followed through the repository's own modules (parsed with
``ast``); a base that cannot be followed counts as outside.
"""

from __future__ import annotations

import ast
import builtins
from collections import OrderedDict
from pathlib import Path
from typing import Any

# typing, abc and enum bases: subclassing them runs no code of the repository's or a registry's
STANDARD_BASES = frozenset(
    {
        "object",
        "ABC",
        "Protocol",
        "Generic",
        "NamedTuple",
        "TypedDict",
        "Enum",
        "IntEnum",
        "StrEnum",
        "Flag",
        "IntFlag",
    }
)
_PLAIN = STANDARD_BASES | {"Exception", "BaseException"} | set(dir(builtins))
_DEPTH = 8


def module_path(root: Path, dotted: str) -> Path | None:
    """The file of a repository module, from its dotted name (flat and ``src/`` layouts)."""
    rel = Path(*dotted.split("."))
    for base in (root, root / "src"):
        for candidate in (base / rel.with_suffix(".py"), base / rel / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


class ParsedFiles:
    """Parsed repository files, kept while their bytes stay the same: a slicer that lives
    across checks (the worker's) re-reads the files the bases live in, not re-parses them."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self._trees: OrderedDict[Path, tuple[bytes, ast.Module | None]] = OrderedDict()

    def tree(self, path: Path) -> ast.Module | None:
        try:
            data = path.read_bytes()
        except OSError:
            return None
        kept = self._trees.get(path)
        if kept is not None and kept[0] == data:
            self._trees.move_to_end(path)
            return kept[1]
        try:
            tree: ast.Module | None = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        self._trees[path] = (data, tree)
        while len(self._trees) > self.limit:
            self._trees.popitem(last=False)
        return tree


class BaseResolver:
    """Answers "does this class reach a base outside the repository?", caching parsed
    modules for one slice."""

    def __init__(self, root: Path, parsed: ParsedFiles | None = None) -> None:
        self.root = root
        self._trees: dict[str, ast.Module | None] = {}
        self._parsed = parsed if parsed is not None else ParsedFiles()
        self.applied: dict[int, tuple[ast.Module, Any]] = {}  # decorators.py, by tree

    def _tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            path = module_path(self.root, module)
            self._trees[module] = self._parsed.tree(path) if path else None
        return self._trees[module]

    def function(
        self, tree: ast.Module, module: str | None, name: str
    ) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The top-level function ``name`` is bound to in ``tree`` (defined there, or imported
        from a repository module), or None."""
        for _ in range(_DEPTH):
            found = next(
                (
                    s
                    for s in tree.body
                    if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == name
                ),
                None,
            )
            if found is not None:
                return found
            target = _imported(tree, name, module)
            mod, _, name = (target or "").rpartition(".")
            other = self._tree(mod) if mod else None
            if other is None:
                return None
            tree, module = other, mod
        return None

    def decorator(
        self, tree: ast.Module, module: str | None, node: ast.expr
    ) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function a bare decorator expression names: ``name``, or ``mod.name`` where
        ``mod`` is a repository module ``tree`` imports; None otherwise."""
        if isinstance(node, ast.Name):
            return self.function(tree, module, node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target = _imported(tree, node.value.id, module)
            other = self._tree(target) if target else None
            if other is not None and target is not None:
                return self.function(other, target, node.attr)
        return None

    def is_open(self, tree: ast.Module, module: str | None, qualname: str) -> bool:
        return self._open(tree, module, qualname, _DEPTH)

    def _open(self, tree: ast.Module, module: str | None, qualname: str, depth: int) -> bool:
        if depth <= 0:
            return True
        node = _find_class(tree, qualname)
        if node is None:  # re-exported: follow the import that binds the name
            target = _imported(tree, qualname, module) if "." not in qualname else None
            mod, _, name = (target or "").rpartition(".")
            other = self._tree(mod) if mod else None
            return other is None or self._open(other, mod, name, depth - 1)
        if node.keywords or node.decorator_list:  # a metaclass; @dataclass reads the fields
            return True
        return any(self._base_open(tree, module, b, depth - 1) for b in node.bases)

    def _base_open(self, tree: ast.Module, module: str | None, base: ast.expr, depth: int) -> bool:
        if isinstance(base, ast.Subscript):  # Generic[T], list[int]
            base = base.value
        dotted = _dotted(base)
        if dotted is None:
            return True
        head, _, rest = dotted.partition(".")
        if not rest and _find_class(tree, head) is not None:
            return self._open(tree, module, head, depth)
        target = _imported(tree, head, module)
        if target is None:
            return dotted not in _PLAIN
        full = f"{target}.{rest}" if rest else target
        mod, _, name = full.rpartition(".")
        other = self._tree(mod) if mod else None
        if other is None:
            return True  # a class of an installed package, or one that cannot be read
        return self._open(other, mod, name, depth)


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *parts])
    return None


def _find_class(tree: ast.Module, qualname: str) -> ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    found: ast.ClassDef | None = None
    for part in qualname.split("."):
        found = next((s for s in body if isinstance(s, ast.ClassDef) and s.name == part), None)
        if found is None:
            return None
        body = found.body
    return found


def _imported(tree: ast.Module, name: str, module: str | None) -> str | None:
    """The dotted name a top-level import binds to ``name``, or None."""
    package = (module or "").rpartition(".")[0]
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom):
            base = stmt.module or ""
            if stmt.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (stmt.level - 1)] if stmt.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            for alias in stmt.names:
                if (alias.asname or alias.name) == name:
                    return f"{base}.{alias.name}" if base else alias.name
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name:
                    return alias.name if alias.asname else name
    return None
