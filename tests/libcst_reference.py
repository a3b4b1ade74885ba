"""The static index's name reads as libcst's metadata computes them: the reference the
``ast`` indexer (:mod:`guard_adapters.index.file_reads`) must agree with, fact for fact.

This was Guard's indexer until its metadata passes became most of an ingest's time; it stays
here, unchanged, so the identity test and ``benchmarks/index_identity.py`` can compare the two
on any code.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

import libcst as cst
from libcst.metadata import (
    ByteSpanPositionProvider,
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    QualifiedNameSource,
    ScopeProvider,
)

from guard_adapters.index.file_reads import DYNAMIC_IMPORTS, RESOLVED, SELF_METHOD
from guard_adapters.index.index import RawIndex, assemble, content_sha, package_of, unparsable
from guard_adapters.pytest.layout import PytestLayout
from guard_adapters.python.regions import ModuleRegions, Region, extract_regions
from guard_adapters.python.scopes import resolve_relative
from guard_core.index_model import StatementRead
from guard_core.model import CLASS_BODY, RegionKind


def reference_index_file(
    path: str, data: bytes, module: str | None, layout: PytestLayout, is_test: bool
) -> RawIndex:
    sha = content_sha(data)
    try:
        text = data.decode("utf-8")
        regions = extract_regions(path, text)
        wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
    except (
        UnicodeDecodeError,
        SyntaxError,
        ValueError,
        RecursionError,
        MemoryError,
        cst.ParserSyntaxError,
    ) as exc:
        return unparsable(path, sha, module, exc)
    visitor = _RefVisitor(regions, module, package_of(path, module), data)
    wrapper.visit(visitor)
    return assemble(path, sha, module, regions, visitor, layout, is_test)


class _RefVisitor(cst.CSTVisitor):
    # Byte spans, not PositionProvider: half the cost, and a line number is all we need.
    # Qualified names come from the scopes, asked for the nodes recorded only: the
    # QualifiedNameProvider walks the whole tree once more to offer them for every node
    # (a third of the index's time on Flask), with the same answer.
    METADATA_DEPENDENCIES = (
        ByteSpanPositionProvider,
        ScopeProvider,
        ExpressionContextProvider,
    )

    def __init__(
        self, regions: ModuleRegions, module: str | None, package: str | None, data: bytes
    ) -> None:
        super().__init__()
        self.line_starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
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
        self._imports = 0  # inside an import statement: its names are bound, not read
        self._inner: set[int] = set()
        self._functions: list[bool] = []  # enclosing definitions, innermost last: a def?
        self._unevaluated: set[int] = set()  # annotations no running code evaluates

    def _owner(self, node: cst.CSTNode) -> Region:
        line = self._line(node)
        return self.regions.regions[self.regions.owner(line)]

    def _line(self, node: cst.CSTNode) -> int:
        offset = self.get_metadata(ByteSpanPositionProvider, node).start
        return bisect.bisect_right(self.line_starts, offset)

    def _lines(self, node: cst.CSTNode) -> range:
        """Every line ``node`` spans."""
        span = self.get_metadata(ByteSpanPositionProvider, node)
        first = bisect.bisect_right(self.line_starts, span.start)
        last = bisect.bisect_right(self.line_starts, span.start + max(span.length - 1, 0))
        return range(first, last + 1)

    def _class_of(self, region: Region) -> str | None:
        if region.kind is RegionKind.FUNCTION and region.parent:
            parent = self.regions.regions.get(region.parent)
            if parent is not None and parent.kind is RegionKind.CLASS_BODY:
                return parent.qualname.removesuffix(f".{CLASS_BODY}")
        return None

    def _dotted(self, node: cst.CSTNode) -> list[str]:
        out = []
        scope = self.get_metadata(ScopeProvider, node, None)
        for q in scope.get_qualified_names_for(node) if scope is not None else ():
            if q.source is QualifiedNameSource.BUILTIN:
                continue
            if q.source is QualifiedNameSource.LOCAL:
                if "<locals>" in q.name:
                    continue
                out.append(f"{self.module}.{q.name}" if self.module else q.name)
            else:
                resolved = resolve_relative(q.name, self.module, self.package)
                if resolved:
                    out.append(resolved)
        return out

    def _self_attr(self, node: cst.Attribute, region: Region) -> str | None:
        if isinstance(node.value, cst.Name) and node.value.value in ("self", "cls"):
            cls = self._class_of(region)
            if cls:
                prefix = f"{self.module}.{cls}" if self.module else cls
                return f"{prefix}.{node.attr.value}"
        return None

    def _mark_inner(self, node: cst.BaseExpression) -> None:
        while isinstance(node, cst.Attribute):
            node = node.value
            self._inner.add(id(node))

    def _record(self, node: cst.Name | cst.Attribute) -> None:
        if id(node) in self._inner:
            return
        if isinstance(node, cst.Attribute):
            self._mark_inner(node)
        context = self.get_metadata(ExpressionContextProvider, node, None)
        if context is ExpressionContext.DEL and isinstance(node, cst.Name):
            self._deleted(node)  # `del name` needs the name, which a star import may bind
        if context is not ExpressionContext.LOAD:
            return
        region = self._owner(node)
        names = self._dotted(node)
        if isinstance(node, cst.Name) and node.value == "__doc__" and self.module:
            names.append(f"{self.module}.__doc__")  # the module's docstring, read bare
        if isinstance(node, cst.Attribute):
            own = self._self_attr(node, region)
            if own:
                names.append(own)
        self.refs[region.id].update(names)
        if region.kind is RegionKind.FUNCTION and names:
            lines = self._lines(node)
            for name in names:
                self.ref_lines[region.id][name].update(lines)
        free = None if self._imports else self._free_chain(node)
        if free:
            self.free[region.id].add(free)
        if region.kind is not RegionKind.FUNCTION and (names or free):
            line = self._line(node)
            for index, stmt in enumerate(region.bindings):
                if stmt.start <= line <= stmt.end:
                    self.stmt_refs[region.id].update(StatementRead(index, n) for n in names)
                    if free:
                        self.stmt_free[region.id].add((index, free))
                    break

    def _deleted(self, node: cst.Name) -> None:
        free = self._free_chain(node)
        if not free:
            return
        region = self._owner(node)
        self.free[region.id].add(free)
        line = self._line(node)
        for index, stmt in enumerate(
            region.bindings if region.kind is not RegionKind.FUNCTION else ()
        ):
            if stmt.start <= line <= stmt.end:
                self.stmt_free[region.id].add((index, free))
                break

    def _free_chain(self, node: cst.Name | cst.Attribute) -> str | None:
        """``a.b.c`` for a read whose root name the file binds by no definition of its own (a
        builtin, an import, nothing): a ``from m import *`` may bind it."""
        parts: list[str] = []
        root: cst.BaseExpression = node
        while isinstance(root, cst.Attribute):
            parts.append(root.attr.value)
            root = root.value
        if not isinstance(root, cst.Name):
            return None
        scope = self.get_metadata(ScopeProvider, root, None)
        found = scope.get_qualified_names_for(root) if scope is not None else set()
        if found and all(q.source is QualifiedNameSource.LOCAL for q in found):
            return None
        return ".".join([root.value, *reversed(parts)])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(True)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._functions.append(False)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._functions.pop()

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        # a local variable's annotation is never evaluated; any other may be, now or later
        # (``from __future__ import annotations`` only defers it: ``get_type_hints``, a
        # dataclass-like base, ``singledispatch`` read it by name)
        if self._functions and self._functions[-1]:
            self._unevaluated.add(id(node.annotation))

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        return id(node) not in self._unevaluated  # False: its names are not visited

    def visit_Name(self, node: cst.Name) -> None:
        self._record(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._record(node)

    def visit_Call(self, node: cst.Call) -> None:
        region = self._owner(node)
        func = node.func
        if isinstance(func, cst.Attribute):
            own = self._self_attr(func, region)
            if own:
                self.calls[region.id].setdefault(own, SELF_METHOD)
        if isinstance(func, cst.Name | cst.Attribute):
            for target in self._dotted(func):
                self.calls[region.id][target] = RESOLVED
        self._dynamic_import(node)

    def _dynamic_import(self, node: cst.Call) -> None:
        builtin = isinstance(node.func, cst.Name) and node.func.value == "__import__"
        if not builtin and not any(n in DYNAMIC_IMPORTS for n in self._dotted(node.func)):
            return
        first = node.args[0].value if node.args and not node.args[0].keyword else None
        strings = cst.SimpleString | cst.ConcatenatedString
        name = first.evaluated_value if isinstance(first, strings) else None
        if not isinstance(name, str) or not name or name.startswith("."):
            return
        positional = [a for a in node.args if not a.keyword]
        level = positional[4].value if len(positional) > 4 else None
        level = next(
            (a.value for a in node.args if a.keyword and a.keyword.value == "level"), level
        )
        if level is not None and not (isinstance(level, cst.Integer) and level.value == "0"):
            return
        self.imports.add(name)
        self._add_ref(node, name)
        if builtin and "." in name:
            self._add_ref(node, name.partition(".")[0])

    def _add_ref(self, node: cst.CSTNode, name: str) -> None:
        region = self._owner(node)
        self.refs[region.id].add(name)
        line = self._line(node)
        if region.kind is RegionKind.FUNCTION:
            self.ref_lines[region.id][name].add(line)
            return
        for index, stmt in enumerate(region.bindings):
            if stmt.start <= line <= stmt.end:
                self.stmt_refs[region.id].add(StatementRead(index, name))
                break

    def leave_Import(self, original_node: cst.Import) -> None:
        self._imports -= 1

    def leave_ImportFrom(self, original_node: cst.ImportFrom) -> None:
        self._imports -= 1

    def visit_Import(self, node: cst.Import) -> None:
        self._imports += 1
        for alias in node.names:
            self.imports.add(cst.Module([]).code_for_node(alias.name))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._imports += 1
        base = cst.Module([]).code_for_node(node.module) if node.module else ""
        rel = "." * len(node.relative)
        target = resolve_relative(rel + base, self.module, self.package) if rel else base
        if not target:
            return
        self.imports.add(target)
        if isinstance(node.names, cst.ImportStar):
            # every name of ``target`` may now be read here unqualified, and re-exported
            self.star_sources.add(target)
            if self._owner(node).kind is RegionKind.MODULE and self.module:
                self.aliases.add((f"{self.module}.*", f"{target}.*"))
            return
        top_level = self._owner(node).kind is RegionKind.MODULE
        for alias in node.names:  # `from pkg import submodule` imports pkg.submodule
            name = cst.Module([]).code_for_node(alias.name)
            self.imports.add(f"{target}.{name}")
            if top_level and self.module:  # a re-export: module.local is target.name
                local = (
                    alias.asname.name.value
                    if alias.asname and isinstance(alias.asname.name, cst.Name)
                    else name
                )
                self.aliases.add((f"{self.module}.{local}", f"{target}.{name}"))
