"""The static indexer: for one file, its functions, tests, the names each reads, its calls and
its imports, resolved through the file's scopes (:mod:`guard_adapters.python.scopes`)."""

from __future__ import annotations

import ast
import functools
import hashlib
import sys
from collections import defaultdict
from pathlib import Path, PurePosixPath
from typing import Protocol

import attrs

from guard_adapters.index.file_reads import FileReads
from guard_adapters.pytest.layout import PytestLayout
from guard_adapters.python.name_walk import NameWalk
from guard_adapters.python.regions import ModuleRegions, Region, extract_regions
from guard_adapters.python.test_functions import collected_tests
from guard_core.index_model import FileIndex, FunctionNode, StatementBinding, StatementRead
from guard_core.model import RegionKind

INDEX_VERSION = b"guard-index-14\0"  # a new version re-indexes every file once


@functools.cache
def indexer_digest() -> bytes:
    """What a file's index depends on besides its bytes: the interpreter's minor version (what
    parses, the builtins, the standard library's module names), and the indexer's own code
    (a Guard of another commit may share the server, or have written this graph)."""
    import guard_adapters
    import guard_core

    digest = hashlib.sha256(f"{sys.version_info[:2]}|".encode())
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


def _star_reads(visitor: Reads, regions: ModuleRegions) -> dict[str, set[str]]:
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
    visitor: Reads, regions: ModuleRegions, region: Region
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
        tree = ast.parse(text, filename=path)
        regions = extract_regions(path, text, tree)
        walk = NameWalk().walk(tree)
        visitor = FileReads(regions, module, package_of(path, module)).read(walk)
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return unparsable(path, sha, module, exc)
    return assemble(path, sha, module, regions, visitor, layout, is_test)


def unparsable(path: str, sha: str, module: str | None, exc: BaseException) -> RawIndex:
    error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return RawIndex(FileIndex(path=path, sha=sha, module=module, parse_error=error), {}, (), {})


def package_of(path: str, module: str | None) -> str | None:
    """The package a file's relative imports climb from."""
    if PurePosixPath(path).name == "__init__.py":
        return module or None
    return (module.rpartition(".")[0] if module else None) or None


class Reads(Protocol):
    """What a file's reads come to (:class:`FileReads`), per region id."""

    refs: dict[str, set[str]]
    ref_lines: dict[str, dict[str, set[int]]]
    stmt_refs: dict[str, set[StatementRead]]
    calls: dict[str, dict[str, float]]
    imports: set[str]
    aliases: set[tuple[str, str]]
    star_sources: set[str]
    module: str | None
    free: dict[str, set[str]]
    stmt_free: dict[str, set[tuple[int, str]]]


def assemble(
    path: str,
    sha: str,
    module: str | None,
    regions: ModuleRegions,
    visitor: Reads,
    layout: PytestLayout,
    is_test: bool,
) -> RawIndex:
    """One file's index from its regions and what they read."""
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
