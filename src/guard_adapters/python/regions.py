"""Regions of a Python module: the code units Guard gives ids to, and which lines each owns.

A region is a function (``path::Qual.name``), a class body (``path::Cls.<body>``) or the module's
top-level code (``path::<module>``). Every line of a file has exactly one owner, so every change
and every executed line lands somewhere. A function owns its body; its decorators and ``def``
line belong to the enclosing region, because they run when the enclosing code runs.

Parsing uses the stdlib ``ast``: it is 50x faster than libcst here and ignores comments and
formatting, which is what comparing two versions of a region needs. The slicer, the indexer and
the coverage mapper all take their ids from this one module so the ids always agree.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

import attrs

from guard_adapters.python.dumps import docstring_of, dump_statements, header_dump
from guard_adapters.python.memo import is_memo
from guard_adapters.python.reads import (
    ModuleFacts,
    Span,
    attribute_read_spans,
    has_dynamic_dispatch,
)
from guard_adapters.python.statements import (
    Statement,
    defined_names,
    statement_info,
    statement_span,
)
from guard_adapters.python.syntax import DefNode, FunctionNode, last_name
from guard_core.model import CLASS_BODY, MODULE_SCOPE, RegionKind, node_id


@attrs.frozen(slots=False)
class Region:
    """One function, class body or module body.

    The normalised forms (``header``, ``doc``, ``body``, ``statements``) are computed on first
    use: mapping coverage lines needs only the spans, and comparing two versions needs them
    only for regions whose text differs.
    """

    id: str
    qualname: str
    name: str
    kind: RegionKind
    start: int  # first line, decorators included
    end: int
    def_line: int  # the ``def``/``class`` line (1 for a module)
    decorators: tuple[str, ...] = ()
    parent: str | None = None  # id of the enclosing region
    text: str = ""  # the region's source lines, verbatim
    node: ast.AST | None = attrs.field(default=None, eq=False, repr=False)
    module: ModuleFacts | None = attrs.field(default=None, eq=False, repr=False)

    @functools.cached_property
    def header(self) -> str:
        """Decorators, signature, bases: what runs when the definition runs."""
        return header_dump(self.node) if isinstance(self.node, DefNode) else ""

    @functools.cached_property
    def doc(self) -> str | None:
        body = getattr(self.node, "body", None)
        return docstring_of(body) if isinstance(body, list) else None

    @functools.cached_property
    def body(self) -> str:
        """What runs when the function is called (functions only)."""
        if not isinstance(self.node, ast.FunctionDef | ast.AsyncFunctionDef):
            return ""
        stmts = self.node.body[1:] if docstring_of(self.node.body) is not None else self.node.body
        return "\n".join(dump_statements(stmts, keep_header=True))

    @functools.cached_property
    def statements(self) -> tuple[Statement, ...]:
        """Top-level statements (class and module bodies only)."""
        if not isinstance(self.node, ast.ClassDef | ast.Module):
            return ()
        dumps = dump_statements(self.node.body, keep_header=False)
        local = defined_names(self.node.body)
        return tuple(
            statement_info(s, d, local) for s, d in zip(self.node.body, dumps, strict=True)
        )

    @functools.cached_property
    def bindings(self) -> tuple[Statement, ...]:
        """Like :attr:`statements` (spans, names bound, side effects) without normal forms."""
        if not isinstance(self.node, ast.ClassDef | ast.Module):
            return ()
        local = defined_names(self.node.body)
        return tuple(statement_info(s, "", local) for s in self.node.body)

    @functools.cached_property
    def attributes(self) -> frozenset[str]:
        """Attribute names this region's own code reads on any object (``x.name``,
        ``getattr(x, "name")``); ``*`` when it reads attributes by computed names (``vars``,
        ``dir``, ``__dict__``, ``getattr`` with a variable, ``eval``)."""
        return frozenset(self.attribute_spans)

    @functools.cached_property
    def attribute_spans(self) -> dict[str, frozenset[Span]]:
        """:attr:`attributes`, each with the line spans of the expressions that read it."""
        if self.node is None:
            return {}
        if self.module is None:
            return attribute_read_spans(self.node)
        module = self.module
        own = module.own_methods(self.node)
        return attribute_read_spans(self.node, module.stdlib_names, module.recorded_calls, own)

    @functools.cached_property
    def dynamic_dispatch(self) -> bool:
        return isinstance(
            self.node, ast.FunctionDef | ast.AsyncFunctionDef
        ) and has_dynamic_dispatch(self.node)

    @functools.cached_property
    def memo(self) -> bool:
        """A function that keeps what it computed in a container that outlives the call (a
        module-level dict, ``self._cache``, ``cls._registry``) and reads it back: a call that
        finds the entry runs none of the code that computed it."""
        return isinstance(self.node, ast.FunctionDef | ast.AsyncFunctionDef) and is_memo(self.node)


@attrs.frozen(slots=False)
class ModuleRegions:
    """All regions of one file and the owner of each line."""

    path: str
    regions: dict[str, Region]
    owners: tuple[str, ...]  # owners[line - 1] is the id of the region that owns ``line``
    has_code: bool = True  # False: no statement at all (an empty ``__init__.py``)

    def owner(self, line: int) -> str:
        if 1 <= line <= len(self.owners):
            return self.owners[line - 1]
        return node_id(self.path, MODULE_SCOPE)

    def functions(self) -> Iterator[Region]:
        return (r for r in self.regions.values() if r.kind is RegionKind.FUNCTION)


def _body_start(node: FunctionNode) -> int:
    body = node.body
    first = body[0]
    if docstring_of(body) is not None and len(body) > 1:
        first = body[1]
    return first.lineno if first.lineno > node.lineno else node.lineno


class _Collector:
    def __init__(self, path: str, lines: int, source_lines: list[str], facts: ModuleFacts) -> None:
        self.path = path
        self.lines = source_lines
        self.facts = facts
        self.regions: dict[str, Region] = {}
        self.owners: list[str] = [node_id(path, MODULE_SCOPE)] * lines
        self.seen: dict[str, int] = {}

    def paint(self, start: int, end: int, rid: str) -> None:
        for line in range(max(start, 1), min(end, len(self.owners)) + 1):
            self.owners[line - 1] = rid

    def unique(self, qualname: str, node: DefNode) -> str:
        for deco in node.decorator_list:
            if (
                isinstance(deco, ast.Attribute)
                and deco.attr in ("setter", "getter", "deleter")
                and isinstance(deco.value, ast.Name)
                and deco.value.id == node.name
            ):
                qualname = f"{qualname}.{deco.attr}"
        count = self.seen.get(qualname, 0) + 1
        self.seen[qualname] = count
        return qualname if count == 1 else f"{qualname}#{count}"

    def walk(self, stmts: list[ast.stmt], prefix: str, parent: str, in_function: bool) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self.function(stmt, prefix, parent)
            elif isinstance(stmt, ast.ClassDef):
                self.klass(stmt, prefix, parent)
            else:
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    for child in getattr(stmt, field, None) or ():
                        body = (
                            child.body
                            if isinstance(child, ast.ExceptHandler | ast.match_case)
                            else [child]
                        )
                        self.walk(body, prefix, parent, in_function)

    def _add(
        self,
        rid: str,
        qualname: str,
        kind: RegionKind,
        node: FunctionNode | ast.ClassDef,
        span: tuple[int, int],
        parent: str,
    ) -> None:
        """The region of a def or a class, over the lines ``span``."""
        start, end = span
        self.regions[rid] = Region(
            id=rid,
            qualname=qualname,
            name=node.name,
            kind=kind,
            start=start,
            end=end,
            def_line=node.lineno,
            decorators=tuple(last_name(d) for d in node.decorator_list),
            parent=parent,
            text="".join(self.lines[start - 1 : end]),
            node=node,
            module=self.facts,
        )

    def function(self, node: FunctionNode, prefix: str, parent: str) -> None:
        qualname = self.unique(prefix + node.name, node)
        rid = node_id(self.path, qualname)
        start, end = statement_span(node)
        body_start = _body_start(node)
        self._add(rid, qualname, RegionKind.FUNCTION, node, (start, end), parent)
        self.paint(body_start, end, rid)
        self.walk(node.body, f"{qualname}.<locals>.", rid, in_function=True)

    def klass(self, node: ast.ClassDef, prefix: str, parent: str) -> None:
        qualname = self.unique(prefix + node.name, node)
        rid = node_id(self.path, f"{qualname}.{CLASS_BODY}")
        start, end = statement_span(node)
        self._add(
            rid, f"{qualname}.{CLASS_BODY}", RegionKind.CLASS_BODY, node, (start, end), parent
        )
        self.paint(start, end, rid)
        self.walk(node.body, f"{qualname}.", rid, in_function=False)


def extract_regions(path: str, source: str, tree: ast.Module | None = None) -> ModuleRegions:
    """Regions of ``source`` (raises ``SyntaxError``/``ValueError`` on unparsable code)."""
    tree = tree if tree is not None else ast.parse(source, filename=path)
    source_lines = source.splitlines(keepends=True)
    lines = source.count("\n") + 1
    facts = ModuleFacts(path, tree)
    collector = _Collector(path, lines, source_lines, facts)
    module_id = node_id(path, MODULE_SCOPE)
    collector.regions[module_id] = Region(
        id=module_id,
        qualname=MODULE_SCOPE,
        name=MODULE_SCOPE,
        kind=RegionKind.MODULE,
        start=1,
        end=lines,
        def_line=1,
        text=source,
        node=tree,
        module=facts,
    )
    collector.walk(tree.body, "", module_id, in_function=False)
    return ModuleRegions(
        path=path,
        regions=collector.regions,
        owners=tuple(collector.owners),
        has_code=bool(tree.body),
    )
