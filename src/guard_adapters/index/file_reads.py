"""What each region of one file reads, calls and imports, from a :class:`NameWalk` of its
syntax tree: the names resolved through the file's scopes, the lines that read them, the
statements of module and class bodies that read them, and the names a star import may bind."""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Protocol

from guard_adapters.python.name_walk import NameWalk
from guard_adapters.python.reads import literal_module
from guard_adapters.python.regions import ModuleRegions, Region
from guard_adapters.python.scopes import (
    BUILTIN,
    LOCAL,
    Access,
    Scope,
    name_of,
    qualified_names,
    resolve_relative,
)
from guard_core.index_model import StatementRead
from guard_core.model import CLASS_BODY, RegionKind

# calls that import a module named by their first argument and return it
DYNAMIC_IMPORTS = frozenset({"importlib.import_module", "importlib.__import__"})
RESOLVED = 0.9  # a name bound by an import or a module-level definition
SELF_METHOD = 0.7  # self.name(): the class's own method, unless a subclass overrides it


class Positioned(Protocol):
    lineno: int
    end_lineno: int | None


class FileReads:
    """What each region reads, calls and imports, from a :class:`NameWalk` of the file."""

    def __init__(self, regions: ModuleRegions, module: str | None, package: str | None) -> None:
        self.regions = regions
        self.module = module
        self.package = package
        self.refs: dict[str, set[str]] = defaultdict(set)
        # functions: name read -> the lines of the expressions that read it
        self.ref_lines: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        self.stmt_refs: dict[str, set[StatementRead]] = defaultdict(set)
        self.calls: dict[str, dict[str, float]] = defaultdict(dict)
        self.imports: set[str] = set()
        self.aliases: set[tuple[str, str]] = set()
        self.star_sources: set[str] = set()  # modules this file imports * from
        # names (with their attribute chains) bound nowhere in the file, or builtins: a star
        # import may bind them
        self.free: dict[str, set[str]] = defaultdict(set)
        self.stmt_free: dict[str, set[tuple[int, str]]] = defaultdict(set)
        self._inner: set[int] = set()
        self._accesses: dict[int, list[Access]] = {}
        self._scopes: dict[int, Scope] = {}

    def read(self, walk: NameWalk) -> FileReads:
        self._accesses, self._scopes = walk.accesses, walk.scopes
        for kind, node, context, scope in walk.reads:
            if kind == "call":
                self._call(node, scope)  # type: ignore[arg-type]
            elif kind == "import":
                self._import(node)  # type: ignore[arg-type]
            else:
                self._record(node, context, scope)  # type: ignore[arg-type]
        return self

    def _owner(self, node: Positioned) -> Region:
        return self.regions.regions[self.regions.owner(node.lineno)]

    def _class_of(self, region: Region) -> str | None:
        if region.kind is RegionKind.FUNCTION and region.parent:
            parent = self.regions.regions.get(region.parent)
            if parent is not None and parent.kind is RegionKind.CLASS_BODY:
                return parent.qualname.removesuffix(f".{CLASS_BODY}")
        return None

    def _dotted(self, node: object, scope: Scope | None) -> list[str]:
        out = []
        found = qualified_names(scope, node, self._accesses) if scope is not None else ()
        for name, source in found:
            if source == BUILTIN:
                continue
            if source == LOCAL:
                if "<locals>" in name:
                    continue
                out.append(f"{self.module}.{name}" if self.module else name)
            else:
                resolved = resolve_relative(name, self.module, self.package)
                if resolved:
                    out.append(resolved)
        return out

    def _self_attr(self, node: ast.Attribute, region: Region) -> str | None:
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            cls = self._class_of(region)
            if cls:
                prefix = f"{self.module}.{cls}" if self.module else cls
                return f"{prefix}.{node.attr}"
        return None

    def _record(self, node: Positioned, context: str, scope: Scope | None) -> None:
        if id(node) in self._inner:
            return
        if isinstance(node, ast.Attribute):
            chain: ast.expr = node
            while isinstance(chain, ast.Attribute):
                chain = chain.value
                self._inner.add(id(chain))
        if context == "del" and not isinstance(node, ast.Attribute):
            self._deleted(node)  # `del name` needs the name, which a star import may bind
        if context != "load":
            return
        region = self._owner(node)
        names = self._dotted(node, scope)
        if name_of(node) == "__doc__" and self.module:
            names.append(f"{self.module}.__doc__")  # the module's docstring, read bare
        if isinstance(node, ast.Attribute):
            own = self._self_attr(node, region)
            if own:
                names.append(own)
        self.refs[region.id].update(names)
        if region.kind is RegionKind.FUNCTION and names:
            lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            for name in names:
                self.ref_lines[region.id][name].update(lines)
        free = self._free_chain(node)
        if free:
            self.free[region.id].add(free)
        if region.kind is not RegionKind.FUNCTION and (names or free):
            for index, stmt in enumerate(region.bindings):
                if stmt.start <= node.lineno <= stmt.end:
                    self.stmt_refs[region.id].update(StatementRead(index, n) for n in names)
                    if free:
                        self.stmt_free[region.id].add((index, free))
                    break

    def _deleted(self, node: Positioned) -> None:
        free = self._free_chain(node)
        if not free:
            return
        region = self._owner(node)
        self.free[region.id].add(free)
        for index, stmt in enumerate(
            region.bindings if region.kind is not RegionKind.FUNCTION else ()
        ):
            if stmt.start <= node.lineno <= stmt.end:
                self.stmt_free[region.id].add((index, free))
                break

    def _free_chain(self, node: object) -> str | None:
        """``a.b.c`` for a read whose root name the file binds by no definition of its own (a
        builtin, an import, nothing): a ``from m import *`` may bind it."""
        parts: list[str] = []
        root = node
        while isinstance(root, ast.Attribute):
            parts.append(root.attr)
            root = root.value
        name = name_of(root)
        if name is None:
            return None
        scope = self._scopes.get(id(root))
        found = qualified_names(scope, root, self._accesses) if scope is not None else set()
        if found and all(source == LOCAL for _, source in found):
            return None
        return ".".join([name, *reversed(parts)])

    def _call(self, node: ast.Call, scope: Scope | None) -> None:
        region = self._owner(node)
        func = node.func
        self._dynamic_import(node, scope)
        if isinstance(func, ast.Attribute):
            own = self._self_attr(func, region)
            if own:
                self.calls[region.id].setdefault(own, SELF_METHOD)
        if isinstance(func, ast.Name | ast.Attribute):
            for target in self._dotted(func, self._scopes.get(id(func), scope)):
                self.calls[region.id][target] = RESOLVED

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.imports.add(alias.name)
                if alias.name == "__doc__":
                    self._doc_read(alias)
            return
        if node.module == "__doc__":
            self._doc_read(node)
        base = node.module or ""
        rel = "." * node.level
        target = resolve_relative(rel + base, self.module, self.package) if rel else base
        if not target:
            return
        self.imports.add(target)
        if len(node.names) == 1 and node.names[0].name == "*":
            # every name of ``target`` may now be read here unqualified, and re-exported
            self.star_sources.add(target)
            if self._owner(node).kind is RegionKind.MODULE and self.module:
                self.aliases.add((f"{self.module}.*", f"{target}.*"))
            return
        top_level = self._owner(node).kind is RegionKind.MODULE
        for alias in node.names:  # `from pkg import submodule` imports pkg.submodule
            self.imports.add(f"{target}.{alias.name}")
            if alias.name == "__doc__":
                self._doc_read(alias)
            if top_level and self.module:  # a re-export: module.local is target.name
                self.aliases.add(
                    (f"{self.module}.{alias.asname or alias.name}", f"{target}.{alias.name}")
                )

    def _doc_read(self, node: Positioned) -> None:
        """An import naming ``__doc__`` reads the module's own docstring, to the index."""
        if self.module:
            self._add_ref(node, f"{self.module}.__doc__")

    def _dynamic_import(self, node: ast.Call, scope: Scope | None) -> None:
        """``importlib.import_module("a.b")`` and ``__import__("a.b")`` import ``a.b`` and
        hold the module (``__import__`` also its top package). By a computed or relative
        name they may hold any module: not an index fact (a module first imported so is
        imported by no file under its name: :mod:`guard_core.module_names`)."""
        func = node.func
        builtin = isinstance(func, ast.Name) and func.id == "__import__"
        if not builtin and not any(
            n in DYNAMIC_IMPORTS for n in self._dotted(func, self._scopes.get(id(func), scope))
        ):
            return
        name = literal_module(node)
        if name is None:
            return
        self.imports.add(name)
        self._add_ref(node, name)
        if builtin and "." in name:
            self._add_ref(node, name.partition(".")[0])

    def _add_ref(self, node: Positioned, name: str) -> None:
        """A read of ``name`` made at ``node``'s line."""
        region = self._owner(node)
        self.refs[region.id].add(name)
        if region.kind is RegionKind.FUNCTION:
            self.ref_lines[region.id][name].update(range(node.lineno, node.lineno + 1))
            return
        for index, stmt in enumerate(region.bindings):
            if stmt.start <= node.lineno <= stmt.end:
                self.stmt_refs[region.id].add(StatementRead(index, name))
                break
