"""The static indexer: for one file, its functions, tests, the names each reads, its calls and
its imports, resolved with libcst's scope and qualified-name metadata."""

from __future__ import annotations

import bisect
import functools
import hashlib
import sys
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path, PurePosixPath

import attrs
import libcst as cst
from libcst.metadata import (
    ByteSpanPositionProvider,
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    QualifiedNameSource,
    ScopeProvider,
)

from guard_adapters.pytest.layout import PytestLayout
from guard_adapters.python.regions import ModuleRegions, Region, extract_regions
from guard_adapters.python.test_functions import collected_tests
from guard_core.index_model import FileIndex, FunctionNode, StatementBinding, StatementRead
from guard_core.model import CLASS_BODY, RegionKind

RESOLVED = 0.9  # a name bound by an import or a module-level definition
SELF_METHOD = 0.7  # self.name(): the class's own method, unless a subclass overrides it


INDEX_VERSION = b"guard-index-12\0"  # a new version re-indexes every file once


@functools.cache
def indexer_digest() -> bytes:
    """What a file's index depends on besides its bytes: the interpreter's minor version (what
    parses, the standard library's module names), libcst's version, and the indexer's own code
    (a Guard of another commit may share the server, or have written this graph)."""
    import guard_adapters
    import guard_core

    digest = hashlib.sha256(f"{sys.version_info[:2]}|{version('libcst')}|".encode())
    digest.update(INDEX_VERSION)
    roots = (Path(guard_adapters.__file__).parent, Path(guard_core.__file__).parent)
    for source in sorted(p for root in roots for p in root.rglob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.digest()


def content_sha(data: bytes) -> str:
    """The sha a graph keeps for a file's index: another indexer re-indexes the file."""
    return hashlib.sha1(indexer_digest() + data, usedforsecurity=False).hexdigest()


@attrs.frozen
class RawIndex:
    """One file's index before cross-file resolution (dotted call targets, not ids)."""

    file: FileIndex
    calls: dict[str, dict[str, float]]  # caller id -> {dotted target: confidence}
    imports: tuple[str, ...]  # dotted module names
    dotted: dict[str, str]  # dotted name -> function id, for this file's functions
    aliases: tuple[tuple[str, str], ...] = ()


def _resolve(name: str, module: str | None, package: str | None) -> str | None:
    if "<locals>" in name:
        return None
    if name.startswith("."):
        dots = len(name) - len(name.lstrip("."))
        base = (package or "").split(".") if package else []
        if dots > 1:
            base = base[: len(base) - (dots - 1)] if len(base) >= dots - 1 else []
        rest = name.lstrip(".")
        return ".".join([*base, rest] if rest else base) or None
    return name


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
                resolved = _resolve(q.name, self.module, self.package)
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
        target = _resolve(rel + base, self.module, self.package) if rel else base
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


def _star_reads(visitor: _RefVisitor, regions: ModuleRegions) -> dict[str, set[str]]:
    """What each region may read through the file's star imports (added to its refs and to
    its statements' reads): ``m.name`` for each name it reads that the file binds by no
    definition of its own (and ``module.name``: a package's submodule, a name set from
    elsewhere). A name the file binds before the star import is re-exported from ``m`` under
    the file's own name, which the aliases follow."""
    out: dict[str, set[str]] = defaultdict(set)
    if not visitor.star_sources:
        return out
    sources = sorted({*visitor.star_sources, *([visitor.module] if visitor.module else [])})
    for r in regions.regions.values():
        if "*" in r.attributes:  # globals()[name], vars(): any name a star import bound
            out[r.id] = {f"{m}.*" for m in visitor.star_sources}
            for i, stmt in enumerate(r.bindings if r.kind is not RegionKind.FUNCTION else ()):
                if not stmt.imports:
                    visitor.stmt_refs[r.id].update(
                        StatementRead(i, f"{m}.*") for m in visitor.star_sources
                    )
            continue
        out[r.id] = {f"{m}.{free}" for m in sources for free in visitor.free.get(r.id, ())}
        visitor.stmt_refs[r.id].update(
            StatementRead(i, f"{m}.{free}")
            for i, free in visitor.stmt_free.get(r.id, ())
            for m in sources
        )
    return out


def _read_lines(
    visitor: _RefVisitor, regions: ModuleRegions, region: Region
) -> tuple[tuple[str, frozenset[int]], ...]:
    """A function's reads with the lines that make them: its names (not those a star import
    may bind: they stay without lines) and ".name" for its attribute reads. A read on a line
    the function does not own (its decorators, defaults and annotations run where it is
    defined), and every read of a memo function (a cache hit reads through lines it never
    runs), keep no lines: they apply to every test that ran the function."""
    if region.kind is not RegionKind.FUNCTION or region.memo:
        return ()
    found = {name: frozenset(lines) for name, lines in visitor.ref_lines.get(region.id, {}).items()}
    for attr, spans in region.attribute_spans.items():
        found[f".{attr}"] = frozenset(i for a, b in spans for i in range(a, b + 1))
    return tuple(
        sorted(
            (name, lines)
            for name, lines in found.items()
            if all(regions.owner(line) == region.id for line in lines)
        )
    )


def index_file(
    path: str, data: bytes, module: str | None, layout: PytestLayout, is_test: bool
) -> RawIndex:
    """Index one file; a file that does not parse is recorded with its error and no code."""
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
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return RawIndex(FileIndex(path=path, sha=sha, module=module, parse_error=error), {}, (), {})
    package = (
        module
        if PurePosixPath(path).name == "__init__.py"
        else (module.rpartition(".")[0] if module else None)
    )
    visitor = _RefVisitor(regions, module, package or None, data)
    wrapper.visit(visitor)
    stars = _star_reads(visitor, regions)
    functions = []
    dotted: dict[str, str] = {}
    for r in regions.regions.values():
        bindings = (
            tuple(StatementBinding(tuple(b.names), b.side_effects) for b in r.bindings)
            if r.kind is not RegionKind.FUNCTION
            else ()
        )
        functions.append(
            FunctionNode(
                id=r.id,
                file=path,
                name=r.name,
                qualname=r.qualname,
                start=r.start,
                end=r.end,
                has_dynamic_dispatch=r.dynamic_dispatch,
                refs=tuple(sorted({*visitor.refs.get(r.id, ()), *stars.get(r.id, ())})),
                statement_refs=tuple(
                    sorted(
                        visitor.stmt_refs.get(r.id, ()),
                        key=lambda read: (read.statement, read.name),
                    )
                ),
                bindings=bindings,
                attributes=tuple(sorted(r.attributes)),
                memo=r.memo,
                read_lines=_read_lines(visitor, regions, r),
            )
        )
        if module and r.kind is RegionKind.FUNCTION and "#" not in r.qualname:
            dotted[f"{module}.{r.qualname}"] = r.id
    tests = collected_tests(path, regions, layout) if is_test else ()
    return RawIndex(
        file=FileIndex(path=path, sha=sha, module=module, functions=tuple(functions), tests=tests),
        calls={k: dict(v) for k, v in visitor.calls.items()},
        imports=tuple(sorted(visitor.imports)),
        dotted=dotted,
        aliases=tuple(sorted(visitor.aliases)),
    )
